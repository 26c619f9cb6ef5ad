/**
 * @module transports/fuse/local
 * The in-process FUSE backend: the daemon's own FsService, called directly (no RPC hop). Content is
 * read one chunk at a time by hash from the chunk store, and an open file is committed as one
 * version with writeChunks(), reusing the hashes of the chunks it did not change. Its changes are
 * committed without waiting for the store's flush; fsync waits for it (see {@link NOT_DURABLE}).
 */
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { EventBus } from '../../core/events.js';
import type { EntryAttributes, EntryRecord, FileRecord, VersionRecord } from '../../fs/records.js';
import type { AttributeChanges, FsService, HoldRequest } from '../../fs/service.js';
import { NotFoundError } from '../../core/errors.js';
import type { CommitOptions, CommitPiece, CommitResult, FuseBackend, NodeInfo, SpaceInfo, StoredContent, VersionInfo } from './backend.js';

/** NodeInfo of a stored entry. */
export function nodeOf(rec: EntryRecord): NodeInfo {
  const common = { mode: rec.mode, uid: rec.uid, gid: rec.gid, mtime: rec.modified, ctime: rec.modified };
  if (rec.kind === 'dir') return { kind: 'dir', size: 0, ...common };
  return { kind: rec.symlink ? 'symlink' : 'file', size: rec.size, version: rec.version, etag: rec.etag, ...common };
}

/**
 * Changes made through the mount are answered once committed (visible to every face, surviving a
 * crash of the daemon), not once flushed: a local disk's close() and unlink() do not sync either.
 * fsync ({@link LocalBackend.sync}) waits for the flush; RPC writes keep waiting for it.
 */
const NOT_DURABLE = { durable: false } as const;

export class LocalBackend implements FuseBackend {
  readonly description = 'in-process';
  readonly reusesHashes = true;
  readonly spoolDir: string;
  readonly #fs: FsService;
  readonly #events: EventBus;
  readonly #dataDir: string;

  constructor(deps: { fs: FsService; events: EventBus; dataDir: string }) {
    this.#fs = deps.fs;
    this.#events = deps.events;
    this.#dataDir = deps.dataDir;
    this.spoolDir = join(deps.dataDir, 'spool');
  }

  async stat(path: string): Promise<NodeInfo | undefined> {
    const rec = this.#fs.stat(path);
    return rec && nodeOf(rec);
  }

  async list(dir: string): Promise<[string, NodeInfo][]> {
    const prefix = dir === '/' ? 1 : dir.length + 1;
    const out: [string, NodeInfo][] = [];
    for (const e of this.#fs.list(dir, { recursive: false })) {
      const path = e.is_directory ? e.path.slice(0, -1) : e.path;
      const rec = this.#fs.stat(path);
      if (rec) out.push([path.slice(prefix), nodeOf(rec)]);
    }
    return out;
  }

  async content(path: string): Promise<StoredContent> {
    return this.#stored(this.#fs.file(path));
  }

  async checkWritable(path: string): Promise<void> {
    this.#fs.checkChange('write', path);
  }

  /**
   * Chunks are read when writeChunks needs them (once to hash unless their hash is known, again
   * only if new to the store): never all at once.
   */
  async commit(path: string, pieces: CommitPiece[], opts: CommitOptions = {}): Promise<CommitResult> {
    const content = await Promise.all(pieces.map(async (p) => ({
      hash: p.hash, size: p.size, held: p.held, data: p.readSync ?? await p.read(),
    })));
    const r = await this.#fs.writeChunks(path, content, {
      attributes: opts.attributes, symlink: opts.symlink, modified: opts.modified, etag: opts.etag, ...NOT_DURABLE,
    });
    return { version: r.version, etag: r.etag, size: r.size };
  }

  /** Chunks stored while their file is written: a non-durable transaction (fsync waits for the flush). */
  hold(requests: HoldRequest[], release: string[]): Promise<boolean[]> {
    return this.#fs.holdChunks(requests, release, NOT_DURABLE);
  }

  chunk(hash: string): Buffer {
    return this.#fs.chunks({ chunks: [hash] }).next().value as Buffer;
  }

  async remove(path: string): Promise<void> {
    await this.#fs.delete(path, NOT_DURABLE);
  }

  async rename(from: string, to: string): Promise<void> {
    await this.#fs.rename(from, to, { overwrite: true, ...NOT_DURABLE });
  }

  async mkdir(path: string, attributes: EntryAttributes): Promise<void> {
    await this.#fs.mkdir(path, { attributes, ...NOT_DURABLE });
  }

  async rmdir(path: string): Promise<void> {
    await this.#fs.rmdir(path, NOT_DURABLE);
  }

  async setAttributes(path: string, changes: AttributeChanges): Promise<void> {
    await this.#fs.setAttributes(path, changes, NOT_DURABLE);
  }

  async versions(path: string): Promise<VersionInfo[]> {
    return this.#fs.listVersions(path)
      .map((v) => ({ version: v.version, size: v.size, modified: v.modified_at.getTime() }))
      .reverse();
  }

  async versionContent(path: string, version: number): Promise<StoredContent> {
    return this.#stored(this.#fs.versionRecord(path, version));
  }

  async space(): Promise<SpaceInfo> {
    const s = await statfs(this.#dataDir);
    return { blockSize: s.bsize, blocks: s.blocks, blocksFree: s.bavail, files: s.files, filesFree: s.ffree };
  }

  onChange(listener: Parameters<EventBus['subscribe']>[0]): () => void {
    return this.#events.subscribe(listener);
  }

  /** fsync: wait until every commit made so far (this mount's and any other) is flushed. */
  sync(): Promise<void> {
    return this.#fs.flushed();
  }

  async close(): Promise<void> {}

  #stored(rec: FileRecord | VersionRecord): StoredContent {
    const fs = this.#fs;
    const { chunks } = rec;
    return {
      size: rec.size,
      version: rec.version,
      etag: rec.etag,
      hash: (i) => chunks[i],
      loadSync(i) {
        const hash = chunks[i];
        if (hash === undefined) throw new NotFoundError(`chunk ${i} is beyond the end of the content`);
        return fs.chunks({ chunks: [hash] }).next().value as Buffer;
      },
      async load(i) {
        return this.loadSync!(i);
      },
    };
  }
}
