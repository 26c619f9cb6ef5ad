/**
 * @module store/types
 * The storage seam. Services see these interfaces only; the composition root injects an
 * adapter (embedded LMDB today). Reads are synchronous (LMDB serves them from its memory map);
 * writes happen inside {@link MetadataStore.transact}, whose callback runs atomically and whose
 * promise resolves once the commit is durable (or, when asked, once it is committed and visible;
 * {@link MetadataStore.flushed} then says when it is durable).
 */

/** Ordered keys: strings compare by UTF-8 bytes, which keeps a directory's entries contiguous. */
export type Key = string;

/**
 * A key range in iteration order (lmdb-js semantics): iteration begins at `start` (inclusive) and
 * stops before `end` (exclusive). Forward, `start` is the lower bound; with `reverse`, keys come
 * in descending order and `start` is the upper bound, `end` the lower (so `start >= end`).
 */
export interface RangeOptions {
  /** Inclusive bound where iteration begins (lower forward, upper with `reverse`). */
  start?: Key;
  /** Exclusive bound where iteration stops (upper forward, lower with `reverse`). */
  end?: Key;
  reverse?: boolean;
  limit?: number;
}

/** One record kind: a sorted map from key to value. */
export interface Table<V> {
  get(key: Key): V | undefined;
  range(options: RangeOptions): Iterable<{ key: Key; value: V }>;
  /** Keys only: cheaper than {@link range} when values are not needed. */
  keys(options: RangeOptions): Iterable<Key>;
  /** Only inside {@link MetadataStore.transact}. */
  put(key: Key, value: V): void;
  /** Only inside {@link MetadataStore.transact}. */
  remove(key: Key): void;
}

/** How {@link MetadataStore.transact} resolves. */
export interface TransactOptions {
  /**
   * true (the default): resolve once the commit is durable (flushed to stable storage, survives
   * power loss). false: resolve once it is committed — visible to every reader and surviving a
   * crash of this process, but not yet flushed; {@link MetadataStore.flushed} waits for the flush.
   * This is what a local disk promises for close() without fsync (the FUSE mount uses it).
   */
  durable?: boolean | undefined;
}

/**
 * A commit the store could not write (a disk error, or a full disk). `code` is the POSIX name a
 * file-system face reports for it: ENOSPC when the disk holding the store has (almost) no space
 * left, EIO otherwise. Nothing of the failed transaction was written.
 */
export class StoreWriteError extends Error {
  constructor(message: string, readonly code: 'ENOSPC' | 'EIO', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreWriteError';
  }
}

export interface MetadataStore {
  /** Open (or create) a named table. Call at construction time, not per request. */
  table<V>(name: string): Table<V>;
  /**
   * Run `fn` atomically and resolve with its result once the commit is durable (see
   * {@link TransactOptions.durable} for resolving at the commit instead). `fn` is
   * synchronous: it sees the latest committed state plus its own writes. Concurrent callers share
   * commits. A callback that throws is rolled back: nothing it wrote is committed, and the
   * transactions sharing its commit are not affected. A commit that cannot be written rejects with
   * {@link StoreWriteError}.
   */
  transact<T>(fn: () => T, options?: TransactOptions): Promise<T>;
  /**
   * Inside {@link transact}'s callback: run `fn` so that a throw undoes what `fn` wrote and nothing
   * else (one item of a batch that is refused half-way leaves the other items as they are).
   */
  atomically<T>(fn: () => T): T;
  /** Resolves once every commit made before the call (durable or not) is durable. */
  flushed(): Promise<void>;
  /** Human description for `status.metadata_store`. */
  describe(): { type: string; instance: string };
  close(): Promise<void>;
}

/** Content-addressed chunks keyed by the SHA-256 (hex) of their bytes. */
export interface BlobStore {
  get(hash: string): Buffer | undefined;
  /**
   * Bytes `[from, to)` of the chunk (clipped to its end) copied into `target` at `at`: how many, or
   * undefined when the chunk is missing. Copies only what is asked for (a small read of a large chunk).
   */
  readRange(hash: string, from: number, to: number, target: Uint8Array, at: number): number | undefined;
  has(hash: string): boolean;
  /** Every stored chunk's hash, in key order (consistency checks, tests). */
  hashes(): Iterable<string>;
  /** Inside a metadata transaction: the chunk becomes visible with that commit. */
  put(hash: string, data: Uint8Array): void;
  /**
   * Inside a metadata transaction: store the chunk unless one is stored under `hash` already, and
   * say whether it was stored. One lookup where `has` then `put` makes two (the write path's).
   */
  putIfAbsent(hash: string, data: Uint8Array): boolean;
  /** Inside a metadata transaction, once the chunk's last reference is gone. */
  delete(hash: string): void;
  describe(): { type: string; location: string };
}
