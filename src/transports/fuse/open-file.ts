/**
 * @module transports/fuse/open-file
 * A file open in the mount, shared by every handle open on the same path (so one process sees
 * what another wrote through the mount before it was flushed, as on a local disk).
 *
 * Content = a stored base (read one chunk at a time, never whole) overlaid with dirty chunks
 * written since the last commit. Writes, truncation and sparse extension only touch the chunks
 * they cover; committing hands the backend one piece per chunk, reusing the hashes of chunks it
 * did not change, and makes ONE new version however many write calls came before.
 *
 * Invariants:
 * - bytes of the base at offsets >= `#keep` are gone (truncated away); they read as zeros if the
 *   file grows again, and so do bytes of a dirty chunk beyond its buffer;
 * - a dirty chunk buffer never holds non-zero bytes beyond the file size;
 * - operations on one open file run one at a time (#exclusive), so a commit sees a stable state.
 */
import type { EntryAttributes } from '../../fs/records.js';
import { CHUNK_SIZE, type ContentPiece } from '../../fs/service.js';
import type { CommitResult, StoredContent } from './backend.js';

const CS = CHUNK_SIZE;

/** Stores a commit (the backend's commit, bound to a path by the caller). */
export type Committer = (
  path: string, pieces: ContentPiece[], attributes: EntryAttributes | undefined, modified: number,
) => Promise<CommitResult>;
/** Loads the content of a committed version (the new base after a commit). */
export type VersionLoader = (path: string, version: number) => Promise<StoredContent>;

export class OpenFile {
  /** Current path (rename moves it; a file unlinked while open keeps its hidden name here). */
  path: string;
  /** Handles open on this file. */
  readonly handles = new Set<number>();
  /** Opened from /.versions: never written or committed. */
  readonly readOnly: boolean;
  /** Unlinked while open: still usable through its handles, never committed. */
  orphan = false;
  /** Another face changed the stored file while this one had nothing to commit: reload before reading. */
  stale = false;
  /** Modification time set by utimens since the last write (recorded by the commit that follows). */
  explicitMtime: number | undefined;
  /** Last local change, ms. */
  mtime: number;
  #base: StoredContent | undefined;
  #keep: number;
  #size: number;
  #dirty = new Map<number, Buffer>();
  #changed: boolean;
  /** Attributes of a file created through the mount, stored with its first commit. */
  #attributes: EntryAttributes | undefined;
  #cached: { index: number; data: Buffer } | undefined;
  #lock: Promise<unknown> = Promise.resolve();

  /** `base` undefined: a file created through the mount, not stored until its first commit. */
  constructor(path: string, base: StoredContent | undefined, opts: { attributes?: EntryAttributes; readOnly?: boolean; mtime: number }) {
    this.path = path;
    this.#base = base;
    this.#size = base?.size ?? 0;
    this.#keep = this.#size;
    this.#changed = base === undefined;
    this.#attributes = opts.attributes;
    this.readOnly = opts.readOnly ?? false;
    this.mtime = opts.mtime;
  }

  get size(): number {
    return this.#size;
  }

  /** Not stored yet (created through the mount, no commit so far). */
  get isNew(): boolean {
    return this.#base === undefined && this.#attributes !== undefined;
  }

  /** Something differs from the stored file (or the file is not stored yet). */
  get changed(): boolean {
    return this.#changed;
  }

  /** Version the unchanged bytes come from (undefined for a new file). */
  get baseVersion(): number | undefined {
    return this.#base?.version;
  }

  /** Mode/owner of a file created through the mount, until its first commit. */
  get pendingAttributes(): EntryAttributes | undefined {
    return this.isNew ? this.#attributes : undefined;
  }

  /** Update the attributes a not-yet-stored file will be created with (chmod/chown before the first commit). */
  setPendingAttributes(changes: EntryAttributes): void {
    this.#attributes = { ...this.#attributes, ...changes };
  }

