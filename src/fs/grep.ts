/**
 * @module fs/grep
 * grep's line scanning, run off the main thread. A regular expression comes from the caller, and
 * a backtracking engine can take exponential time on one line (`(a+)+$` against `aaaa…!`): on the
 * main thread that would stop every face of the daemon (RPC, WebSocket, the FUSE mount) until it
 * ended. So:
 *
 * - V8's linear-time engine takes over any regex that backtracks excessively
 *   (`--enable-experimental-regexp-engine-on-excessive-backtracks`, set once for the process). It
 *   covers most patterns, but not every one: case-insensitive ones, backreferences and lookarounds
 *   stay on the backtracking engine;
 * - the scanning itself runs in a worker thread fed with batches of file content; a worker that
 *   answers no batch within the stall budget is terminated, and the grep fails with -32602
 *   naming the pattern. The main thread only lists files and copies their chunks out of the store.
 *
 * {@link grepWorkerMain} is the worker's whole program. It is started from its own source text
 * (`eval`), so it works the same from `src/` under a TypeScript loader, from `dist/` and from a
 * bundle: it must not refer to anything outside its own body.
 */
import { setFlagsFromString } from 'node:v8';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { InvalidParamsError } from '../core/errors.js';

setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

export interface GrepMatch {
  file: string;
  line: number;
  content: string;
  match: string;
}

/**
 * A batch: pieces of files' content in file order, laid end to end in `buffer`. Piece i is
 * bytes `ends[i-1]..ends[i]` of file `paths[i]`; `marks[i]` has bit 1 if it is the file's first
 * piece and bit 2 if it is its last.
 */
interface Batch {
  buffer: ArrayBuffer;
  paths: string[];
  ends: Uint32Array;
  marks: Uint8Array;
}

type ToWorker =
  | { type: 'start'; pattern: string; flags: string; prefilter: boolean; max: number; maxLine: number }
  | ({ type: 'batch' } & Batch);

/** The worker's answer to a batch: the files it finished in it, and whether max_results is reached. */
interface FromWorker { hits: GrepMatch[]; full: boolean }

/**
 * The worker's program: a grep job is a `start` message and then batches of segments, each
 * answered with the hits of the files that ended in it. A file's hits are released only at its
 * end: a file that turns out not to be UTF-8 contributes nothing, even if earlier chunks matched.
 * Memory stays bounded whatever the file: a line without end in sight is searched in its first
 * `maxLine` characters (what `content` then shows), the rest of it is skipped.
 */
export function grepWorkerMain(port: { on(e: 'message', f: (m: ToWorker) => void): void; postMessage(m: FromWorker): void }): void {
  let re = /(?:)/;
  let prefilter: RegExp | undefined;
  let max = 0;
  let maxLine = 0;
  let total = 0;
  // The file being scanned.
  let decoder = new TextDecoder('utf-8', { fatal: true });
  let fileHits: GrepMatch[] = [];
  let carry = '';
  let lineNo = 0;
  let skipping = false;
  let broken = false;

  const room = () => max - total - fileHits.length;
  const test = (path: string, whole: string) => {
    lineNo++;
    const raw = whole.length > maxLine ? whole.slice(0, maxLine) : whole;
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const m = re.exec(line);
    if (m) fileHits.push({ file: path, line: lineNo, content: line, match: m[0] });
  };
  const scan = (path: string, input: string, final: boolean) => {
    let text = input;
    if (skipping) {
      const nl = text.indexOf('\n');
      if (nl === -1) return;
      skipping = false;
      text = text.slice(nl + 1);
    }
    const lines = text.split('\n');
    carry = final ? '' : lines.pop()!;
    for (const raw of lines) {
      if (room() <= 0) return;
      test(path, raw);
    }
    if (carry.length > maxLine) {
      if (room() > 0) test(path, carry);
      else lineNo++;
      carry = '';
      skipping = true;
    }
  };
  const piece = (buffer: ArrayBuffer, path: string, start: number, end: number, first: boolean, last: boolean) => {
    if (first) {
      decoder = new TextDecoder('utf-8', { fatal: true });
      fileHits = [];
      carry = '';
      lineNo = 0;
      skipping = false;
      broken = false;
    }
    if (!broken) {
      try {
        const decoded = decoder.decode(new Uint8Array(buffer, start, end - start), { stream: !last });
        // Enough hits: the rest must still decode (a non-UTF-8 file contributes nothing), unscanned.
        if (room() > 0) {
          const text = carry + decoded;
          // Most files do not match at all: one test of the whole text skips splitting it into lines.
          if (!(first && last && prefilter && !prefilter.test(text))) {
            if (last && text.endsWith('\n')) scan(path, text.slice(0, -1), true);
            else scan(path, text, last);
          }
        }
      } catch (err) {
        if (!(err instanceof TypeError)) throw err;
        broken = true; // not UTF-8: skipped
      }
    }
    if (last && !broken) {
      total += fileHits.length;
      return fileHits;
    }
    return [];
  };
  port.on('message', (m) => {
    if (m.type === 'start') {
      re = new RegExp(m.pattern, m.flags);
      // Multiline, so ^ and $ anchor at line breaks; only where that test can never miss a per-line
      // match (decided by the caller).
      prefilter = m.prefilter ? new RegExp(m.pattern, m.flags + 'm') : undefined;
      max = m.max;
      maxLine = m.maxLine;
      total = 0;
      return;
    }
    const hits: GrepMatch[] = [];
    for (let i = 0; i < m.paths.length && total < max; i++) {
      const found = piece(m.buffer, m.paths[i]!, i === 0 ? 0 : m.ends[i - 1]!, m.ends[i]!, (m.marks[i]! & 1) !== 0, (m.marks[i]! & 2) !== 0);
      for (const h of found) hits.push(h);
    }
    port.postMessage({ hits, full: total >= max });
  });
}

