/**
 * @module transports/fuse/open-file
 * A file open in the mount, shared by every handle open on the same path (so one process sees
 * what another wrote through the mount before it was flushed, as on a local disk).
 *
 * Content = a stored base (read one chunk at a time, never whole) overlaid with dirty chunks
 * written since the last commit. Writes, truncation and sparse extension only touch the chunks
 * they cover; committing hands the backend one lazily read piece per chunk, reusing the hashes of
 * chunks it did not change, and makes ONE new version however many write calls came before.
 *
 * Large files stream: at most {@link RESIDENT_DIRTY_CHUNKS} dirty chunks (16 MiB) stay in memory (the most
 * recently written); older ones go to a spool file (created in the backend's spool directory and
 * unlinked at once, so a crash leaves nothing behind) and are read back one at a time. While full
 * chunks are on their way into the store (below), a write waits for them to land instead, so a
 * file written faster than the store takes it is not written to the spool and read back as well.
 *
 * With {@link ChunkHolds} (in process), a full chunk is also stored as soon as it is complete and
 * hashed, with a pending hold; it then leaves memory and the spool (the file reads it back from the
 * store), and the commit takes the hold over, so the close writes only the entry. A held chunk
 * written or truncated again comes back as a dirty chunk and its hold is given up; so are every
 * hold of a file disposed of without a commit.
 *
 * A copy from a stored version (copy_file_range, in process) needs no bytes at all: the chunks it
 * covers are held by reference ({@link OpenFile.cloneFrom}), and a file that ends up a whole copy of
 * one version commits with that version's etag, so a `cp` inside the mount reads, hashes and
 * stores nothing.
 *
 * Invariants:
 * - bytes of the base at offsets >= `#keep` are gone (truncated away); they read as zeros if the
 *   file grows again, and so do bytes of a dirty chunk beyond its buffer;
 * - a dirty chunk buffer never holds non-zero bytes beyond the file size;
 * - operations on one open file run one at a time (#exclusive), so a commit sees a stable state;
 * - a chunk index is in at most one of dirty (memory), spilled (spool) and held (the store);
 * - a hold is stored for bytes only while they are unchanged since they were hashed (the chunk's
 *   `#hashes` entry is still the one the hash came from); one that lands after they changed is given up.
 */
import type { EntryAttributes } from '../../fs/records.js';
import { CHUNK_SIZE } from '../../fs/service.js';
import { Spool } from '../../fs/spool.js';
import { zeroChunkHash, type CommitPiece, type CommitResult, type StoredContent } from './backend.js';
import type { ChunkHasher } from './hasher.js';
import type { ChunkHolds } from './chunk-holds.js';

const CS = CHUNK_SIZE;
/** Dirty chunks an open file keeps in memory; the rest wait in its spool file. */
export const RESIDENT_DIRTY_CHUNKS = 16;
/**
 * Chunks a commit without a running etag may hash on the main thread (the store's commit does it,
 * ~0.5 ms a chunk); a larger content is hashed on the hasher's thread first ({@link hashOffThread}),
 * so editing a large file in place or copying a sparse one does not stall the daemon for seconds.
 */
export const HASHED_ON_MAIN_THREAD = 8;

/**
 * Stores a commit (the backend's commit, bound to a path by the caller). `etag`: the SHA-256 of the
 * whole content when computed while it was written (every piece then carries its hash).
 */
export type Committer = (
  path: string, pieces: CommitPiece[], attributes: EntryAttributes | undefined, modified: number, etag?: string,
) => Promise<CommitResult>;

/** Loads the content of a committed version (the new base after a commit). */
export type VersionLoader = (path: string, version: number) => Promise<StoredContent>;

