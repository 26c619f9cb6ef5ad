/**
 * @module transports/fuse/chunk-holds
 * Stores an open file's full chunks while the file is still being written (in process), so that
 * the commit at close only writes the entry instead of reading the whole content back from the
 * spool and storing it then.
 *
 * Each chunk is stored with a pending hold ({@link FsService.holdChunks}): the commit takes the hold
 * over as its entry's reference; a hold given up (the chunk was written again, truncated away, the
 * file unlinked or released without a commit) frees the chunk unless something else references
 * it, and holds a crash leaves are dropped at start-up. Requests are batched: one non-durable
 * transaction at a time, taking every request made since the previous one began; nothing a FUSE
 * write answers waits for it (the close waits for its file's outstanding ones).
 */
import type { HoldRequest } from '../../fs/service.js';

/** What the holds need from the backend (the in-process one provides it). */
export interface HoldingBackend {
  /** Store `requests` with a pending hold each and give up one hold per hash of `release`, in one transaction. */
  hold(requests: HoldRequest[], release: string[]): Promise<boolean[]>;
  /** A stored chunk's bytes (a copy). */
  chunk(hash: string): Buffer;
  /** Bytes `[from, to)` of a stored chunk copied into `target` at `at`: how many. */
  chunkRange(hash: string, from: number, to: number, target: Buffer, at: number): number;
}

export class ChunkHolds {
  readonly #backend: HoldingBackend;
  readonly #onError: (err: unknown) => void;
  #requests: { request: HoldRequest; settle: (held: boolean) => void }[] = [];
  #releases: { hashes: string[]; settle: () => void }[] = [];
  #running: Promise<void> | undefined;
  /** Transactions run so far (tests). */
  batches = 0;

  constructor(backend: HoldingBackend, onError: (err: unknown) => void = () => undefined) {
    this.#backend = backend;
    this.#onError = onError;
  }

  /**
   * Store a chunk with a hold; resolves to whether it is held (false: `data` returned undefined, or
   * the store failed; the chunk is then stored by the commit as before). Without `data`, hold a
   * chunk the store already has (a stored version lists it): false when it is stored no more.
   */
  hold(hash: string, data?: () => Uint8Array | undefined): Promise<boolean> {
    return new Promise((settle) => {
      this.#requests.push({ request: { hash, data }, settle });
      this.#kick();
    });
  }

  /** Give up one hold per hash listed (freeing chunks nothing else references). */
  release(hashes: string[]): Promise<void> {
    if (hashes.length === 0) return Promise.resolve();
    return new Promise((settle) => {
      this.#releases.push({ hashes, settle });
      this.#kick();
    });
  }

  /** A stored chunk's bytes. */
  load(hash: string): Buffer {
    return this.#backend.chunk(hash);
  }

  /** Bytes `[from, to)` of a stored chunk copied into `target` at `at` (only those): how many. */
  loadRange(hash: string, from: number, to: number, target: Buffer, at: number): number {
    return this.#backend.chunkRange(hash, from, to, target, at);
  }

  /** Resolves once nothing is queued or running. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  #kick(): void {
    this.#running ??= this.#drain().finally(() => {
      this.#running = undefined;
      if (this.#requests.length || this.#releases.length) this.#kick();
    });
  }

  async #drain(): Promise<void> {
    while (this.#requests.length || this.#releases.length) {
      const requests = this.#requests;
      const releases = this.#releases;
      this.#requests = [];
      this.#releases = [];
      this.batches++;
      try {
        const held = await this.#backend.hold(requests.map((r) => r.request), releases.flatMap((r) => r.hashes));
        requests.forEach((r, i) => r.settle(held[i] === true));
      } catch (err) {
        // Nothing of the batch was written (one transaction): holds not given up stay until
        // start-up drops them; the chunks not held are stored by their commits.
        this.#onError(err);
        for (const r of requests) r.settle(false);
      }
      for (const r of releases) r.settle();
    }
  }
}
