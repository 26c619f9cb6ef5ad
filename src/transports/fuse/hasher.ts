/**
 * @module transports/fuse/hasher
 * SHA-256 of an open file's chunks (and of its whole content, the etag) computed on a worker
 * thread while the file is still being written, so a commit after a sequential write neither hashes
 * on the main thread nor reads the spool back just to hash.
 *
 * The main thread stays the only writer of chunk buffers. A chunk is handed over when a write
 * reaches its end (the usual sign that it is complete); chunk buffers are allocated on a
 * SharedArrayBuffer ({@link sharedChunk}) so handing one over copies nothing. The worker may read
 * a buffer the main thread changes again afterwards: {@link OpenFile} then drops that chunk's hash
 * and the file's running etag, so a result computed from bytes that changed is never used.
 *
 * A running etag ({@link ChunkHasher.openStream}) is fed chunks 0, 1, 2, … in order; finishing it
 * adds the last, partial chunk and returns the etag and that chunk's hash. The worker keeps the
 * hash state of the last {@link KEPT_STATES} etags it finished, so a running etag can also start
 * from one of them ({@link ChunkHasher.resume}: a file appended to hashes only what it appends).
 * Any failure of the worker resolves to `undefined`: the commit then hashes as it did without it.
 *
 * The worker hashes with svc's SHA-256 addon where it is built and the CPU has the SHA extensions
 * (src/native/sha256.ts): a chunk and the running etag it extends are then fed together, one pass
 * over the bytes for both hashes instead of two. Elsewhere it uses node:crypto, with the same results.
 */
import { Worker } from 'node:worker_threads';
import { CHUNK_SIZE } from '../../fs/service.js';
import { sha256AddonPath } from '../../native/sha256.js';

/**
 * Chunk buffers kept for reuse. A fresh SharedArrayBuffer costs ~1–2 ms (allocation, zeroing, and
 * first use by the worker); a reused one a 1 MiB fill. Enough for a streaming write's turnover.
 */
export const POOLED_CHUNKS = 16;

/** Etags whose final hash state the worker keeps for {@link ChunkHasher.resume} (a few hundred bytes each). */
export const KEPT_STATES = 64;

/** The worker's code (CommonJS, evaluated: works the same from src/ under tsx and from dist/). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
let addon;
try {
  addon = workerData.sha256 ? require(workerData.sha256) : undefined;
  if (addon && !addon.supported()) addon = undefined;
} catch {
  addon = undefined;
}
// A hash state: svc's SHA-256 addon's (a Buffer; a chunk and the running etag fed together take
// one pass over the bytes) or node:crypto's.
const sha = addon ? {
  engine: 'svc_sha256',
  fresh: () => addon.init(),
  feed: (a, b, data) => addon.update(a, b, data),
  hex: (s) => addon.digest(s),
  copy: (s) => Buffer.from(s),
} : {
  engine: 'node:crypto',
  fresh: () => createHash('sha256'),
  feed: (a, b, data) => { a.update(data); if (b) b.update(data); },
  hex: (s) => s.digest('hex'),
  copy: (s) => s.copy(),
};
const streams = new Map();
// The state of each recent etag after its last byte (a copy taken before the digest), so a later
// content that only appends to it resumes from there instead of hashing it all again.
const states = new Map();
const remember = (etag, state) => {
  states.delete(etag);
  states.set(etag, state);
  if (states.size > ${KEPT_STATES}) states.delete(states.keys().next().value);
};
const view = (m) => m.sab ? new Uint8Array(m.sab, m.offset, m.length) : m.data;
parentPort.on('message', (m) => {
  try {
    if (m.op === 'engine') return void parentPort.postMessage({ id: m.id, engine: sha.engine });
    if (m.op === 'drop') { streams.delete(m.stream); return; }
    if (m.op === 'resume') {
      const state = states.get(m.etag);
      if (state) streams.set(m.stream, sha.copy(state));
      parentPort.postMessage({ id: m.id, resumed: state !== undefined });
      return;
    }
    const data = m.sab || m.data ? view(m) : undefined;
    let stream;
    if (m.stream !== undefined) {
      stream = streams.get(m.stream);
      if (!stream) { stream = sha.fresh(); streams.set(m.stream, stream); }
    }
    const own = data && m.op !== 'feed' ? sha.fresh() : undefined;
    if (own) sha.feed(own, stream ?? null, data);
    else if (data && stream) sha.feed(stream, null, data);
    const chunk = own ? sha.hex(own) : undefined;
    let etag;
    if (m.op === 'finish') {
      const whole = stream ?? sha.fresh();
      const state = sha.copy(whole);
      etag = sha.hex(whole);
      streams.delete(m.stream);
      remember(etag, state);
    }
    parentPort.postMessage({ id: m.id, chunk, etag });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: String(err && err.message || err) });
  }
});
`;


interface Reply {
  id: number;
  engine?: HashEngine;
  chunk?: string;
  etag?: string;
  resumed?: boolean;
  error?: string;
}

type Payload = { sab: SharedArrayBuffer; offset: number; length: number } | { data: Uint8Array };

/** What the worker hashes with: svc's SHA-256 addon (src/native/sha256.ts) or node:crypto. */
export type HashEngine = 'svc_sha256' | 'node:crypto';