export class OpenFile {
  /** Current path ({@link moveTo} on a rename; a file unlinked while open keeps its hidden name here). */
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
  /** Bytes at the start of the base nothing has written over or truncated since (all of it: an append). */
  #intact: number;
  #keep: number;
  #size: number;
  /** Dirty chunks in memory, least recently written first. */
  #dirty = new Map<number, Buffer>();
  /** Dirty chunks written out to the spool: index → bytes held there. */
  #spilled = new Map<number, number>();
  readonly #spool: Spool | undefined;
  readonly #resident: number;
  #changed: boolean;
  /** Attributes of a file created through the mount, stored with its first commit. */
  #attributes: EntryAttributes | undefined;
  #cached: { index: number; data: Buffer } | undefined;
  /** Where the last read ended: a read starting there (or at 0) is taken as sequential. */
  #readEnd = -1;
  #lock: Promise<unknown> = Promise.resolve();
  readonly #hasher: ChunkHasher | undefined;
  /** SHA-256 of full chunks as they are now, computed by the hasher since they were last written. */
  #hashes = new Map<number, Promise<string | undefined>>();
  /**
   * The running etag: the hasher has been fed chunks `[0, next)` as they are now. Undefined: none
   * yet (the next completed chunk 0 starts one); null: broken (a fed chunk changed) until the
   * content is replaced (commit, truncation to zero).
   */
  #stream: { id: number; next: number } | null | undefined;
  readonly #holds: ChunkHolds | undefined;
  /** Full chunks stored ahead of the commit, each with a hold of this file: index → hash. */
  #held = new Map<number, string>();
  /** Early stores and hold releases under way (a commit or dispose waits for them). */
  readonly #storing = new Set<Promise<void>>();
  /** Holds taken, waiting to be adopted by the next operation (or given up if the chunk changed). */
  #landed: { index: number; token: Promise<string | undefined>; hash: string }[] = [];
  /**
   * Chunks `[0, upto)` are those of `source`, cloned and unchanged since: when `upto` reaches the
   * end of both, the content is `source`'s and so is its etag. Undefined once anything else writes.
   */
  #clone: { source: StoredContent; upto: number } | undefined;
  #disposed = false;
  /** Reused buffer for spooled chunks read back by an early store. */
  #scratch: Buffer | undefined;

  /** `base` undefined: a file created through the mount, not stored until its first commit. */
  /** Without `spoolDir` every dirty chunk stays in memory. */
  constructor(
    path: string, base: StoredContent | undefined,
    opts: {
      attributes?: EntryAttributes; readOnly?: boolean; mtime: number; spoolDir?: string | undefined;
      /** Dirty chunks kept in memory (default {@link RESIDENT_DIRTY_CHUNKS}). */
      residentChunks?: number;
      /** Hashes completed chunks and the running etag off the main thread (none: the commit hashes). */
      hasher?: ChunkHasher | undefined;
      /** Stores hashed full chunks while the file is written (needs `hasher`; none: the commit stores them). */
      holds?: ChunkHolds | undefined;
    },
  ) {
    this.#hasher = opts.hasher;
    this.#holds = opts.hasher ? opts.holds : undefined;
    this.path = path;
    this.#resident = Math.max(1, opts.residentChunks ?? RESIDENT_DIRTY_CHUNKS);
    this.#spool = opts.spoolDir === undefined ? undefined : new Spool(opts.spoolDir);
    this.#base = base;
    this.#size = base?.size ?? 0;
    this.#keep = this.#size;
    this.#intact = this.#size;
    this.#changed = base === undefined;
    this.#attributes = opts.attributes;
    this.readOnly = opts.readOnly ?? false;
    this.mtime = opts.mtime;
  }

  get size(): number {
    return this.#size;
  }

