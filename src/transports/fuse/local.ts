/**
 * @module transports/fuse/local
 * The in-process FUSE backend: the daemon's own FsService, called directly (no RPC hop). Content is
 * read one chunk at a time by hash from the chunk store, and an open file is committed as one
 * version with writeChunks(), reusing the hashes of the chunks it did not change. Its changes are
 * committed without waiting for the store's flush; fsync waits for it (see the backend's `#origin`).
 *
 * Group commit of small files: with a journal, a commit of a file of at most
 * {@link BATCH_MAX_BYTES}, the removal of a file, or a directory made or removed (empty), is answered once its record is appended to
 * the journal, and the changes queued within a short window (see {@link GATHER_MS}) go into ONE transaction (which also
 * records the journal position it applied). Until its batch is committed, a queued file is served
 * from memory here (stat, list, content: the overlay), with the version it will get (a queued
 * removal: absent), and a directory in which a queued change makes, removes or renames a name
 * shows that change's time as its mtime and ctime. An attribute change is queued too: folded into
 * the record of what is queued at its path, or on its own for a stored entry, shown from
 * {@link LocalBackend.#changed} meanwhile ({@link LocalBackend.setAttributes}), and so is the rename of
 * a file or link, queued or stored, over a file or nothing ({@link LocalBackend.rename}). Every other
 * change (a directory's rename, a large commit) first waits for the queue to drain (the barrier), so changes reach the
 * store in the order the mount made them, and sync()
 * waits for the queue and then the flush. Every change made through another face waits for the
 * queue too (an FsService barrier), so it lands after the closes the mount has answered. Paths the
 * `direct` predicate names (inside a storage mount, whose host directory a commit hook writes) are
 * never queued.
 *
 * A batch the store cannot commit (a full disk) loses nothing: its closes were answered, so they
 * stay queued and served, and the batch is tried again after {@link RETRY_MS} (doubling up to
 * {@link RETRY_MAX_MS}); meanwhile the barrier, fsync and the memory bound fail with the store's
 * error (ENOSPC) instead of waiting, and the journal keeps the records for the next start. A
 * commit hook failing once the batch is committed is logged: the batch is not tried again.
 *
 * The guards (read-only mounts, parsed views) check each change the mount answers when it answers,
 * against what the mount shows (queued changes over the store); the batch does not ask again what
 * depends on the store's contents, which may not show yet what the mount showed.
 */
import { createHash } from 'node:crypto';
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { ChangeEvent, EventBus } from '../../core/events.js';
import type { Logger } from '../../core/log.js';
import { parentOf } from '../../core/paths.js';
import { changedOf, hasInline, type EntryAttributes, type EntryRecord, type FileRecord, type VersionRecord } from '../../fs/records.js';
import {
  CHUNK_SIZE, MoveUnderwayError, type AttributeChanges, type ContentKeeper, type FsService, type HoldRequest, type MutationKind, type ShownEntry,
} from '../../fs/service.js';
import { ExistsError, NotFoundError, ValidationError } from '../../core/errors.js';
import {
  zeroChunkHash, type CommitOptions, type CommitPiece, type CommitResult, type FuseBackend, type NodeInfo, type SpaceInfo, type StoredContent,
  type VersionInfo,
} from './backend.js';
import { JOURNAL_MARK, batchItem, type FuseJournal, type JournalRecord } from './journal.js';

/** Commits of files up to this size are journaled and group-committed (larger ones commit directly). */
export const BATCH_MAX_BYTES = 256 * 1024;
/** Bytes of queued content beyond which a commit first waits for the batch under way (memory bound). */
export const QUEUE_MAX_BYTES = 64 * 1024 * 1024;
/**
 * How long a batch waits for more changes before it commits. A writer making files one after the
 * other (cp -r, tar x, git checkout) closes one every 0.3–1 ms, so without a wait each batch held
 * one file, and each transaction's hand-overs between threads (the store's writer, its flush, the
 * commit check) cost more than the file. Measured through the kernel, 2,000 creates and deletes,
 * quiet machine: creates 846 → 586 µs a file and deletes 414 → 244 µs with 10 ms rather than one
 * event-loop turn (2 ms: 717 and 325; 5 ms: 637 and 268). Nobody waits for it: closes are answered
 * from the journal, the mount serves queued files itself, and whoever needs the batch (fsync, a
 * rename, the memory bound) ends the wait.
 */
export const GATHER_MS = 10;
/** A batch the store could not commit is tried again after this, then twice as long each time up to {@link RETRY_MAX_MS}. */
export const RETRY_MS = 1000;
const RETRY_MAX_MS = 30_000;
/**
 * How long a provisional close waits for the close that replaces it before a batch takes it (ms),
 * once its file is closed, or at once when somebody waits for the batch.
 */
const PROVISIONAL_MS = 2;
/**
 * How long at most a provisional close waits while its file is still open through the mount, and
 * nobody waits for the batch (ms). A shell's `echo x > f` writes through the descriptor it keeps
 * after its flush; on a loaded machine the write came more than {@link PROVISIONAL_MS} later, and
 * the batch stored an empty version before it (2 times in 250).
 */
const PROVISIONAL_OPEN_MS = 1000;
/** A batch stops gathering at this many changes or bytes of content. */
const GATHER_MAX_CHANGES = 4096;
const GATHER_MAX_BYTES = 16 * 1024 * 1024;

