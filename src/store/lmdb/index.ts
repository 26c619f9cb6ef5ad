/**
 * @module store/lmdb
 * The embedded store: one LMDB environment holds metadata tables and the chunk store, so a file's
 * bytes and its metadata commit together (no orphan chunks after a crash, no dangling references).
 */
import { open, type RootDatabase, type Database } from 'lmdb';
import { closeSync, fstatSync, mkdirSync, openSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { StoreWriteError, type BlobStore, type Key, type MetadataStore, type RangeOptions, type Table, type TransactOptions } from '../types.js';

/**
 * Where msgpackr keeps each table's shared record structures: values are then encoded as compact
 * structs instead of maps with repeated keys, which makes decoding a directory listing much faster.
 */
const STRUCTURES = Symbol.for('svc.structures');

/**
 * LMDB refuses keys over 1,978 bytes (lmdb-js throws "Key size is larger than the maximum key size"
 * or, for very long strings, a RangeError "does not fit in target buffer"). No such key can have
 * been stored, so a lookup or removal with one finds nothing, rather than failing the request with
 * -32603 (a 10,000-character name from a client is a lookup miss, not a server fault).
 */
function isOversizedKey(err: unknown): boolean {
  return err instanceof Error && /maximum key size|does not fit in target buffer/i.test(err.message);
}

/** Bytes `[from, to)` of `bytes` (clipped to them) copied into `target` at `at`: how many. */
function copyPart(bytes: Uint8Array, from: number, to: number, target: Uint8Array, at: number): number {
  const start = Math.max(from, 0);
  const end = Math.min(to, bytes.byteLength);
  if (end <= start) return 0;
  target.set(bytes.subarray(start, end), at);
  return end - start;
}

class LmdbTable<V> implements Table<V> {
  constructor(private readonly db: Database<V, Key>) {}
  get(key: Key): V | undefined {
    try {
      return this.db.get(key);
    } catch (err) {
      if (isOversizedKey(err)) return undefined;
      throw err;
    }
  }
  // lmdb-js writes into the options object it is given (getKeys sets values:false), so it gets a
  // copy: a caller reusing one RangeOptions for keys() then range() would see undefined keys.
  range(options: RangeOptions): Iterable<{ key: Key; value: V }> {
    return this.db.getRange({ ...options }) as Iterable<{ key: Key; value: V }>;
  }
  keys(options: RangeOptions): Iterable<Key> {
    return this.db.getKeys({ ...options }) as Iterable<Key>;
  }
  put(key: Key, value: V): void {
    this.db.put(key, value);
  }
  remove(key: Key): void {
    try {
      this.db.remove(key);
    } catch (err) {
      if (!isOversizedKey(err)) throw err;
    }
  }
}

/**
 * How much of a chunk one LMDB value holds. A chunk is stored as pieces: the first under its hash,
 * the others under `<hash>.<piece in 4 hex digits>`, so a read of part of a chunk copies only the
 * pieces it covers (lmdb-js copies a whole value out of the map on every get: a 4 KiB read of a
 * 1 MiB chunk cost 40–53 µs, of a 64 KiB piece 3–6). A store written before pieces holds each chunk
 * as one value: a first value longer than a piece is a whole chunk, and is read as one.
 */
export const PIECE_BYTES = 64 * 1024;

function pieceKey(hash: string, piece: number): string {
  return piece === 0 ? hash : `${hash}.${piece.toString(16).padStart(4, '0')}`;
}

class LmdbBlobStore implements BlobStore {
  /** Where bytes backed by a SharedArrayBuffer are copied before a put (reused: see {@link put}). */
  #copy: Buffer | undefined;
  constructor(private readonly db: Database<Buffer, Key>, private readonly location: string) {}
  get(hash: string): Buffer | undefined {
    // The pieces are counted by key first, so the bytes are copied once, into a buffer of their size.
    let count = 1;
    for (const key of this.db.getKeys({ start: pieceKey(hash, 1), end: `${hash}/` })) if (key) count++;
    if (count === 1) {
      const first = this.#piece(hash, 0);
      return first && Buffer.from(first);
    }
    const target = Buffer.allocUnsafeSlow(count * PIECE_BYTES);
    const n = this.readRange(hash, 0, count * PIECE_BYTES, target, 0);
    return n === undefined ? undefined : target.subarray(0, n);
  }
  readRange(hash: string, from: number, to: number, target: Uint8Array, at: number): number | undefined {
    let p = Math.floor(from / PIECE_BYTES);
    // Past the first piece, the piece itself says the chunk is stored in pieces (no need to copy the first).
    let bytes = p > 0 ? this.#piece(hash, p) : undefined;
    if (!bytes) {
      const first = this.#piece(hash, 0);
      if (!first) return undefined;
      if (first.byteLength > PIECE_BYTES) return copyPart(first, from, to, target, at); // one value: stored before pieces
      if (p > 0) return 0; // the chunk ends before `from`
      bytes = first;
    }
    let n = 0;
    for (;;) {
      n += copyPart(bytes, from - p * PIECE_BYTES, to - p * PIECE_BYTES, target, at + n);
      if (bytes.byteLength < PIECE_BYTES || ++p * PIECE_BYTES >= to) return n;
      bytes = this.#piece(hash, p);
      if (!bytes) return n;
    }
  }
  has(hash: string): boolean {
    // By key alone: lmdb-js's doesExist reads the value, copying it (43–55 µs for a 1 MiB chunk
    // against 5–9 here; a commit of a large file checks each of its unchanged chunks).
    for (const key of this.db.getKeys({ start: hash, limit: 1 })) return key === hash;
    return false;
  }
  *hashes(): Iterable<string> {
    for (const key of this.db.getKeys({})) if (typeof key === 'string' && !key.includes('.')) yield key;
  }
  put(hash: string, data: Uint8Array): void {
    const bytes = this.#value(data);
    this.db.putSync(hash, bytes.subarray(0, PIECE_BYTES));
    this.#putRest(hash, bytes);
  }
  putIfAbsent(hash: string, data: Uint8Array): boolean {
    // Inside a transaction putSync runs in it and answers whether the put happened: with
    // noOverwrite (MDB_NOOVERWRITE) LMDB searches the tree once and inserts, or refuses.
    // (lmdb-js documents the boolean; its .d.ts says void.) The first piece stands for the chunk.
    const bytes = this.#value(data);
    if ((this.db.putSync(hash, bytes.subarray(0, PIECE_BYTES), { noOverwrite: true }) as unknown) !== true) return false;
    this.#putRest(hash, bytes);
    return true;
  }
  delete(hash: string): void {
    this.db.removeSync(hash);
    for (let p = 1; this.db.removeSync(pieceKey(hash, p)); p++);
  }
  /** Piece `p` of chunk `hash`: lmdb-js's reusable buffer, whose `length` property (not its byteLength) it sets to the value's size, so a view of exactly those bytes, valid until the next get. */
  #piece(hash: string, p: number): Uint8Array | undefined {
    const bytes = this.db.getBinaryFast(pieceKey(hash, p));
    return bytes && bytes.subarray(0, bytes.length);
  }
  #putRest(hash: string, bytes: Buffer): void {
    for (let p = 1; p * PIECE_BYTES < bytes.byteLength; p++) {
      this.db.putSync(pieceKey(hash, p), bytes.subarray(p * PIECE_BYTES, (p + 1) * PIECE_BYTES));
    }
  }
  /**
   * The bytes as lmdb-js may take them. It crashes the process (SIGSEGV) on a value backed by a
   * SharedArrayBuffer (the FUSE mount's chunk buffers, shared with its hashing thread): such bytes
   * are copied first, into one reused buffer (a fresh 1 MiB allocation per chunk cost more than the
   * copy): a put has copied the value into the transaction by the time it returns.
   */
  #value(data: Uint8Array): Buffer {
    if (data.buffer instanceof SharedArrayBuffer) {
      if (!this.#copy || this.#copy.length < data.byteLength) this.#copy = Buffer.allocUnsafeSlow(Math.max(data.byteLength, 1024 * 1024));
      this.#copy.set(data);
      return this.#copy.subarray(0, data.byteLength);
    }
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }
  describe() {
    return { type: 'lmdb-cas', location: this.location };
  }
}