  /** Bytes of written chunks held in memory (the spool holds the rest). */
  get residentBytes(): number {
    let n = 0;
    for (const chunk of this.#dirty.values()) n += chunk.length;
    return n;
  }

  /** Written chunks already stored, held until the commit. */
  get heldChunks(): number {
    return this.#held.size;
  }

  /** Written chunks waiting in the spool file. */
  get spilledChunks(): number {
    return this.#spilled.size;
  }

  /** The file (or a directory above it) was renamed in the store: it is at `path` now. */
  moveTo(path: string): void {
    this.path = path;
    this.#base?.moved?.(path);
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
      await this.#current(reload);
      return this.#readInto(buf, len, pos);
    });
  }

  /**
   * lseek's SEEK_DATA (`hole` false) or SEEK_HOLE (true) from `offset`, a chunk at a time. A hole
   * is a stored chunk of zeros (what a sparse extension stores) or a whole chunk past what is kept
   * of the base, unless written since; everything else is data, and the end of the file is a hole.
   * Undefined: ENXIO (`offset` at or past the end, or no data after it).
   */
  seek(offset: number, hole: boolean, reload: () => Promise<StoredContent | undefined>): Promise<number | undefined> {
    return this.#exclusive(async () => {
      await this.#current(reload);
      if (offset < 0 || offset >= this.#size) return undefined;
      const zero = zeroChunkHash();
      const chunks = Math.ceil(this.#size / CS);
      for (let i = Math.floor(offset / CS); i < chunks; i++) {
        if (this.#isHole(i, zero) === hole) return Math.max(offset, i * CS);
      }
      return hole ? this.#size : undefined;
    });
  }

  /**
   * Bytes that are data, as the committed file will count them ({@link NodeInfo.allocated}): the
   * size less the whole chunks that are holes ({@link seek}'s holes; a last, partial chunk counts as
   * data, since only a whole chunk of zeros is stored as one). So a file grown sparse while open
   * shows its holes as free (`du`, `st_blocks`) before its commit as after it.
   */
  get allocated(): number {
    const zero = zeroChunkHash();
    const whole = Math.floor(this.#size / CS);
    let holes = 0;
    for (let i = 0; i < whole; i++) if (this.#isHole(i, zero)) holes++;
    return this.#size - holes * CS;
  }

  /** Another face changed the stored file and nothing here is pending: take its content first. */
  async #current(reload: () => Promise<StoredContent | undefined>): Promise<void> {
    if (this.stale && !this.#changed) {
      const fresh = await reload();
      if (fresh) await this.#rebase(fresh);
      this.stale = false;
    }
  }

  /** Whether chunk `i` is a hole for {@link seek} (`zero`: the hash of a chunk of zeros). */
  #isHole(i: number, zero: string): boolean {
    if (this.#dirty.has(i) || this.#spilled.has(i)) return false;
    const held = this.#held.get(i);
    if (held !== undefined) return held === zero;
    const start = i * CS;
    if (start >= this.#keep) return true;
    // Partly kept (then cut, or grown past its stored end): data, whatever its bytes.
    if (start + CS > this.#keep) return false;
    return this.#base?.hash(i) === zero;
  }

  /**
   * Copies `buf` (fuse-native reuses it after the callback). `append` (O_APPEND): at the end as it
   * is now, whatever size the kernel placed the write at; called with true when that is elsewhere.
   */
  write(buf: Buffer, len: number, pos: number, reload?: () => Promise<StoredContent | undefined>, append?: (moved: boolean) => void): Promise<number> {
    return this.#exclusive(async () => {
      // Another face rewrote the file while this one had nothing pending: write onto that.
      if (reload) await this.#current(reload);
      if (append) {
        append(pos !== this.#size);
        pos = this.#size;
      }
      await this.#awaitLanding();
      this.#clone = undefined;
      this.#intact = Math.min(this.#intact, pos);
      const end = pos + len;
      for (let off = pos; off < end;) {
        const i = Math.floor(off / CS);
        const start = i * CS;
        const upto = Math.min(end, start + CS);
        // A write over the whole chunk needs neither zeros nor the chunk's earlier bytes first.
        const chunk = await this.#dirtyChunk(i, upto - start, off === start && upto - start === CS);
        this.#mutated(i);
        buf.copy(chunk, off - start, off - pos, upto - pos);
        // A write reaching a chunk's end usually completes it: hash it now, off the main thread.
        if (upto - start === CS) this.#completed(i, chunk);
        off = upto;
        await this.#evict();
      }
      if (end > this.#size) this.#size = end;
      this.#touch();
      return len;
    });
  }

  truncate(size: number, reload?: () => Promise<StoredContent | undefined>): Promise<void> {
    return this.#exclusive(async () => {
      if (reload) await this.#current(reload);
      if (size !== this.#size) this.#clone = undefined;
      this.#intact = Math.min(this.#intact, size);
      if (size < this.#size) {
        for (const i of [...this.#hashes.keys()]) if ((i + 1) * CS > size) this.#mutated(i);
        if (this.#stream && this.#stream.next * CS > size) this.#breakStream();
        // Nothing is left of what the running etag covered: a new one may start.
        if (size === 0) this.#stream = undefined;
        const dropped: string[] = [];
        for (const [i, hash] of [...this.#held]) {
          const start = i * CS;
          if (start >= size) {
            this.#held.delete(i);
            dropped.push(hash);
          } else if (start + CS > size) {
            await this.#dirtyChunk(i, 0);
          }
        }
        this.#release(dropped);
        for (const [i, len] of [...this.#spilled]) {
          const start = i * CS;
          if (start >= size) this.#spilled.delete(i);
          else if (start + len > size) await this.#dirtyChunk(i, 0);
        }
        for (const [i, chunk] of this.#dirty) {
          const start = i * CS;
          if (start >= size) this.#forget(i);
          else if (start + chunk.length > size) chunk.fill(0, size - start);
        }
        this.#keep = Math.min(this.#keep, size);
      }
      this.#size = size;
      this.#touch();
      await this.#evict();
    });
  }

  /**
   * Store the content as one new version if anything changed; afterwards the committed version is
   * the base and nothing is dirty. Returns the commit, or undefined when there was nothing to do.
   */
  commit(store: Committer, loadVersion: VersionLoader): Promise<CommitResult | undefined> {
    return this.#exclusive(async () => {
      if (!this.#changed || this.orphan || this.readOnly) return undefined;
      await this.#settleStores();
      const pieces = this.#pieces();
      const hasher = this.#hasher;
      const etag = await this.#knownHashes(pieces)
        ?? (hasher && pieces.length > HASHED_ON_MAIN_THREAD ? await this.#appendedEtag(pieces, hasher) ?? await hashOffThread(pieces, hasher) : undefined);
      // The version is stamped with the last write (or utimens), as a local disk would show it.
      const result = await store(this.path, pieces, this.#attributes, this.explicitMtime ?? this.mtime, etag);
      // The new version took every hold over.
      this.#held.clear();
      await this.#rebase(await loadVersion(this.path, result.version));
      this.#attributes = undefined;
      this.explicitMtime = undefined;
      this.stale = false;
      return result;
    });
  }

  /** Take the stored content as the new base when nothing local is pending (another face changed it). */
  refresh(fresh: StoredContent): Promise<void> {
    return this.#exclusive(async () => {
      if (!this.#changed) await this.#rebase(fresh);
      this.stale = false;
    });
  }

  /**
   * The stored version this file's content is, when nothing changed it since it was opened or
   * last committed; undefined otherwise (written, truncated, unlinked, or changed by another face).
   */
  storedContent(): Promise<StoredContent | undefined> {
    return this.#exclusive(async () => {
      const base = this.#base;
      const clean = !this.#changed && !this.stale && !this.orphan && base !== undefined && this.#size === base.size
        && this.#keep === base.size && this.#dirty.size === 0 && this.#spilled.size === 0 && this.#held.size === 0;
      return clean ? base : undefined;
    });
  }

  /**
   * Copy bytes `[from, from + bytes)` of `source` (a stored version) to the same offsets here
   * without reading them: each chunk is held by reference for this file, as an early store's is,
   * and the commit takes the holds over. Only where this file ends at `from`, a chunk boundary (a
   * `cp` copies into a new file from the start, and each call goes on where the last one ended).
   * Copies whole chunks, or up to the source's end; returns the bytes copied, 0 when it cannot
   * (out of process, a chunk whose hash is not known, one no longer stored): the caller then
   * copies bytes.
   */
  cloneFrom(source: StoredContent, from: number, bytes: number): Promise<number> {
    return this.#exclusive(async () => {
      const holds = this.#holds;
      // Not onto content another face replaced meanwhile (the caller's write takes that first).
      if (!holds || this.readOnly || this.orphan || (this.stale && !this.#changed) || from % CS !== 0 || this.#size !== from || from >= source.size) return 0;
      let end = Math.min(source.size, from + bytes);
      // A partial last chunk only at the source's end, so the next call starts at a boundary.
      if (end < source.size) end -= end % CS;
      const hashes: string[] = [];
      for (let i = from / CS; i * CS < end; i++) {
        const hash = source.hash(i);
        if (hash === undefined) return 0;
        hashes.push(hash);
      }
      if (hashes.length === 0) return 0;
      const held = await Promise.all(hashes.map((hash) => holds.hold(hash)));
      if (held.includes(false)) {
        this.#release(hashes.filter((_, k) => held[k]));
        return 0;
      }
      const clone = this.#clone;
      this.#clone = from === 0 ? { source, upto: end } : clone?.source === source && clone.upto === from ? { source, upto: end } : undefined;
      hashes.forEach((hash, k) => this.#held.set(from / CS + k, hash));
      this.#size = end;
      this.#touch();
      return end - from;
    });
  }

  /** Copy every stored byte into memory, so the file outlives the removal of its stored content. */
  detach(): Promise<void> {
    return this.#exclusive(async () => {
      const chunks = Math.ceil(this.#size / CS);
      for (let i = 0; i < chunks; i++) {
        if (!this.#dirty.has(i) && !this.#spilled.has(i) && !this.#held.has(i) && i * CS < this.#keep) {
          await this.#dirtyChunk(i, 0);
          await this.#evict();
        }
      }
      this.#base = undefined;
      this.#keep = 0;
      this.#intact = 0;
      this.#cached = undefined;
    });
  }

  /**
   * Another face is removing the stored file, in a transaction under way, whose version is
   * `current`: the chunks this file still reads from the store (from its base, or from `current`
   * when it has yet to take another face's rewrite), which that transaction holds for it (FsService's
   * ContentKeeper). `adopt` runs once it is committed, with which could be held: the file then reads
   * those chunks through its holds, given up when it is disposed of, as chunks stored ahead of a
   * commit are. Undefined: nothing to keep (no stored base, or nothing of it read from the store;
   * inline content stays with its record, in memory).
   */
  keepFrom(current: StoredContent): { hashes: string[]; adopt: (held: boolean[]) => Promise<void> } | undefined {
    if (!this.#holds || this.readOnly) return undefined;
    const rewritten = this.stale && !this.#changed;
    const base = rewritten ? current : this.#base;
    if (!base) return undefined;
    const kept = rewritten ? base.size : this.#keep;
    const indices: number[] = [];
    const hashes: string[] = [];
    for (let i = 0; i * CS < kept; i++) {
      if (!rewritten && (this.#dirty.has(i) || this.#spilled.has(i) || this.#held.has(i))) continue;
      const hash = base.hash(i);
      if (hash === undefined) continue;
      indices.push(i);
      hashes.push(hash);
    }
    if (hashes.length === 0 && !rewritten) return undefined;
    const adopt = (held: boolean[]) => this.#exclusive(async () => {
      if (rewritten && this.stale && !this.#changed) {
        await this.#rebase(base);
        this.stale = false;
      }
      const release: string[] = [];
      for (const [k, i] of indices.entries()) {
        const hash = hashes[k]!;
        if (!held[k]) continue;
        // Still read from that base (not written, truncated or replaced since): read through the hold.
        const unchanged = !this.#disposed && this.#base === base && !this.#dirty.has(i) && !this.#spilled.has(i) && !this.#held.has(i);
        if (unchanged && Math.min((i + 1) * CS, base.size) <= this.#keep) {
          this.#held.set(i, hash);
          if (this.#cached?.index === i) this.#cached = undefined;
          continue;
        }
        // Partly kept (truncated within it): its kept bytes are copied while the hold keeps them.
        if (unchanged && i * CS < this.#keep) await this.#dirtyChunk(i, 0);
        release.push(hash);
      }
      this.#release(release);
      await this.#evict();
    });
    return { hashes, adopt };
  }

  async #rebase(base: StoredContent): Promise<void> {
    this.#base = base;
    this.#size = base.size;
    this.#keep = base.size;
    this.#intact = base.size;
    this.#forgetAll();
    this.#spilled.clear();
    this.#cached = undefined;
    this.#changed = false;
    this.#hashes.clear();
    this.#breakStream();
    this.#stream = undefined;
    this.#clone = undefined;
    this.#release([...this.#held.values()]);
    this.#held.clear();
    await this.#spool?.close();
  }

  /** Drop what the file holds (no handle is left and nothing will be committed). */
  dispose(): Promise<void> {
    return this.#exclusive(async () => {
      this.#disposed = true;
      // Holds taken for this file are given up: its chunks go unless something else references them.
      this.#hashes.clear();
      await this.#settleStores();
      this.#release([...this.#held.values()]);
      this.#held.clear();
      await this.#settleStores();
      this.#forgetAll();
      this.#spilled.clear();
      this.#hashes.clear();
      this.#breakStream();
      await this.#spool?.close();
    });
  }

  /** Wait for the chunks being stored ahead of the commit, and take their holds (tests, diagnostics). */
  storesSettled(): Promise<void> {
    return this.#exclusive(() => this.#settleStores());
  }

  /** Chunks whose hash is being or has been computed while written (tests, diagnostics). */
  get hashedChunks(): number {
    return this.#hashes.size;
  }

  /** Chunks the running etag covers (0 when there is none). */
  get etagCoverage(): number {
    return this.#stream?.next ?? 0;
  }

  /** Chunk `i` is about to change: its hash and any running etag that covers it are stale. */
  #mutated(i: number): void {
    this.#hashes.delete(i);
    if (this.#stream && i < this.#stream.next) this.#breakStream();
  }

  #breakStream(): void {
    if (this.#stream) this.#hasher?.drop(this.#stream.id);
    this.#stream = null;
  }

  /** Chunk `i` (a full chunk) was written up to its end: hash it, and extend the running etag if it is next. */
  #completed(i: number, chunk: Buffer): void {
    const hasher = this.#hasher;
    if (!hasher || chunk.length !== CS) return;
    if (this.#stream === undefined && i === 0) this.#stream = { id: hasher.openStream(), next: 0 };
    let stream: number | undefined;
    if (this.#stream && this.#stream.next === i) {
      stream = this.#stream.id;
      this.#stream.next++;
    }
    const token = hasher.chunk(chunk, stream);
    this.#hashes.set(i, token);
    if (this.#holds) this.#storeEarly(i, token, this.#holds);
  }

  /** Store full chunk `i` once hashed, with a hold, if it is still as hashed (see the module note). */
  #storeEarly(i: number, token: Promise<string | undefined>, holds: ChunkHolds): void {
    const job = token.then(async (hash) => {
      if (hash === undefined || this.#hashes.get(i) !== token) return;
      const held = await holds.hold(hash, () => (this.#hashes.get(i) === token ? this.#bytesOf(i) : undefined));
      if (held) this.#landed.push({ index: i, token, hash });
    });
    this.#track(job);
  }

  #track(job: Promise<void>): void {
    const tracked = job.catch(() => undefined).finally(() => this.#storing.delete(tracked));
    this.#storing.add(tracked);
  }

  /** Give up holds (batched with the early stores). */
  #release(hashes: string[]): void {
    if (hashes.length > 0) this.#track(this.#holds!.release(hashes));
  }

  /** Wait for every early store and release under way, and adopt what landed. */
  async #settleStores(): Promise<void> {
    while (this.#storing.size > 0) await Promise.all([...this.#storing]);
    this.#adopt();
  }

  /**
   * Take the holds that landed: a chunk still as hashed leaves memory and the spool (the store has
   * it); one that changed since, or a file disposed of, gives its hold up.
   */
  #adopt(): void {
    if (this.#landed.length === 0) return;
    const landed = this.#landed;
    this.#landed = [];
    const stale: string[] = [];
    for (const { index, token, hash } of landed) {
      if (this.#disposed || this.#hashes.get(index) !== token || this.#held.has(index)) {
        stale.push(hash);
        continue;
      }
      this.#held.set(index, hash);
      this.#forget(index);
      this.#spilled.delete(index);
    }
    this.#release(stale);
  }

  /** The current bytes of full chunk `i` when in memory or the spool (a reused buffer for the latter). */
  #bytesOf(i: number): Uint8Array | undefined {
    const chunk = this.#dirty.get(i);
    if (chunk) return chunk.length === CS ? chunk : undefined;
    const spilled = this.#spilled.get(i);
    if (spilled !== CS) return undefined;
    return this.#spool!.readSync(i, CS, (this.#scratch ??= Buffer.allocUnsafeSlow(CS)));
  }

  /**
   * Fill in the hashes computed while writing, and return the etag when the running etag covers
   * every full chunk and the last partial one is in memory (then every piece has its hash).
   */
  async #knownHashes(pieces: CommitPiece[]): Promise<string | undefined> {
    const clone = this.#clone;
    if (clone && clone.upto === this.#size && clone.upto === clone.source.size) {
      // A whole copy of one version, unchanged since: every piece is a held chunk, with its hash.
      this.#breakStream();
      return clone.source.etag;
    }
    for (const [i, hash] of this.#hashes) {
      const piece = pieces[i];
      if (piece && piece.size === CS && piece.hash === undefined) piece.hash = await hash;
    }
    const stream = this.#stream;
    const hasher = this.#hasher;
    if (!stream || !hasher || this.#size === 0) return undefined;
    const full = Math.floor(this.#size / CS);
    const tailLength = this.#size - full * CS;
    const tail = tailLength > 0 ? this.#dirty.get(full) : undefined;
    if (stream.next !== full || (tailLength > 0 && !tail) || pieces.some((p, i) => i < full && p.hash === undefined)) {
      this.#breakStream();
      return undefined;
    }
    this.#stream = null;
    const done = await hasher.finish(stream.id, tail && fit(tail, tailLength));
    if (!done) return undefined;
    if (tailLength > 0) {
      if (done.tail === undefined) return undefined;
      pieces[full]!.hash = done.tail;
    }
    return done.etag;
  }

  /**
   * The etag of a content that only appends to its stored base, resumed from the base's etag where
   * the hasher still keeps that state ({@link ChunkHasher.resume}): only the appended bytes are
   * hashed. Undefined otherwise (the caller hashes it all).
   */
  async #appendedEtag(pieces: CommitPiece[], hasher: ChunkHasher): Promise<string | undefined> {
    const base = this.#base;
    if (!base || base.size === 0 || this.#intact < base.size || this.#size < base.size) return undefined;
    const stream = await hasher.resume(base.etag);
    return stream === undefined ? undefined : hashOffThread(pieces, hasher, { stream, from: base.size });
  }

  /**
   * Backpressure for a file written faster than its full chunks reach the store: while as many
   * chunks as may stay in memory are dirty and early stores are under way, wait for those to land
   * (and leave memory) before taking more bytes, rather than write chunks that are already on their
   * way into the store out to the spool and read them back for it. Called at the start of a write,
   * where adopting what landed is safe (nothing of the operation is under way yet).
   */
  async #awaitLanding(): Promise<void> {
    while (this.#dirty.size >= this.#resident && this.#storing.size > 0) {
      await Promise.race(this.#storing);
      this.#adopt();
    }
  }

  /** Write the least recently written chunks out to the spool while too many are in memory. */
  async #evict(): Promise<void> {
    if (!this.#spool) return;
    while (this.#dirty.size > this.#resident) {
      const [i, chunk] = this.#dirty.entries().next().value as [number, Buffer];
      await this.#spool.write(i, chunk);
      this.#forget(i);
      this.#spilled.set(i, chunk.length);
    }
  }

  #touch(): void {
    this.#changed = true;
    this.mtime = Date.now();
    this.explicitMtime = undefined;
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    // Early stores that landed since the last operation are adopted first, never in the middle of one.
    const step = () => {
      this.#adopt();
      return fn();
    };
    const run = this.#lock.then(step, step);
    this.#lock = run.catch(() => undefined);
    return run;
  }

  /**
   * Bytes `[from, to)` of stored chunk `i` copied into `target` at `at`: how many. A base that
   * copies ranges is read for just those bytes. Otherwise (a remote store) a read that does not
   * follow the last one fetches just its bytes when the base can, and anything else loads the whole
   * chunk, kept for the reads that follow (a sequential reader's next ones).
   */
  async #baseRange(i: number, from: number, to: number, target: Buffer, at: number, sequential = true): Promise<number> {
    const base = this.#base!;
    if (base.loadRange) return base.loadRange(i, from, to, target, at);
    if (this.#cached?.index !== i && !sequential && base.fetchRange) return (await base.fetchRange(i, from, to)).copy(target, at);
    if (this.#cached?.index !== i) this.#cached = { index: i, data: await base.load(i) };
    return this.#cached.data.copy(target, at, from, to);
  }

  async #readInto(buf: Buffer, len: number, pos: number): Promise<number> {
    const end = Math.min(pos + len, this.#size);
    if (pos >= end) return 0;
    const sequential = pos === 0 || pos === this.#readEnd;
    this.#readEnd = end;
    for (let off = pos; off < end;) {
      const i = Math.floor(off / CS);
      const start = i * CS;
      const upto = Math.min(end, start + CS);
      const at = off - pos;
      const chunk = this.#dirty.get(i);
      const spilled = this.#spilled.get(i);
      const held = this.#held.get(i);
      let n = 0;
      if (held !== undefined) {
        n = this.#holds!.loadRange(held, off - start, upto - start, buf, at);
      } else if (!chunk && spilled !== undefined) {
        // Only the bytes asked for, straight from the spool.
        const want = Math.min(upto - start, spilled) - (off - start);
        if (want > 0) n = await this.#spool!.readInto(i, off - start, buf, at, want);
      } else if (chunk) {
        if (off - start < chunk.length) n = chunk.copy(buf, at, off - start, Math.min(upto - start, chunk.length));
      } else if (off < this.#keep) {
        n = await this.#baseRange(i, off - start, Math.min(upto, this.#keep) - start, buf, at, sequential || off > pos);
      }
      if (off + n < upto) buf.fill(0, at + n, at + (upto - off));
      off = upto;
    }
    return end - pos;
  }

  /** The dirty buffer of chunk `i`, at least `need` bytes long, made from the base when first touched. */
  async #dirtyChunk(i: number, need: number, overwritten = false): Promise<Buffer> {
    const start = i * CS;
    let chunk = this.#dirty.get(i);
    if (chunk) {
      // Most recently written last: eviction takes the front.
      this.#dirty.delete(i);
      this.#dirty.set(i, chunk);
    }
    const spilled = this.#spilled.get(i);
    if (!chunk && spilled !== undefined) {
      chunk = await this.#spool!.read(i, spilled);
      this.#spilled.delete(i);
      this.#dirty.set(i, chunk);
    }
    const held = this.#held.get(i);
    if (!chunk && held !== undefined) {
      // Written again: back into memory, and the stored copy's hold is given up.
      chunk = this.#alloc(CS, !overwritten);
      if (!overwritten) this.#holds!.loadRange(held, 0, CS, chunk, 0);
      this.#held.delete(i);
      this.#dirty.set(i, chunk);
      this.#release([held]);
    }
    if (!chunk) {
      const valid = overwritten ? 0 : Math.max(0, Math.min(CS, this.#keep - start));
      // Chunk 0 grows as needed (most files are small); a later chunk means a big file: full size at once.
      chunk = this.#alloc(i === 0 ? Math.max(need, valid) : CS, !overwritten);
      if (valid > 0) await this.#baseRange(i, 0, valid, chunk, 0);
      this.#dirty.set(i, chunk);
      if (this.#cached?.index === i) this.#cached = undefined;
    }
    if (chunk.length < need) {
      const grown = this.#alloc(Math.min(CS, Math.max(need, chunk.length * 2)));
      chunk.copy(grown);
      this.#dirty.set(i, grown);
      chunk = grown;
    }
    return chunk;
  }

  /**
   * A chunk buffer, zeroed unless the caller writes every byte of it at once: a full one is shared
   * with the hasher's thread (handing it over copies nothing).
   */
  #alloc(size: number, zeroed = true): Buffer {
    if (size === CS && this.#hasher) return this.#hasher.acquire(zeroed);
    return zeroed ? Buffer.alloc(size) : Buffer.allocUnsafeSlow(size);
  }

  /** Drop dirty chunk `i` from memory (its buffer may be reused). */
  #forget(i: number): void {
    const chunk = this.#dirty.get(i);
    if (!chunk) return;
    this.#dirty.delete(i);
    this.#hasher?.release(chunk);
  }

  #forgetAll(): void {
    for (const i of [...this.#dirty.keys()]) this.#forget(i);
  }

  /** One lazily read piece per chunk of the current content, for a commit (nothing is loaded here). */
  #pieces(): CommitPiece[] {
    const pieces: CommitPiece[] = [];
    const count = Math.ceil(this.#size / CS);
    const base = this.#base;
    const spool = this.#spool;
    // Spooled chunks are read back synchronously into this one buffer (see CommitPiece.readSync).
    let scratch: Buffer | undefined;
    for (let i = 0; i < count; i++) {
      const start = i * CS;
      const len = Math.min(CS, this.#size - start);
      const held = this.#held.get(i);
      if (held !== undefined) {
        const load = () => this.#holds!.load(held);
        pieces.push({ size: len, hash: held, held: true, read: async () => load(), readSync: load });
        continue;
      }
      const chunk = this.#dirty.get(i);
      if (chunk) {
        const data = fit(chunk, len);
        pieces.push({ size: len, read: async () => data, readSync: () => data });
        continue;
      }
      const spilled = this.#spilled.get(i);
      if (spilled !== undefined) {
        pieces.push({
          size: len,
          read: async () => fit(await spool!.read(i, Math.min(spilled, len)), len),
          readSync: () => fit(spool!.readSync(i, Math.min(spilled, len), (scratch ??= Buffer.allocUnsafeSlow(CS))), len),
        });
        continue;
      }
      const valid = Math.max(0, Math.min(len, this.#keep - start));
      if (valid === 0) {
        // A hole (sparse extension): a whole chunk of it is the zero chunk, its hash known.
        const zeros = len === CS ? zeroChunk() : Buffer.alloc(len);
        pieces.push({ size: len, hash: len === CS ? zeroChunkHash() : undefined, read: async () => zeros, readSync: () => zeros });
        continue;
      }
      const cut = (data: Buffer) => (valid === len && data.length === len ? data : fit(data.subarray(0, valid), len));
      const loadSync = base!.loadSync?.bind(base);
      pieces.push({
        size: len,
        // The stored chunk as it is: its hash is known and its bytes need not be stored again.
        hash: valid === len && Math.min(base!.size, start + CS) - start === len ? base!.hash(i) : undefined,
        read: async () => cut(await base!.load(i)),
        readSync: loadSync && (() => cut(loadSync(i))),
      });
    }
    return pieces;
  }
}

/**
 * The etag of `pieces` and every piece's hash, computed on `hasher`'s thread: the main thread only
 * reads each piece and hands a copy over, a few in flight at a time. With `resumed`, the running
 * etag `stream` already holds the content's first `from` bytes (the unchanged stored content a
 * file was appended to), so only what follows is fed to it. Undefined when the hasher fails (the
 * commit then hashes as before).
 */
async function hashOffThread(
  pieces: CommitPiece[], hasher: ChunkHasher, resumed?: { stream: number; from: number },
): Promise<string | undefined> {
  const stream = resumed?.stream ?? hasher.openStream();
  const from = resumed?.from ?? 0;
  const inFlight: Promise<boolean>[] = [];
  // Each piece is handed over as a private copy at once (its bytes may be in a buffer the next
  // read reuses); a piece whose hash is known (stored, held, a hole) only extends the etag.
  const hashed = (piece: CommitPiece, hash: Promise<string | undefined>) => hash.then((h) => {
    if (h !== undefined) piece.hash = h;
    return h !== undefined;
  });
  let ok = true;
  let start = 0;
  for (const piece of pieces) {
    const end = start + piece.size;
    if (end > from || piece.hash === undefined) {
      const data = piece.readSync ? piece.readSync() : await piece.read();
      if (start >= from) {
        inFlight.push(piece.hash === undefined ? hashed(piece, hasher.chunk(data, stream)) : hasher.feed(data, stream));
      } else {
        if (piece.hash === undefined) inFlight.push(hashed(piece, hasher.chunk(data)));
        if (end > from) inFlight.push(hasher.feed(data.subarray(from - start), stream));
      }
      while (inFlight.length >= 4 && ok) ok = await inFlight.shift()!;
    }
    start = end;
    if (!ok) break;
  }
  ok = (await Promise.all(inFlight)).every(Boolean) && ok;
  if (!ok) {
    hasher.drop(stream);
    return undefined;
  }
  return (await hasher.finish(stream))?.etag;
}

let zeros: Buffer | undefined;

/** One chunk of zeros, shared by every hole of every commit (never written to). */
function zeroChunk(): Buffer {
  return (zeros ??= Buffer.alloc(CS));
}

/** `data` cut or zero-extended to `len` bytes. */
function fit(data: Buffer, len: number): Buffer {
  if (data.length >= len) return data.subarray(0, len);
  const out = Buffer.alloc(len);
  data.copy(out);
  return out;
}