  read(buf: Buffer, len: number, pos: number, reload: () => Promise<StoredContent | undefined>): Promise<number> {
    return this.#exclusive(async () => {
      if (this.stale && !this.#changed) {
        const fresh = await reload();
        if (fresh) this.#rebase(fresh);
        this.stale = false;
      }
      return this.#readInto(buf, len, pos);
    });
  }

  /** Copies `buf` (fuse-native reuses it after the callback). */
  write(buf: Buffer, len: number, pos: number): Promise<number> {
    return this.#exclusive(async () => {
      const end = pos + len;
      for (let off = pos; off < end;) {
        const i = Math.floor(off / CS);
        const start = i * CS;
        const upto = Math.min(end, start + CS);
        const chunk = await this.#dirtyChunk(i, upto - start);
        buf.copy(chunk, off - start, off - pos, upto - pos);
        off = upto;
      }
      if (end > this.#size) this.#size = end;
      this.#touch();
      return len;
    });
  }

  truncate(size: number): Promise<void> {
    return this.#exclusive(async () => {
      if (size < this.#size) {
        for (const [i, chunk] of this.#dirty) {
          const start = i * CS;
          if (start >= size) this.#dirty.delete(i);
          else if (start + chunk.length > size) chunk.fill(0, size - start);
        }
        this.#keep = Math.min(this.#keep, size);
      }
      this.#size = size;
      this.#touch();
    });
  }

  /**
   * Store the content as one new version if anything changed; afterwards the committed version is
   * the base and nothing is dirty. Returns the commit, or undefined when there was nothing to do.
   */
  commit(store: Committer, loadVersion: VersionLoader): Promise<CommitResult | undefined> {
    return this.#exclusive(async () => {
      if (!this.#changed || this.orphan || this.readOnly) return undefined;
      // The version is stamped with the last write (or utimens), as a local disk would show it.
      const result = await store(this.path, await this.#pieces(), this.#attributes, this.explicitMtime ?? this.mtime);
      this.#rebase(await loadVersion(this.path, result.version));
      this.#attributes = undefined;
      this.explicitMtime = undefined;
      this.stale = false;
      return result;
    });
  }

  /** Take the stored content as the new base when nothing local is pending (another face changed it). */
  refresh(fresh: StoredContent): Promise<void> {
    return this.#exclusive(async () => {
      if (!this.#changed) this.#rebase(fresh);
      this.stale = false;
    });
  }

  /** Copy every stored byte into memory, so the file outlives the removal of its stored content. */
  detach(): Promise<void> {
    return this.#exclusive(async () => {
      const chunks = Math.ceil(this.#size / CS);
      for (let i = 0; i < chunks; i++) {
        if (!this.#dirty.has(i) && i * CS < this.#keep) await this.#dirtyChunk(i, 0);
      }
      this.#base = undefined;
      this.#keep = 0;
      this.#cached = undefined;
    });
  }

  #rebase(base: StoredContent): void {
    this.#base = base;
    this.#size = base.size;
    this.#keep = base.size;
    this.#dirty.clear();
    this.#cached = undefined;
    this.#changed = false;
  }

  #touch(): void {
    this.#changed = true;
    this.mtime = Date.now();
    this.explicitMtime = undefined;
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(fn, fn);
    this.#lock = run.catch(() => undefined);
    return run;
  }

  async #baseChunk(i: number): Promise<Buffer> {
    if (this.#cached?.index === i) return this.#cached.data;
    const data = await this.#base!.load(i);
    this.#cached = { index: i, data };
    return data;
  }

  async #readInto(buf: Buffer, len: number, pos: number): Promise<number> {
    const end = Math.min(pos + len, this.#size);
    if (pos >= end) return 0;
    for (let off = pos; off < end;) {
      const i = Math.floor(off / CS);
      const start = i * CS;
      const upto = Math.min(end, start + CS);
      const at = off - pos;
      const chunk = this.#dirty.get(i);
      let n = 0;
      if (chunk) {
        if (off - start < chunk.length) n = chunk.copy(buf, at, off - start, Math.min(upto - start, chunk.length));
      } else if (off < this.#keep) {
        const data = await this.#baseChunk(i);
        n = data.copy(buf, at, off - start, Math.min(upto, this.#keep) - start);
      }
      if (off + n < upto) buf.fill(0, at + n, at + (upto - off));
      off = upto;
    }
    return end - pos;
  }

  /** The dirty buffer of chunk `i`, at least `need` bytes long, made from the base when first touched. */
  async #dirtyChunk(i: number, need: number): Promise<Buffer> {
    const start = i * CS;
    let chunk = this.#dirty.get(i);
    if (!chunk) {
      const valid = Math.max(0, Math.min(CS, this.#keep - start));
      // Chunk 0 grows as needed (most files are small); a later chunk means a big file: full size at once.
      chunk = Buffer.alloc(i === 0 ? Math.max(need, valid) : CS);
      if (valid > 0) (await this.#baseChunk(i)).copy(chunk, 0, 0, valid);
      this.#dirty.set(i, chunk);
      if (this.#cached?.index === i) this.#cached = undefined;
    }
    if (chunk.length < need) {
      const grown = Buffer.alloc(Math.min(CS, Math.max(need, chunk.length * 2)));
      chunk.copy(grown);
      this.#dirty.set(i, grown);
      chunk = grown;
    }
    return chunk;
  }

  /** One piece per chunk of the current content, for a commit. */
  async #pieces(): Promise<ContentPiece[]> {
    const pieces: ContentPiece[] = [];
    const count = Math.ceil(this.#size / CS);
    for (let i = 0; i < count; i++) {
      const start = i * CS;
      const len = Math.min(CS, this.#size - start);
      const chunk = this.#dirty.get(i);
      if (chunk) {
        pieces.push({ data: chunk.length === len ? chunk : fit(chunk, len) });
        continue;
      }
      const valid = Math.max(0, Math.min(len, this.#keep - start));
      if (valid === 0) {
        pieces.push({ data: Buffer.alloc(len) });
        continue;
      }
      const data = await this.#baseChunk(i);
      // The stored chunk as it is: its hash is known and its bytes need not be stored again.
      if (valid === len && data.length === len) pieces.push({ data, hash: this.#base!.hash(i) });
      else pieces.push({ data: fit(data.subarray(0, valid), len) });
    }
    return pieces;
  }
}

/** `data` cut or zero-extended to `len` bytes. */
function fit(data: Buffer, len: number): Buffer {
  if (data.length >= len) return data.subarray(0, len);
  const out = Buffer.alloc(len);
  data.copy(out);
  return out;
}