/** A small file's commit (or a file's removal, or a directory made or removed) answered from the journal, waiting for its batch. */
interface Queued {
  /** Its journal record's sequence number (an attribute change folded in: that record's). */
  seq: number;
  path: string;
  data: Buffer;
  /** What stat() shows until the batch is committed (the version it will get); undefined: removed. */
  info: NodeInfo | undefined;
  attributes: EntryAttributes | undefined;
  symlink: boolean;
  modified: number;
  /** Taken by the batch being committed: nothing more can be folded in. */
  batched?: boolean | undefined;
  /** A {@link CommitOptions.provisional} close, queued at this time (ms): the next close of its path replaces it while it waits. */
  provisional?: number | undefined;
  /** A provisional close whose file is still open through the mount (until {@link LocalBackend.closed}). */
  open?: boolean | undefined;
  /** A provisional close: its journal record's and its folded changes' sequence numbers (the replacing record names them). */
  journaled?: number[] | undefined;
  /** What else than a close it is, as its journal record says (no content; a removal has no info). */
  delete?: boolean | undefined;
  mkdir?: boolean | undefined;
  rmdir?: boolean | undefined;
  /** An attribute change of the stored entry at `path` ({@link LocalBackend.#changed} shows it meanwhile). */
  change?: AttributeChanges | undefined;
  /** A rename of the file at `path` (shown removed) to this path, where {@link moved} shows it meanwhile. */
  renameTo?: string | undefined;
  moved?: Queued | undefined;
  /**
   * What a queued rename of a stored file shows at its new name: the stored record whose content
   * {@link LocalBackend.content} serves meanwhile (`data` is empty). Its chunks stay referenced
   * until the batch commits the rename: every other change waits for the queue.
   */
  stored?: FileRecord | undefined;
  /**
   * A directory made whose mtime a utimens folded in set after every change queued in it so far
   * (rsync's and `cp -a`'s directory times, set once its files are written): the batch keeps it.
   */
  timeSet?: boolean | undefined;
}

/** The content of the records that have none. */
const NO_DATA = Buffer.alloc(0);

/** What an attribute change sets, as the store keeps it (a mode's permission bits). */
function pickChange(changes: AttributeChanges): AttributeChanges {
  return { mode: changes.mode === undefined ? undefined : changes.mode & 0o7777, uid: changes.uid, gid: changes.gid, modified: changes.modified };
}

/**
 * Resolves after `ms`, or at once when the function handed to `expose` is called; `expose` gets
 * undefined back when the delay is over (a window or pause that can be ended early).
 */
function endableDelay(ms: number, expose: (end: (() => void) | undefined) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const end = () => {
      clearTimeout(timer);
      expose(undefined);
      resolve();
    };
    const timer = setTimeout(end, ms);
    expose(end);
  });
}

/** NodeInfo of a stored entry. */
export function nodeOf(rec: EntryRecord): NodeInfo {
  const common = { mode: rec.mode, uid: rec.uid, gid: rec.gid, mtime: rec.modified, ctime: changedOf(rec) };
  if (rec.kind === 'dir') return { kind: 'dir', size: 0, ...common };
  let holes = 0;
  if (rec.chunks.length > 1) {
    const zero = zeroChunkHash();
    for (const hash of rec.chunks) if (hash === zero) holes++;
  }
  return {
    kind: rec.symlink ? 'symlink' : 'file', size: rec.size, version: rec.version, etag: rec.etag,
    allocated: holes === 0 ? undefined : Math.max(0, rec.size - holes * CHUNK_SIZE), ...common,
  };
}

export class LocalBackend implements FuseBackend {
  readonly description = 'in-process';
  readonly inProcess = true;
  readonly reusesHashes = true;
  readonly spoolDir: string;
  /**
   * How the mount's changes reach the service. Answered once committed (visible to every face,
   * surviving a crash of the daemon), not once flushed: a local disk's close() and unlink() do not
   * sync either; fsync ({@link LocalBackend.sync}) waits for the flush, and RPC writes keep waiting
   * for it. Named as this backend's, so the mount tells its own change events from other faces'
   * exactly ({@link isOwnChange}).
   */
  readonly #origin = { durable: false, face: this } as const;
  readonly #fs: FsService;
  readonly #events: EventBus;
  readonly #dataDir: string;
  readonly #journal: FuseJournal | undefined;
  readonly #log: Logger | undefined;
  /** Queued commits not yet handed to a batch, oldest first. */
  #queue: Queued[] = [];
  /** The latest queued commit of each path, until its batch is committed. */
  readonly #queued = new Map<string, Queued>();
  /**
   * Directories in which a queued change made, removed or renamed a name: when (what the mount
   * shows as their mtime and ctime) and the change's journal record, until its batch is committed
   * (the store then touches them itself: FsService's #touch).
   */
  readonly #touched = new Map<string, { at: number; seq: number }>();
  /**
   * Stored entries (files, links, directories) with an attribute change queued: what the mount
   * shows of them, and the latest change's journal record, until its batch is committed. Their
   * content is the store's: they are not in {@link #queued}.
   */
  readonly #changed = new Map<string, { info: NodeInfo; seq: number }>();
  /** Bytes of content in {@link #queue}. */
  #queueBytes = 0;
  /** The batch loop, while it runs. */
  #running: Promise<void> | undefined;
  /** Journal sequence number of the last change queued, and of the last one whose batch has settled. */
  #queuedSeq = 0;
  #settledSeq = 0;
  /** Called when a batch settles. */
  #batchWaiters: (() => void)[] = [];
  /** Ends the gathering window of the next batch early (set while it is open). */
  #endGather: (() => void) | undefined;
  readonly #gatherMs: number;
  readonly #retryMs: number;
  /** Why the last batch could not be committed, until one is (see the module note). */
  #failure: unknown;
  /** Ends the pause before a failed batch is tried again (set while it lasts). */
  #endPause: (() => void) | undefined;
  #closing = false;
  readonly #direct: (path: string) => boolean;
  readonly #removeBarrier: () => void;

