/**
 * @module test/helpers/gated-store
 * An LMDB store wrapper for tests of commit and flush ordering: it records whether each
 * transaction asked to wait for the flush, counts flushed() calls, can hold back flushes (and,
 * if asked, transactions) until released, and can fail transactions as a full disk does.
 */
import type { LmdbStore } from '../../src/store/lmdb/index.js';
import type { MetadataStore, Table, TransactOptions } from '../../src/store/types.js';

export class GatedStore implements MetadataStore {
  /** Per transaction, in order: whether it was durable (waited for the flush). */
  readonly transactions: boolean[] = [];
  flushCalls = 0;
  #gate: Promise<void> = Promise.resolve();
  #open: () => void = () => undefined;
  #holdTransactions = false;
  #failure: unknown;
  /** Transactions failed by {@link failWith}. */
  failures = 0;
  constructor(readonly inner: LmdbStore) {}
  /** From now on transactions reject with `err` and write nothing (undefined: they work again). */
  failWith(err: unknown): void {
    this.#failure = err;
  }
  /**
   * From now on flushed() resolves only after {@link release} (and the real flush); with
   * `transactions`, transactions started from now on also wait for the release.
   */
  hold(opts: { transactions: boolean }): void {
    this.#holdTransactions = opts.transactions;
    this.#gate = new Promise((resolve) => (this.#open = resolve));
  }
  release(): void {
    this.#open();
  }
  table<V>(name: string): Table<V> {
    return this.inner.table<V>(name);
  }
  atomically<T>(fn: () => T): T {
    return this.inner.atomically(fn);
  }

  async transact<T>(fn: () => T, options?: TransactOptions): Promise<T> {
    this.transactions.push(options?.durable !== false);
    if (this.#holdTransactions) await this.#gate;
    if (this.#failure !== undefined) {
      this.failures++;
      throw this.#failure;
    }
    return this.inner.transact(fn, options);
  }
  async flushed(): Promise<void> {
    this.flushCalls++;
    await this.inner.flushed();
    await this.#gate;
  }
  describe() {
    return this.inner.describe();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