/** Options of {@link Grepper}. */
export interface GrepperOptions {
  /** A worker that answers no batch within this many milliseconds is stopped and the grep fails. */
  stallMs?: number;
  /** Bytes of content per batch sent to the worker. */
  batchBytes?: number;
  /** Workers kept idle for the next grep. */
  idleWorkers?: number;
  /** Greps running at once (one worker each); more wait their turn. Default: the number of CPUs. */
  maxWorkers?: number;
}

/** A file to search: its path and its content, chunk by chunk (read lazily). */
export interface GrepFile {
  path: string;
  chunkCount: number;
  /** How many bytes chunk i holds (known without reading it). */
  chunkSize(i: number): number;
  /**
   * Chunk i copied into `target` at `at` (room for {@link chunkSize} bytes). False when the file
   * changed under the grep and lost it: the file is then left out.
   */
  chunkInto(i: number, target: Uint8Array, at: number): boolean;
}

const FIRST_BATCH_BYTES = 32 * 1024;

const WORKER_SOURCE = `(${grepWorkerMain.toString()})(require('node:worker_threads').parentPort)`;

/**
 * Runs grep jobs on worker threads, one worker per job and at most one job per CPU at once (more
 * workers would only compete for the same cores, and each costs a start-up), keeping a few idle
 * for reuse.
 */
export class Grepper {
  readonly #stallMs: number;
  readonly #batchBytes: number;
  readonly #idleMax: number;
  readonly #maxWorkers: number;
  readonly #idle: Worker[] = [];
  /** Workers started and not yet terminated, idle ones included. */
  #live = 0;
  readonly #queue: (() => void)[] = [];

  constructor(opts: GrepperOptions = {}) {
    this.#stallMs = opts.stallMs ?? 5000;
    this.#batchBytes = opts.batchBytes ?? 1024 * 1024;
    this.#maxWorkers = Math.max(1, opts.maxWorkers ?? availableParallelism());
    this.#idleMax = Math.min(opts.idleWorkers ?? 2, this.#maxWorkers);
  }

  /** Compiles the pattern here first, so an invalid one is -32602 before any worker is involved. */
  static compile(pattern: string, ignoreCase: boolean): RegExp {
    try {
      return new RegExp(pattern, ignoreCase ? 'i' : '');
    } catch (err) {
      throw new InvalidParamsError(`Invalid params: 'pattern': invalid regular expression: ${(err as Error).message}`, { param: 'pattern' });
    }
  }