  /**
   * Without `journal` every commit is made directly (and answered once committed); with it, small
   * files are group-committed (see the module note). The journal must have been recovered first.
   */
  constructor(deps: {
    fs: FsService; events: EventBus; dataDir: string; journal?: FuseJournal | undefined; log?: Logger | undefined;
    /** The gathering window, ms ({@link GATHER_MS}; tests lengthen it to show who ends it). */
    gatherMs?: number | undefined;
    /** The first pause before a failed batch is tried again, ms ({@link RETRY_MS}). */
    retryMs?: number | undefined;
    /**
     * Paths whose changes must reach something outside the store before they are answered (a
     * storage mount's host directory, written by a commit hook): committed directly, never queued.
     */
    direct?: ((path: string) => boolean) | undefined;
  }) {
    this.#fs = deps.fs;
    this.#events = deps.events;
    this.#dataDir = deps.dataDir;
    this.#journal = deps.journal;
    this.#log = deps.log;
    this.#gatherMs = deps.gatherMs ?? GATHER_MS;
    this.#retryMs = deps.retryMs ?? RETRY_MS;
    this.#direct = deps.direct ?? (() => false);
    this.spoolDir = join(deps.dataDir, 'spool');
    // Every other change waits for the closes this mount has answered and queued: a later write
    // must not land under an earlier close, nor a delete miss the file that close made.
    this.#removeBarrier = deps.journal ? deps.fs.addBarrier(() => (this.#settledSeq < this.#queuedSeq ? this.drain() : undefined)) : () => undefined;
  }

  async stat(path: string): Promise<NodeInfo | undefined> {
    return this.#statNow(path);
  }

  movesUnderway(path: string): Promise<void> | undefined {
    return this.#fs.movesUnderway(path, this);
  }

  keepContent(keeper: (path: string, current: StoredContent) => ReturnType<ContentKeeper>): () => void {
    return this.#fs.addKeeper((path, rec) => keeper(path, this.#stored(rec)));
  }