/** The message lmdb-js gives every write of a commit that failed (the cause is in its `commitError`). */
const LMDB_COMMIT_FAILED = 'Commit failed (see commitError for details)';
/** Free space under which a failed commit is taken for a full disk (LMDB says EIO for a short write). */
const LOW_SPACE_BYTES = 64 * 1024 * 1024;

/**
 * lmdb-js's rejection for a failed commit (observing the `commitError` promise it carries, which
 * nobody else does). Each failure reaches its caller through {@link LmdbStore.transact}; lmdb-js
 * also leaves a batch's own commit promise unobserved ({@link LmdbStore} observes those), and Node
 * ends a process on an unobserved rejection.
 */
export function isLmdbCommitFailure(reason: unknown): boolean {
  if (!(reason instanceof Error) || reason.message !== LMDB_COMMIT_FAILED || !('commitError' in reason)) return false;
  (reason as { commitError?: Promise<unknown> }).commitError?.catch(() => undefined);
  return true;
}

/**
 * Where each non-durable transaction writes its sequence number (one key, `seq`), so that its
 * caller can tell from an ordinary read when the commit has become visible to readers.
 */
const COMMIT_MARKER_DB = 'svc.commit-marker';
/** Event-loop turns a non-durable commit is checked on at once, before checks wait 1 ms each. */
const SPIN_POLLS = 32;
/** Growth of the data file after which the grown part's clean pages are dropped (see {@link LmdbStoreOptions.dropCached}). */
export const DROP_BEHIND_BYTES = 64 * 1024 * 1024;