  async run(opts: { pattern: string; ignoreCase: boolean; max: number; maxLine: number; files: Iterable<GrepFile> }): Promise<GrepMatch[]> {
    const re = Grepper.compile(opts.pattern, opts.ignoreCase);
    const worker = await this.#acquire();
    const job = new Job(worker, this.#stallMs, opts.pattern);
    try {
      // The whole-text prefilter can hide a per-line match where lookarounds see across a line
      // break or `$` would match before \r\n: it is used only for patterns with neither.
      const prefilter = !/\(\?<?[=!]|\$/.test(opts.pattern);
      worker.postMessage({ type: 'start', pattern: opts.pattern, flags: re.flags, prefilter, max: opts.max, maxLine: opts.maxLine } satisfies ToWorker);
      const out: GrepMatch[] = [];
      let full = false;
      const take = (r: FromWorker) => {
        for (const h of r.hits) out.push(h);
        full ||= r.full;
      };
      // Batches start small, so a grep that reaches max_results early reads little, and grow.
      let capacity = Math.min(FIRST_BATCH_BYTES, this.#batchBytes);
      let view = new Uint8Array(capacity);
      let paths: string[] = [];
      let ends: number[] = [];
      let marks: number[] = [];
      let bytes = 0;
      const send = async () => {
        const msg: ToWorker = {
          type: 'batch', buffer: view.buffer as ArrayBuffer, paths, ends: Uint32Array.from(ends), marks: Uint8Array.from(marks),
        };
        capacity = Math.min(capacity * 2, this.#batchBytes);
        view = new Uint8Array(capacity);
        paths = [];
        ends = [];
        marks = [];
        bytes = 0;
        // Two batches in flight: the next is copied out of the store while the worker scans.
        if (job.inFlight >= 2) take(await job.next());
        job.post(msg, [msg.buffer]);
      };
      for (const f of opts.files) {
        if (full) break;
        for (let i = 0; i < f.chunkCount && !full; i++) {
          const size = f.chunkSize(i);
          if (bytes + size > view.byteLength) {
            if (bytes > 0) await send();
            if (size > view.byteLength) view = new Uint8Array(size);
          }
          // Copied after any wait, straight into the batch. Gone midway: the file never gets its
          // last piece, so the worker drops what it found in it.
          if (!f.chunkInto(i, view, bytes)) break;
          bytes += size;
          paths.push(f.path);
          ends.push(bytes);
          marks.push((i === 0 ? 1 : 0) | (i === f.chunkCount - 1 ? 2 : 0));
        }
      }
      if (bytes > 0 && !full) await send();
      while (job.inFlight > 0) take(await job.next());
      this.#release(worker);
      return out.length > opts.max ? out.slice(0, opts.max) : out;
    } catch (err) {
      this.#discard(worker);
      throw err;
    } finally {
      job.dispose();
    }
  }

  /** Stops the idle workers. */
  async close(): Promise<void> {
    const idle = this.#idle.splice(0);
    this.#live -= idle.length;
    await Promise.all(idle.map((w) => w.terminate()));
  }

  /** An idle worker, else a new one if under the limit, else the next one released. */
  async #acquire(): Promise<Worker> {
    while (this.#idle.length === 0 && this.#live >= this.#maxWorkers) await new Promise<void>((resolve) => this.#queue.push(resolve));
    const idle = this.#idle.pop();
    if (idle) return idle;
    this.#live++;
    try {
      return await this.#spawn();
    } catch (err) {
      this.#live--;
      this.#queue.shift()?.();
      throw err;
    }
  }

  /** A new worker, once running: its start-up does not count against the stall budget. */
  async #spawn(): Promise<Worker> {
    // Plain JavaScript: none of the parent's loaders or flags (a TypeScript loader under tests).
    const w = new Worker(WORKER_SOURCE, { eval: true, execArgv: [] });
    await once(w, 'online');
    // A worker never keeps the process alive by itself; a grep's stall timer does while it waits.
    w.unref();
    // An idle worker that fails is dropped (a busy one's failure also fails its grep, in Job).
    w.on('error', () => {
      const i = this.#idle.indexOf(w);
      if (i >= 0) this.#discard(w);
    });
    return w;
  }

  #release(worker: Worker): void {
    if (this.#idle.length < this.#idleMax || this.#queue.length > 0) {
      this.#idle.push(worker);
      this.#queue.shift()?.();
    } else {
      this.#discard(worker);
    }
  }

  /** Terminate a worker (failed, stalled or surplus) and let a waiting grep start another. */
  #discard(worker: Worker): void {
    const i = this.#idle.indexOf(worker);
    if (i >= 0) this.#idle.splice(i, 1);
    void worker.terminate();
    this.#live--;
    this.#queue.shift()?.();
  }
}

/** One grep's traffic with its worker: answers in order, and the stall watchdog. */
class Job {
  inFlight = 0;
  readonly #waiting: { resolve: (r: FromWorker) => void; reject: (e: Error) => void }[] = [];
  readonly #answers: FromWorker[] = [];
  #failure: Error | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #onMessage: (r: FromWorker) => void;
  readonly #onError: (e: Error) => void;

  constructor(private readonly worker: Worker, private readonly stallMs: number, private readonly pattern: string) {
    this.#onMessage = (r) => {
      this.inFlight--;
      this.#arm();
      const w = this.#waiting.shift();
      if (w) w.resolve(r);
      else this.#answers.push(r);
    };
    this.#onError = (e) => this.#fail(e);
    worker.on('message', this.#onMessage);
    worker.on('error', this.#onError);
  }

  post(msg: ToWorker, transfer: ArrayBuffer[]): void {
    this.inFlight++;
    if (this.inFlight === 1) this.#arm();
    this.worker.postMessage(msg, transfer);
  }

  next(): Promise<FromWorker> {
    if (this.#failure) return Promise.reject(this.#failure);
    const ready = this.#answers.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.worker.off('message', this.#onMessage);
    this.worker.off('error', this.#onError);
  }

  /** (Re)starts the watchdog while batches are outstanding: each answer gets the full budget. */
  #arm(): void {
    clearTimeout(this.#timer);
    if (this.inFlight === 0) return;
    this.#timer = setTimeout(() => {
      this.#fail(new InvalidParamsError(
        `Invalid params: 'pattern': the regular expression ${JSON.stringify(this.pattern.slice(0, 100))} was stopped after `
        + `${this.stallMs} ms on one batch of text (it backtracks too much: simplify it)`,
        { param: 'pattern' },
      ));
    }, this.stallMs);
  }

  #fail(err: Error): void {
    if (this.#failure) return;
    this.#failure = err;
    void this.worker.terminate();
    for (const w of this.#waiting.splice(0)) w.reject(err);
  }
}