  /** The entry at `path` as the mount sees it: a queued change, else the stored entry. */
  #statNow(path: string): NodeInfo | undefined {
    const queued = this.#queued.get(path);
    if (queued) return this.#withTouch(path, queued.info);
    const changed = this.#changed.get(path);
    if (changed) return this.#withTouch(path, changed.info);
    const rec = this.#fs.stat(path);
    return rec && this.#withTouch(path, nodeOf(rec));
  }

  /** `info` of a directory with the time of the last queued change in it ({@link #touched}). */
  #withTouch(path: string, info: NodeInfo | undefined): NodeInfo | undefined {
    const touched = info?.kind === 'dir' ? this.#touched.get(path) : undefined;
    return touched ? { ...info!, mtime: touched.at, ctime: Math.max(touched.at, info!.ctime ?? 0) } : info;
  }

  /**
   * A queued change (journal record `seq`) made, removed or renamed names at `paths`: their
   * directories show its time until its batch is committed, and a directory made in the queue
   * no longer keeps a time set before it.
   */
  #touchParents(seq: number, ...paths: string[]): void {
    const at = Date.now();
    for (const path of paths) {
      const dir = parentOf(path);
      this.#touched.set(dir, { at, seq });
      const made = this.#queued.get(dir);
      if (made?.mkdir) made.timeSet = false;
    }
  }

  async list(dir: string): Promise<[string, NodeInfo][]> {
    return this.#listNow(dir);
  }

  /** The entries of `dir` as the mount sees them: queued changes over the stored entries. */
  #listNow(dir: string): [string, NodeInfo][] {
    const prefix = dir === '/' ? 1 : dir.length + 1;
    const out: [string, NodeInfo][] = [];
    // A directory made and still queued holds nothing stored yet.
    const stored = this.#queued.get(dir)?.mkdir ? [] : this.#fs.list(dir, { recursive: false });
    for (const e of stored) {
      const path = e.is_directory ? e.path.slice(0, -1) : e.path;
      if (this.#queued.has(path)) continue;
      const changed = this.#changed.get(path);
      const rec = changed ? undefined : this.#fs.stat(path);
      if (changed || rec) out.push([path.slice(prefix), this.#withTouch(path, changed?.info ?? nodeOf(rec!))!]);
    }
    for (const [path, q] of this.#queued) {
      if (q.info && parentOf(path) === dir) out.push([path.slice(prefix), this.#withTouch(path, q.info)!]);
    }
    return out;
  }

  async content(path: string): Promise<StoredContent> {
    const queued = this.#queued.get(path);
    if (queued) {
      if (!queued.info) throw new NotFoundError(`File not found: ${path}`, { path });
      return this.#queuedContent(queued);
    }
    return this.#stored(this.#fs.file(path));
  }

  /** A commit of `size` bytes at `path` is queued (journaled, group-committed), so a provisional one can be replaced. */
  holdsProvisional(path: string, size: number): boolean {
    return this.#journal !== undefined && size <= BATCH_MAX_BYTES && !this.#direct(path);
  }

  closed(path: string): void {
    const q = this.#queued.get(path);
    if (q) q.open = undefined;
  }

  /** Run the guards for a change the mount answers, against what the mount shows (its queued changes over the store). */
  #checkChange(kind: MutationKind, path: string | readonly string[], subtree = false): void {
    this.#fs.checkChange(kind, path, subtree, this.#shown);
  }

  readonly #shown: ShownEntry = (path) => {
    const info = this.#statNow(path);
    return info && { kind: info.kind === 'dir' ? 'dir' : 'file', symlink: info.kind === 'symlink' };
  };

  async checkWritable(path: string): Promise<void> {
    this.#checkChange('write', path);
  }

  /**
   * Chunks are read when writeChunks needs them (once to hash unless their hash is known, again
   * only if new to the store): never all at once.
   */
  async commit(path: string, pieces: CommitPiece[], opts: CommitOptions = {}): Promise<CommitResult> {
    if (this.#journal && pieces.length <= 1 && !pieces[0]?.held && this.holdsProvisional(path, pieces[0]?.size ?? 0)) {
      while (this.#queueBytes > QUEUE_MAX_BYTES) await this.#batchSettled();
      const queued = await this.#enqueue(this.#journal, path, pieces[0], opts);
      if (queued) return queued;
    }
    await this.drain();
    const content = await Promise.all(pieces.map(async (p) => ({
      hash: p.hash, size: p.size, held: p.held, data: p.readSync ?? await p.read(),
    })));
    const r = await this.#fs.writeChunks(path, content, {
      attributes: opts.attributes, symlink: opts.symlink, modified: opts.modified, etag: opts.etag, ...this.#origin,
    });
    return { version: r.version, etag: r.etag, size: r.size };
  }

  /** Chunks stored while their file is written: a non-durable transaction (fsync waits for the flush). */
  hold(requests: HoldRequest[], release: string[]): Promise<boolean[]> {
    return this.#fs.holdChunks(requests, release, this.#origin);
  }

  chunk(hash: string): Buffer {
    return this.#fs.chunks({ chunks: [hash] }).next().value as Buffer;
  }

  chunkRange(hash: string, from: number, to: number, target: Buffer, at: number): number {
    return this.#fs.chunkRangeInto(hash, from, to, target, at);
  }

  async remove(path: string): Promise<void> {
    if (this.#journal && !this.#direct(path)) {
      await this.#roomInJournal(this.#journal);
      const info = this.#statNow(path);
      if (info && info.kind !== 'dir') {
        this.#checkChange('delete', path);
        this.#touchParents(this.#queueRecord(this.#journal, { path, modified: Date.now(), delete: true }, undefined), path);
        return;
      }
    }
    await this.drain();
    await this.#fs.delete(path, this.#origin);
  }

  async rename(from: string, to: string): Promise<void> {
    if (this.#journal && !this.#direct(from) && !this.#direct(to)) {
      await this.#roomInJournal(this.#journal);
      // A file whose close is still queued (rsync's and many editors' temporary file) is renamed
      // in the queue too, over a file or nothing, in a directory the mount shows: nothing awaits
      // from here to the queueing. Anything else waits for the queue and commits alone.
      // So is a stored file or link with nothing queued at its path (`mv`, a file renamed once its
      // close was committed): on its own each was a transaction, which waits for the flush of the
      // one before it (about 1 ms a rename, 40× ext4's).
      // Not while another face renames or removes either name (or a directory above it): queued,
      // the rename would be committed after that change and fail there, answered as done. It waits
      // for that change and is then made against what it left, answered as the store answers.
      const underway = this.#fs.movesUnderway(from, this) ?? this.#fs.movesUnderway(to, this);
      if (underway) await underway;
      const source = underway ? undefined : this.#queued.get(from) ?? this.#storedSource(from);
      const target = this.#statNow(to);
      const parent = parentOf(to);
      if (source?.info && source.info.kind !== 'dir' && from !== to && target?.kind !== 'dir'
        && (parent === '/' || this.#statNow(parent)?.kind === 'dir')) {
        this.#checkChange('rename', [from, to]);
        return this.#queueRename(this.#journal, source, source.info, to, target);
      }
    }
    await this.drain();
    await this.#fs.rename(from, to, { overwrite: true, ...this.#origin });
  }

  /**
   * A stored file or link at `path` with nothing queued there, as the source of a queued rename
   * (not queued itself: {@link #queueRename} queues what it moves to); undefined for anything else.
   */
  #storedSource(path: string): Queued | undefined {
    const rec = this.#fs.stat(path);
    if (rec?.kind !== 'file') return undefined;
    // An attribute change still queued ({@link #changed}) shows in its info.
    const info = this.#statNow(path);
    return info && { seq: 0, path, data: NO_DATA, info, attributes: undefined, symlink: rec.symlink === true, modified: info.mtime, stored: rec };
  }

  /**
   * Journal the rename of queued (or stored: {@link #storedSource}) file `source` to `to` and queue
   * it: the mount shows `source.path` removed and `to` with its content, as the store will (over a
   * file: one version more than it).
   */
  #queueRename(journal: FuseJournal, source: Queued, info: NodeInfo, to: string, target: NodeInfo | undefined): void {
    const modified = Date.now();
    const seq = journal.append({ path: source.path, renameTo: to, modified, data: NO_DATA });
    const version = target ? (target.version ?? 0) + 1 : info.version;
    // What `to` shows meanwhile; never folded into (its record is the rename, which carries no attributes).
    const moved: Queued = { ...source, seq, path: to, info: { ...info, version, ctime: modified }, batched: true, renameTo: undefined, moved: undefined };
    this.#push(journal, {
      seq, path: source.path, data: NO_DATA, info: undefined, attributes: undefined, symlink: false, modified, renameTo: to, moved,
    });
    this.#queued.set(to, moved);
    this.#touchParents(seq, source.path, to);
  }

  async mkdir(path: string, attributes: EntryAttributes): Promise<void> {
    if (this.#journal && !this.#direct(path)) {
      await this.#roomInJournal(this.#journal);
      // Queued like a close, in a directory the mount shows (stored or queued itself): nothing
      // awaits from here to the queueing. Anything else is left to the store to refuse.
      const parent = parentOf(path);
      // What the mount shows, queued or stored, is there: no need to wait for the queue to say so.
      if (path !== '/' && this.#statNow(path)) throw new ExistsError(`File exists: ${path}`, { path });
      if (path !== '/' && (parent === '/' || this.#statNow(parent)?.kind === 'dir')) {
        this.#checkChange('mkdir', path);
        const modified = Date.now();
        const info: NodeInfo = { kind: 'dir', size: 0, mtime: modified, ctime: modified, mode: attributes.mode, uid: attributes.uid, gid: attributes.gid };
        this.#touchParents(this.#queueRecord(this.#journal, { path, modified, attributes, mkdir: true }, info), path);
        return;
      }
    }
    await this.drain();
    await this.#fs.mkdir(path, { attributes, ...this.#origin });
  }

  async rmdir(path: string): Promise<void> {
    if (this.#journal && !this.#direct(path)) {
      await this.#roomInJournal(this.#journal);
      // Queued like an unlink where the mount shows an empty directory (what was in it removed or
      // queued as removed): nothing awaits from here to the queueing. What the mount shows answers
      // the errors at once; the root goes to the store, which refuses it.
      if (path !== '/') {
        const info = this.#statNow(path);
        if (!info) throw new NotFoundError(`Directory not found: ${path}`, { path });
        if (info.kind !== 'dir') throw new ValidationError(`Not a directory: ${path}`, { path, errno: 'ENOTDIR' });
        if (this.#listNow(path).length > 0) throw new ValidationError(`Directory not empty: ${path}`, { path, errno: 'ENOTEMPTY' });
        this.#checkChange('rmdir', path, true);
        this.#touchParents(this.#queueRecord(this.#journal, { path, modified: Date.now(), rmdir: true }, undefined), path);
        return;
      }
    }
    await this.drain();
    await this.#fs.rmdir(path, this.#origin);
  }

  async setAttributes(path: string, changes: AttributeChanges): Promise<void> {
    if (this.#journal && !this.#direct(path) && path !== '/') {
      await this.#roomInJournal(this.#journal);
      const q = this.#queued.get(path);
      if (q?.info && !q.batched) return this.#fold(this.#journal, q, q.info, changes);
      // A stored entry with nothing queued at its path: the change is queued on its own.
      const info = q ? undefined : this.#statNow(path);
      if (info) return this.#queueChange(this.#journal, path, info, changes);
    }
    await this.drain();
    await this.#fs.setAttributes(path, changes, this.#origin);
  }

  /**
   * An attribute change of a stored entry (`chmod -R`, `touch` of existing files, `rsync -a` and
   * `tar x` setting the times of what exists, a directory's times set last): journaled and queued
   * like a close, committed with the batch. On its own each was a transaction, which waits for the
   * one before it to be flushed: about 1 ms each, `chmod -R` of 1,000 files 3.2 s against 0.03 on
   * ext4. The mount shows the new attributes at once ({@link #changed}); the content stays the
   * store's.
   */
  #queueChange(journal: FuseJournal, path: string, info: NodeInfo, changes: AttributeChanges): void {
    this.#checkChange('write', path);
    const change = pickChange(changes);
    const now = Date.now();
    const seq = journal.append({ path, modified: change.modified ?? now, change, data: NO_DATA });
    const shown: NodeInfo = {
      ...info, mode: change.mode ?? info.mode, uid: change.uid ?? info.uid, gid: change.gid ?? info.gid,
      mtime: change.modified ?? info.mtime, ctime: now,
    };
    // A directory's time set after the changes queued in it: they no longer move it (later ones do).
    if (change.modified !== undefined) this.#touched.delete(path);
    this.#changed.set(path, { info: shown, seq });
    this.#push(journal, { seq, path, data: NO_DATA, info: undefined, attributes: undefined, symlink: false, modified: change.modified ?? now, change });
  }

  /**
   * An attribute change to a file whose close (or a directory whose mkdir) is queued and not yet
   * taken by a batch is folded into it: journaled as a record of its own (a replay applies it after
   * the record it changes), and committed with that record, as its attributes and modification
   * time. It needs no transaction of its own: git sets the times of each file it has just written,
   * `cp -a` and `install -m` the times or mode of what they have just made.
   */
  #fold(journal: FuseJournal, q: Queued, info: NodeInfo, changes: AttributeChanges): void {
    this.#checkChange('write', q.path);
    const change = pickChange(changes);
    const seq = journal.append({ path: q.path, modified: change.modified ?? q.modified, change, data: NO_DATA });
    const attributes: EntryAttributes = { ...q.attributes };
    if (change.mode !== undefined) attributes.mode = change.mode;
    if (change.uid !== undefined) attributes.uid = change.uid;
    if (change.gid !== undefined) attributes.gid = change.gid;
    q.attributes = attributes;
    if (change.modified !== undefined) {
      q.modified = change.modified;
      // A directory's time set after the changes in it: they do not move it (until another comes).
      if (q.mkdir) {
        q.timeSet = true;
        this.#touched.delete(q.path);
      }
    }
    q.info = {
      ...info, mode: attributes.mode ?? info.mode, uid: attributes.uid ?? info.uid, gid: attributes.gid ?? info.gid,
      mtime: q.modified, ctime: Date.now(),
    };
    q.seq = seq;
    q.journaled?.push(seq);
    this.#queuedSeq = seq;
  }

  async versions(path: string): Promise<VersionInfo[]> {
    await this.drain();
    return this.#fs.listVersions(path)
      .map((v) => ({ version: v.version, size: v.size, modified: v.modified_at.getTime() }))
      .reverse();
  }

  async version(path: string, version: number): Promise<VersionInfo | undefined> {
    await this.drain();
    try {
      const v = this.#fs.versionRecord(path, version);
      return { version: v.version, size: v.size, modified: v.modified };
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
  }

  async versionContent(path: string, version: number): Promise<StoredContent> {
    const queued = this.#queued.get(path);
    if (queued?.info && queued.info.version === version) return this.#queuedContent(queued);
    return this.#stored(this.#fs.versionRecord(path, version));
  }

  async space(): Promise<SpaceInfo> {
    const s = await statfs(this.#dataDir);
    return { blockSize: s.bsize, blocks: s.blocks, blocksFree: s.bavail, files: s.files, filesFree: s.ffree };
  }

  onChange(listener: Parameters<EventBus['subscribe']>[0]): () => void {
    return this.#events.subscribe(listener);
  }

  isOwnChange(event: ChangeEvent): boolean {
    return this.#fs.madeBy(event) === this;
  }

  /** fsync: wait until every commit made so far (this mount's queued ones and any other) is flushed. */
  async sync(): Promise<void> {
    await this.drain();
    await this.#fs.flushed();
  }

  /**
   * Commit what is queued (the journal stays open: the daemon owns it). If the store still fails,
   * this rejects and the batch loop stops: the journal keeps what was not committed.
   */
  async close(): Promise<void> {
    try {
      await this.drain();
    } catch (err) {
      this.#closing = true;
      this.#endPause?.();
      await this.#running;
      throw err;
    } finally {
      // What could not be committed stays in the journal for the next start; other faces go on.
      this.#removeBarrier();
    }
  }

  /**
   * Resolves once every change queued so far has been committed (the barrier). Changes queued
   * meanwhile are not waited for, so a steady writer cannot hold it up. Rejects with the store's
   * error while batches cannot be committed.
   */
  async drain(): Promise<void> {
    const target = this.#queuedSeq;
    while (this.#settledSeq < target) await this.#batchSettled();
  }

  /**
   * Resolves when the batch under way (or the next one) settles; somebody waiting ends the gathering
   * at once. Rejects with the store's error instead while (and once) batches fail.
   */
  async #batchSettled(): Promise<void> {
    if (this.#failure !== undefined) throw this.#failure;
    const settled = new Promise<void>((resolve) => this.#batchWaiters.push(resolve));
    this.#endGather?.();
    await settled;
    if (this.#failure !== undefined) throw this.#failure;
  }

  /**
   * The window in which changes join the next batch: {@link GATHER_MS}, or less when a batch is
   * full or somebody waits for it (fsync, a barrier, the memory bound, unmount).
   */
  #gather(): Promise<void> {
    if (this.#batchWaiters.length > 0 || this.#batchFull()) return new Promise<void>((resolve) => setImmediate(resolve));
    return endableDelay(this.#gatherMs, (end) => (this.#endGather = end));
  }

  #batchFull(): boolean {
    return this.#queue.length >= GATHER_MAX_CHANGES || this.#queueBytes >= GATHER_MAX_BYTES;
  }

  /** Commits queued and not yet committed. */
  get queued(): number {
    return this.#queued.size;
  }

  /**
   * Journal a small file's commit and queue it; resolves with the version it will get. Undefined
   * when it must be committed directly instead (its parent is not a stored directory, or its
   * path holds a directory: the direct commit creates the parents or reports the error).
   */
  async #enqueue(journal: FuseJournal, path: string, piece: CommitPiece | undefined, opts: CommitOptions): Promise<CommitResult | undefined> {
    await this.#roomInJournal(journal);
    // A copy: the caller's buffers may change once this returns.
    const data = piece ? Buffer.from(piece.readSync?.() ?? await piece.read()) : NO_DATA;
    // Queued while another face renames or removes the path, it would be committed after that
    // change, at the old name: the caller waits for the change and commits where it left the file.
    // A change that starts after the queueing drains the queue first.
    if (this.#fs.movesUnderway(path, this)) throw new MoveUnderwayError(path);
    // From here to the queueing nothing awaits: the version foreseen is the one the batch gives.
    // A provisional commit of the path still queued is replaced: this close takes its version (and
    // the attributes folded into it); its records stay in the journal, named by this one's, which a
    // replay after a crash skips.
    const queued = this.#queued.get(path);
    const replaced = queued?.provisional !== undefined && !queued.batched && queued.info ? queued : undefined;
    const prev = replaced ? { ...replaced.info!, version: (replaced.info!.version ?? 1) - 1 } : this.#statNow(path);
    if (prev?.kind === 'dir') return undefined;
    const parent = parentOf(path);
    if (parent !== '/' && this.#statNow(parent)?.kind !== 'dir') return undefined;
    this.#checkChange('write', path);
    const modified = opts.modified ?? Date.now();
    const etag = createHash('sha256').update(data).digest('hex');
    // The attributes the stored entry will carry (as FsService keeps them: given, else the entry's own).
    const own = prev?.kind === 'file' ? prev : undefined;
    const version = (prev?.version ?? 0) + 1;
    const info: NodeInfo = {
      kind: opts.symlink ? 'symlink' : 'file', size: data.length, version, etag, mtime: modified, ctime: Date.now(),
      mode: opts.attributes?.mode ?? own?.mode, uid: opts.attributes?.uid ?? own?.uid, gid: opts.attributes?.gid ?? own?.gid,
    };
    const attributes = replaced?.attributes ? { ...replaced.attributes, ...opts.attributes } : opts.attributes;
    const seq = journal.append({ path, modified, attributes, symlink: opts.symlink, data, replaces: replaced?.journaled });
    if (replaced) {
      this.#queue.splice(this.#queue.indexOf(replaced), 1);
      this.#queueBytes -= replaced.data.length;
    }
    const provisional = opts.provisional ? Date.now() : undefined;
    this.#push(journal, {
      seq, path, data, info, attributes, symlink: opts.symlink ?? false, modified, provisional, journaled: provisional === undefined ? undefined : [seq],
      open: provisional !== undefined || undefined,
    });
    if (!prev) this.#touchParents(seq, path);
    return { version, etag, size: data.length };
  }

  /**
   * A journal past its size bound is emptied once everything in it is committed: a writer that
   * never lets the queue run dry (a long copy) waits for that here, once every few MiB.
   */
  async #roomInJournal(journal: FuseJournal): Promise<void> {
    while (journal.full) {
      if (this.#settledSeq === this.#queuedSeq) {
        journal.applied();
        return;
      }
      await this.drain();
    }
  }

  /**
   * Journal an unlink, mkdir or rmdir (no content) and queue it; `info`: what the mount shows at
   * its path meanwhile. Returns its journal record's sequence number.
   */
  #queueRecord(journal: FuseJournal, rec: Omit<JournalRecord, 'seq' | 'data'>, info: NodeInfo | undefined): number {
    const seq = journal.append({ ...rec, data: NO_DATA });
    this.#push(journal, {
      seq, path: rec.path, data: NO_DATA, info, attributes: rec.attributes, symlink: false, modified: rec.modified,
      delete: rec.delete, mkdir: rec.mkdir, rmdir: rec.rmdir,
    });
    return seq;
  }

  /** Queue a journaled change and start the batch loop if it is idle. */
  #push(journal: FuseJournal, queued: Queued): void {
    this.#queue.push(queued);
    this.#queuedSeq = queued.seq;
    this.#queueBytes += queued.data.length;
    if (!queued.change) this.#queued.set(queued.path, queued);
    if (this.#batchFull()) this.#endGather?.();
    this.#startBatches(journal);
  }

  /** Run the batch loop unless it runs; a change queued while a finished loop was settling starts it again. */
  #startBatches(journal: FuseJournal): void {
    this.#running ??= this.#runBatches(journal).finally(() => {
      this.#running = undefined;
      if (this.#queue.length > 0 && !this.#closing) this.#startBatches(journal);
    });
  }

  /** Group commit: one transaction for everything queued while the previous one was committing. */
  async #runBatches(journal: FuseJournal): Promise<void> {
    let pauseMs = this.#retryMs;
    while (this.#queue.length > 0 && !this.#closing) {
      // Let the closes that follow join the batch.
      await this.#gather();
      // A provisional close waits, with what follows it, for the next batch while the close that
      // replaces it may still come (a shell's write after its flush): younger than PROVISIONAL_MS,
      // or, its file still open and nobody waiting for the batch, PROVISIONAL_OPEN_MS. Taking it
      // now would store an empty version first. It is journaled meanwhile.
      const now = Date.now();
      const open = this.#batchWaiters.length === 0 && !this.#batchFull() ? PROVISIONAL_OPEN_MS : PROVISIONAL_MS;
      let cut = this.#queue.findIndex((q) => q.provisional !== undefined && now - q.provisional < (q.open ? open : PROVISIONAL_MS));
      if (cut > 0) {
        // The batch's mark is its newest record, so it must leave no older one behind: a close
        // queued before the provisional one but folded into after it (its record is newer) waits
        // too, or a crash before the next batch would skip the provisional close at the replay.
        const first = this.#queue[cut]!.journaled?.[0] ?? this.#queue[cut]!.seq;
        const newer = this.#queue.findIndex((q, i) => i < cut && q.seq > first);
        if (newer >= 0) cut = newer;
      }
      if (cut === 0) {
        await new Promise((resolve) => setTimeout(resolve, PROVISIONAL_MS));
        continue;
      }
      const batch = cut < 0 ? this.#queue : this.#queue.slice(0, cut);
      this.#queue = cut < 0 ? [] : this.#queue.slice(cut);
      this.#queueBytes = this.#queue.reduce((n, q) => n + q.data.length, 0);
      for (const q of batch) q.batched = true;
      // The journal position the batch applies: its newest record (a folded change's record is
      // newer than the changes queued after its close, which this batch holds too).
      const applied = batch.reduce((n, q) => Math.max(n, q.seq), 0);
      let results: PromiseSettledResult<unknown>[];
      try {
        results = await this.#fs.writeMany(
          batch.map((q) => batchItem(q, q.info?.etag, q.timeSet)),
          {
            ...this.#origin, pastBarrier: true, answered: true, mark: { name: JOURNAL_MARK, value: applied },
            // Committed, and answered long ago: a hook's failure (ReBAC following a rename, a
            // storage mount's mirror) is logged; taking the batch for uncommitted would commit it twice.
            onHookFailure: (err) => this.#log?.error({ err, changes: batch.length }, 'a commit hook failed after queued changes were committed'),
          },
        );
      } catch (err) {
        // Nothing was committed (see the module note): the batch goes back to the queue's front,
        // still served and journaled, and is tried again after a pause.
        this.#failure = err;
        for (const q of batch) q.batched = false;
        this.#queue = [...batch, ...this.#queue];
        this.#queueBytes = this.#queue.reduce((n, q) => n + q.data.length, 0);
        this.#log?.error({ err, changes: batch.length, retryMs: pauseMs }, 'committing closed files failed; they stay queued and are tried again');
        for (const wake of this.#batchWaiters.splice(0)) wake();
        await endableDelay(pauseMs, (end) => (this.#endPause = end)); // close() ends it
        pauseMs = Math.min(pauseMs * 2, RETRY_MAX_MS);
        continue;
      }
      if (this.#failure !== undefined) this.#log?.info({ changes: batch.length }, 'queued closed files committed again');
      this.#failure = undefined;
      pauseMs = this.#retryMs;
      results.forEach((r, i) => {
        const q = batch[i]!;
        if (r.status === 'rejected') {
          const what = q.change ? 'changing attributes failed' : q.info ? 'committing a closed file failed' : 'removing a file failed';
          this.#log?.error({ err: r.reason, path: q.path }, what);
        }
        if (this.#queued.get(q.path) === q) this.#queued.delete(q.path);
        if (q.moved && this.#queued.get(q.moved.path) === q.moved) this.#queued.delete(q.moved.path);
        if (q.change && this.#changed.get(q.path)?.seq === q.seq) this.#changed.delete(q.path);
      });
      this.#settledSeq = applied;
      // The store has touched these directories itself (at the batch's time, or kept their own).
      for (const [dir, touch] of this.#touched) if (touch.seq <= applied) this.#touched.delete(dir);
      for (const wake of this.#batchWaiters.splice(0)) wake();
    }
    if (this.#queue.length === 0) journal.applied();
  }

  /** The content a queued change shows: its own bytes, or the stored file a queued rename moves (at the version it will get). */
  #queuedContent(q: Queued): StoredContent {
    return q.stored ? this.#stored({ ...q.stored, version: q.info!.version! }) : queuedContent(q);
  }

  #stored(rec: FileRecord | VersionRecord): StoredContent {
    const fs = this.#fs;
    const { chunks } = rec;
    // Inline content is the record's one chunk.
    const inline = hasInline(rec);
    const hashAt = (i: number): string => {
      const hash = chunks[i];
      if (hash === undefined) throw new NotFoundError(`chunk ${i} is beyond the end of the content`);
      return hash;
    };
    return {
      size: rec.size,
      version: rec.version,
      etag: rec.etag,
      hash: (i) => chunks[i],
      loadSync: (i) => (i === 0 && inline ? fs.content(rec) : fs.chunks({ chunks: [hashAt(i)] }).next().value as Buffer),
      async load(i) {
        return this.loadSync!(i);
      },
      loadRange(i, from, to, target, at) {
        if (!(i === 0 && inline)) return fs.chunkRangeInto(hashAt(i), from, to, target, at);
        const bytes = fs.content(rec);
        return from < bytes.length ? bytes.copy(target, at, from, to) : 0;
      },
    };
  }
}

/** The content of a queued commit, from memory (one chunk: queued files are small). */
function queuedContent(q: Queued): StoredContent {
  const chunk = (i: number): Buffer => {
    if (i !== 0) throw new NotFoundError(`chunk ${i} is beyond the end of the content`);
    return q.data;
  };
  return {
    size: q.data.length,
    version: q.info!.version!,
    etag: q.info!.etag!,
    hash: () => undefined,
    loadSync: chunk,
    load: async (i) => chunk(i),
  };
}