/** One worker thread shared by every open file of a mount. Started on first use. */
export class ChunkHasher {
  /** The addon's file for the worker to load, or undefined: node:crypto. */
  readonly #sha256: string | undefined;
  #worker: Worker | undefined;
  #failed = false;
  #nextId = 1;
  #nextStream = 1;
  readonly #waiting = new Map<number, (reply: Reply | undefined) => void>();
  readonly #pool: SharedArrayBuffer[] = [];
  /** Shared buffers the worker may still read: requests outstanding per buffer. */
  readonly #inFlight = new Map<SharedArrayBuffer, number>();
  /** Released while in flight: pooled once the worker is done with them. */
  readonly #releasing = new Set<SharedArrayBuffer>();
  #bytesSent = 0;

  /** `sha256`: the SHA-256 addon's file (default: the one built here, if any; undefined: node:crypto). */
  constructor(opts: { sha256?: string | undefined } = { sha256: sha256AddonPath() }) {
    this.#sha256 = opts.sha256;
  }

  /**
   * A chunk buffer the worker can read without a copy (a SharedArrayBuffer, reused): zero-filled,
   * or (`zeroed` false, for a caller that writes all of it at once) holding a reused buffer's bytes.
   */
  acquire(zeroed = true): Buffer {
    const sab = this.#pool.pop();
    if (!sab) return Buffer.from(new SharedArrayBuffer(CHUNK_SIZE));
    // Zeroed as doubles: V8 fills a shared byte array one relaxed store per byte (~0.35 ms a MiB
    // here, a tenth of a sequential write's main-thread time); eight bytes a store is ~8× faster.
    if (zeroed) new Float64Array(sab).fill(0);
    return Buffer.from(sab);
  }