export interface LmdbStoreOptions {
  /**
   * Drop-behind: drops the clean pages of a range of the data file from the page cache
   * (posix_fadvise DONTNEED; src/native/fuse.ts `cacheDropper`), resolving to 0 or an errno. With
   * it, each time the data file has grown by {@link DROP_BEHIND_BYTES} and a flush has made the
   * growth clean, its pages are dropped. They hold what bulk writes appended (a large file's
   * chunks, its version kept as the next one is written), which nobody reads back soon (the FUSE
   * mount reads its own pages), and keeping them takes fresh memory, which on a VM can cost several
   * times what reusing freed pages does: a 256 MiB file written with fsync through the mount, round
   * after round, 300–330 MiB/s without, 610–710 with (docs/performance.md). Pages LMDB reads
   * through its memory map (its trees) are mapped and stay.
   */
  dropCached?: ((fd: number, offset: number, length: number) => Promise<number>) | undefined;
}

/** The LMDB environment with its metadata tables and chunk store. */
export class LmdbStore implements MetadataStore {
  readonly blobs: BlobStore;
  readonly #root: RootDatabase;
  readonly #path: string;
  readonly #tables = new Map<string, LmdbTable<unknown>>();
  readonly #marker: Database<number, Key>;
  /** Sequence number of the latest non-durable transaction queued (continues the stored one). */
  #seq: number;
  /** Whether this event turn's {@link #guardBatch} is queued. */
  #guardQueued = false;
  /** Commits whose durable (flushed) promise has not settled yet: what {@link flushed} waits for. */
  readonly #unflushed = new Set<Promise<unknown>>();
  readonly #dropCached: LmdbStoreOptions['dropCached'];
  /** The data file, read-only, for drop-behind (its size and its pages); undefined without it. */
  #dataFd: number | undefined;
  /** Where the data file's part not dropped yet starts. */
  #droppedUpTo = 0;
  #dropping: Promise<unknown> | undefined;

  constructor(dataDir: string, options: LmdbStoreOptions = {}) {
    this.#path = join(dataDir, 'db');
    mkdirSync(this.#path, { recursive: true });
    this.#root = open({
      path: this.#path,
      // Durability: lmdb-js resolves each write promise after the commit is flushed (overlappingSync
      // on Linux/macOS), so a durable transact() survives kill -9 and power loss alike. With
      // overlappingSync a commit is published (visible, its pages written to the OS) before the
      // flush; a non-durable transact() resolves then: it survives kill -9 of the daemon, since on
      // reopen with an unchanged boot id lmdb-js uses the latest committed transaction, and a
      // power loss falls back to the last flushed one (never a torn database).
      compression: false,
      maxDbs: 64,
      mapSize: 2 ** 40,
    });
    const chunks = this.#root.openDB<Buffer, Key>({ name: 'chunks', encoding: 'binary' });
    this.blobs = new LmdbBlobStore(chunks, this.#path);
    this.#marker = this.#root.openDB<number, Key>({ name: COMMIT_MARKER_DB, encoding: 'msgpack' });
    this.#seq = this.#marker.get('seq') ?? 0;
    this.#dropCached = options.dropCached;
    if (this.#dropCached) {
      this.#dataFd = openSync(join(this.#path, 'data.mdb'), 'r');
      this.#droppedUpTo = fstatSync(this.#dataFd).size;
    }
  }