  /** The caller no longer uses `buf` (from {@link acquire}); it is reused once no request reads it. */
  release(buf: Buffer): void {
    const sab = buf.buffer;
    if (!(sab instanceof SharedArrayBuffer) || sab.byteLength !== CHUNK_SIZE) return;
    if (this.#inFlight.has(sab)) this.#releasing.add(sab);
    else if (this.#pool.length < POOLED_CHUNKS && !this.#pool.includes(sab)) this.#pool.push(sab);
  }

  /** Bytes handed to the worker so far (tests, diagnostics). */
  get bytesSent(): number {
    return this.#bytesSent;
  }

  /** Buffers waiting in the pool (tests). */
  get pooled(): number {
    return this.#pool.length;
  }

  /** What the worker hashes with (undefined when it failed). */
  engine(): Promise<HashEngine | undefined> {
    return this.#send({ op: 'engine' }, undefined).then((r) => r?.engine);
  }

  /** SHA-256 of `data`; with `stream`, the bytes are also appended to that running etag. */
  chunk(data: Buffer, stream?: number): Promise<string | undefined> {
    return this.#send({ op: 'chunk', stream }, data).then((r) => r?.chunk);
  }

  /** Append `data` to the running etag `stream` only (its own hash is known); false when the worker failed. */
  feed(data: Buffer, stream: number): Promise<boolean> {
    return this.#send({ op: 'feed', stream }, data).then((r) => r !== undefined);
  }

  /**
   * A running etag that starts as the content whose etag is `etag` (one of the last
   * {@link KEPT_STATES} this hasher finished): appended bytes then need no hashing of what came
   * before. Undefined when that state is not kept (or the worker failed).
   */
  resume(etag: string): Promise<number | undefined> {
    const stream = this.#nextStream++;
    return this.#send({ op: 'resume', stream, etag }, undefined).then((r) => (r?.resumed ? stream : undefined));
  }

  /** A new running etag: feed it with {@link chunk} or {@link feed}, end it with {@link finish} or {@link drop}. */
  openStream(): number {
    return this.#nextStream++;
  }

  /** Append `tail` (if any) to the running etag and return it, with the tail's own hash. */
  finish(stream: number, tail?: Buffer): Promise<{ etag: string; tail?: string | undefined } | undefined> {
    return this.#send({ op: 'finish', stream }, tail).then((r) => (r?.etag ? { etag: r.etag, tail: r.chunk } : undefined));
  }

  /** Forget a running etag that will not be finished. */
  drop(stream: number): void {
    if (this.#worker && !this.#failed) this.#worker.postMessage({ op: 'drop', stream });
  }

  /** Stop the worker; pending requests resolve to undefined. */
  async close(): Promise<void> {
    const w = this.#worker;
    this.#worker = undefined;
    this.#failed = true;
    this.#settleAll();
    if (w) await w.terminate();
  }

  #send(msg: { op: string; stream?: number | undefined; etag?: string }, data: Buffer | undefined): Promise<Reply | undefined> {
    const worker = this.#start();
    if (!worker) return Promise.resolve(undefined);
    const id = this.#nextId++;
    let payload: Payload | undefined;
    const transfer: ArrayBuffer[] = [];
    let shared: SharedArrayBuffer | undefined;
    if (data) {
      this.#bytesSent += data.byteLength;
      if (data.buffer instanceof SharedArrayBuffer) {
        shared = data.buffer;
        payload = { sab: shared, offset: data.byteOffset, length: data.byteLength };
      } else {
        // A private copy, moved (not copied again) to the worker.
        const copy = Uint8Array.prototype.slice.call(data);
        payload = { data: copy };
        transfer.push(copy.buffer as ArrayBuffer);
      }
    }
    return new Promise<Reply | undefined>((resolve) => {
      // Referenced only while something waits for it (it never keeps an idle process alive).
      if (this.#waiting.size === 0) worker.ref();
      this.#waiting.set(id, resolve);
      if (shared) this.#inFlight.set(shared, (this.#inFlight.get(shared) ?? 0) + 1);
      try {
        worker.postMessage({ ...msg, id, ...payload }, transfer);
      } catch {
        this.#waiting.delete(id);
        resolve(undefined);
      }
    }).finally(() => {
      if (shared) this.#landed(shared);
    });
  }

  /** One request reading `sab` is answered (or will never be). */
  #landed(sab: SharedArrayBuffer): void {
    const n = (this.#inFlight.get(sab) ?? 1) - 1;
    if (n > 0) return void this.#inFlight.set(sab, n);
    this.#inFlight.delete(sab);
    if (this.#releasing.delete(sab) && this.#pool.length < POOLED_CHUNKS) this.#pool.push(sab);
  }

  #start(): Worker | undefined {
    if (this.#failed) return undefined;
    if (this.#worker) return this.#worker;
    try {
      const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { sha256: this.#sha256 } });
      w.unref();
      w.on('message', (r: Reply) => {
        const resolve = this.#waiting.get(r.id);
        this.#waiting.delete(r.id);
        if (this.#waiting.size === 0) w.unref();
        resolve?.(r.error === undefined ? r : undefined);
      });
      const fail = () => {
        this.#failed = true;
        this.#worker = undefined;
        this.#settleAll();
      };
      w.on('error', fail);
      w.on('exit', fail);
      this.#worker = w;
      return w;
    } catch {
      this.#failed = true;
      return undefined;
    }
  }

  #settleAll(): void {
    for (const resolve of this.#waiting.values()) resolve(undefined);
    this.#waiting.clear();
  }
}