  /**
   * After a flush: drop the pages of what the data file grew by, once that is
   * {@link DROP_BEHIND_BYTES} or more (one drop at a time; a drop that fails is only missed).
   */
  #dropBehind(): void {
    if (this.#dataFd === undefined || this.#dropping) return;
    const size = fstatSync(this.#dataFd).size;
    if (size < this.#droppedUpTo) this.#droppedUpTo = size; // never shrinks; a replaced file would
    if (size - this.#droppedUpTo < DROP_BEHIND_BYTES) return;
    const from = this.#droppedUpTo;
    this.#droppedUpTo = size;
    this.#dropping = this.#dropCached!(this.#dataFd, from, size - from)
      .catch(() => undefined)
      .finally(() => { this.#dropping = undefined; });
  }

  table<V>(name: string): Table<V> {
    let t = this.#tables.get(name);
    if (!t) {
      t = new LmdbTable(this.#root.openDB<unknown, Key>({ name, encoding: 'msgpack', sharedStructuresKey: STRUCTURES }));
      this.#tables.set(name, t);
    }
    return t as Table<V>;
  }

  transact<T>(fn: () => T, options: TransactOptions = {}): Promise<T> {
    const done = this.#transact(fn, options).catch((err: unknown) => this.#failed(err));
    this.#guardBatch(); // after the transaction is queued: its immediate must follow lmdb-js's
    return done;
  }

  /** A failed commit as {@link StoreWriteError}; anything else (a callback's own throw) unchanged. */
  async #failed(err: unknown): Promise<never> {
    if (!isLmdbCommitFailure(err)) throw err;
    // lmdb-js rejects commitError with LMDB's error in the same turn; never wait long for it.
    const cause = await Promise.race([
      (err as { commitError?: Promise<unknown> }).commitError?.then(() => undefined, (e: unknown) => e),
      delay(1000, undefined, { ref: false }),
    ]);
    let free: number | undefined;
    try {
      const fs = statfsSync(this.#path);
      free = fs.bavail * fs.bsize;
    } catch {
      // free space unknown: reported as a plain I/O error
    }
    const full = free !== undefined && free < LOW_SPACE_BYTES;
    const why = cause instanceof Error ? cause.message : 'unknown error';
    throw new StoreWriteError(
      full
        ? `the store could not write its commit: the disk holding ${this.#path} is full (${free} bytes free; LMDB: ${why})`
        : `the store could not write its commit (LMDB: ${why})`,
      full ? 'ENOSPC' : 'EIO', { cause: cause ?? err },
    );
  }

  /**
   * lmdb-js starts each event turn's batch of writes (on an immediate) with a commit promise of its
   * own that nobody observes: if that commit fails (a full disk), Node would end the process on
   * it. Observed here, on the immediate after lmdb-js's.
   */
  #guardBatch(): void {
    if (this.#guardQueued) return;
    this.#guardQueued = true;
    setImmediate(() => {
      this.#guardQueued = false;
      this.#root.committed.then(undefined, (err: unknown) => isLmdbCommitFailure(err));
    });
  }

  atomically<T>(fn: () => T): T {
    // Inside a write transaction lmdb-js runs this as a child transaction, aborted if fn throws.
    return this.#root.transactionSync(fn) as T;
  }

  /**
   * Each callback runs as a child transaction of lmdb-js's batch (`childTransaction`): one that
   * throws is aborted, where `transaction` would commit what it wrote before the throw.
   */
  #transact<T>(fn: () => T, options: TransactOptions): Promise<T> {
    if (options.durable !== false) return this.#track(this.#root.childTransaction(fn));
    // lmdb-js resolves a transaction only after its flush, so the commit point is observed here:
    // the transaction also writes its sequence number to a marker key, and the promise resolves
    // once a fresh read sees it (lmdb-js publishes a commit to readers before flushing it). The
    // flush goes on behind; flushed() waits for it.
    const seq = ++this.#seq;
    let threw = false;
    let failure: unknown;
    let value: T;
    const durable = this.#track(
      this.#root.childTransaction(() => {
        try {
          value = fn();
        } catch (err) {
          threw = true;
          failure = err;
          throw err;
        }
        this.#marker.put('seq', seq);
        return value;
      }),
    );
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const settle = (ok: boolean, v: unknown) => {
        if (settled) return;
        settled = true;
        if (ok) resolve(v as T);
        else reject(v);
      };
      durable.then((v) => settle(true, v), (err) => settle(false, err));
      const poll = () => {
        if (settled) return;
        // A callback that throws was rolled back (a child transaction), so its error needs no
        // commit to be reported.
        if (threw) return settle(false, failure);
        this.#root.resetReadTxn(); // a snapshot of the latest commit, for this check and every read after it
        if ((this.#marker.get('seq') ?? 0) >= seq) return settle(true, value);
        // A small commit lands within a few turns; a large one (a big FUSE file) must not keep the
        // main thread spinning, so after the first turns the check waits a millisecond each time.
        if (++polls < SPIN_POLLS) setImmediate(poll);
        else setTimeout(poll, 1);
      };
      let polls = 0;
      setImmediate(poll);
    });
  }

  async flushed(): Promise<void> {
    await Promise.allSettled([...this.#unflushed]);
    await this.#root.flushed;
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#unflushed.add(p);
    const done = () => {
      this.#unflushed.delete(p);
      this.#dropBehind();
    };
    p.then(done, done);
    return p;
  }

  describe() {
    return { type: 'lmdb', instance: this.#path };
  }

  async close(): Promise<void> {
    await this.flushed();
    await this.#dropping;
    await this.#root.close();
    if (this.#dataFd !== undefined) closeSync(this.#dataFd);
    this.#dataFd = undefined;
  }
}
