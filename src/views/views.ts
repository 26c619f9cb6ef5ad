/**
 * @module views/views
 * Virtual parsed views (spec §4.4 `list(show_parsed)`, upstream-behaviour §2.5): next to every
 * stored document `X.EXT` with a parseable extension there is a read-only file
 * `X_parsed.EXT.md` holding its text as markdown. Views are never stored: they exist exactly
 * while their original does, a stored file of the same name always wins, and their content is
 * made on demand from the original's content.
 *
 * Conversion is bounded so a huge or hostile document cannot take the daemon down:
 * - originals larger than `maxInputBytes` are not converted, nor zip-based ones whose parts expand
 *   to more than `maxExpandedBytes` (checked with zlib's output limit before a library opens them:
 *   the heap limit below does not cover ArrayBuffers);
 * - the converters run in a worker thread (loaded only when a view is first read, so they cost
 *   nothing at start-up), with a V8 heap limit (`maxHeapMb`) and a time limit (`timeoutMs`)
 *   after which the worker is terminated; an idle worker exits after `idleMs`;
 * - the markdown is cut at `maxOutputChars`;
 * - results are cached by the original's etag (its content hash) up to `cacheBytes` in all.
 *
 * A document that cannot be converted (parser error, unsupported format, limit reached) reads as
 * a short markdown note saying why and where the original is, not as the raw bytes upstream
 * gives: the view's name promises markdown text, and the bytes are one path away.
 */
import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { PermissionDeniedError } from '../core/errors.js';
import { normalizePath } from '../core/paths.js';
import type { FsService, ListEntry, FileMetadata, ShownEntry } from '../fs/service.js';
import type { FileRecord } from '../fs/records.js';
import { originalPathOf, parseableExt, viewPathOf } from './names.js';
import type { ConvertAnswer, ConvertJob } from './worker.js';

export { PARSEABLE_EXTENSIONS, originalPathOf, viewPathOf } from './names.js';

export interface ParsedViewsOptions {
  /** Originals larger than this are not converted (default 64 MiB). */
  maxInputBytes?: number;
  /** A zip-based document (docx, xlsx, pptx, odt, ods, odp, epub) expanding to more is not converted (default 256 MiB). */
  maxExpandedBytes?: number;
  /** The markdown is cut here (default 16 Mi characters). */
  maxOutputChars?: number;
  /** A conversion still running after this is stopped (default 30 s). */
  timeoutMs?: number;
  /** V8 old-generation heap limit of the conversion worker (default 512 MiB). */
  maxHeapMb?: number;
  /** Converted views kept in memory, in bytes (default 32 MiB). */
  cacheBytes?: number;
  /** An idle worker exits after this (default 10 s), giving its memory back. */
  idleMs?: number;
}

/** A view's content and the facts that describe it. */
export interface RenderedView {
  content: Buffer;
  /** SHA-256 of `content`, like every etag. */
  etag: string;
  /** Whether the conversion succeeded (false: `content` is a note saying why not). */
  converted: boolean;
}

type Outcome = { text: string } | { error: string; cache: boolean };

const CONTENT_TYPE = 'text/markdown';
const VERBS = { write: 'write', delete: 'delete', rename: 'rename', mkdir: 'create a directory at', rmdir: 'remove' } as const;

const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

export class ParsedViews {
  readonly #fs: FsService;
  readonly #maxInput: number;
  readonly #maxOutput: number;
  readonly #maxExpanded: number;
  readonly #timeoutMs: number;
  readonly #maxHeapMb: number;
  readonly #cacheBytes: number;
  readonly #idleMs: number;
  readonly #cache = new Map<string, RenderedView>();
  #cached = 0;
  readonly #inflight = new Map<string, Promise<RenderedView>>();
  #worker: Worker | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #nextId = 0;
  #closed = false;

  constructor(fs: FsService, opts: ParsedViewsOptions = {}) {
    this.#fs = fs;
    this.#maxInput = opts.maxInputBytes ?? 64 * 1024 * 1024;
    this.#maxOutput = opts.maxOutputChars ?? 16 * 1024 * 1024;
    this.#maxExpanded = opts.maxExpandedBytes ?? 256 * 1024 * 1024;
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
    this.#maxHeapMb = opts.maxHeapMb ?? 512;
    this.#cacheBytes = opts.cacheBytes ?? 32 * 1024 * 1024;
    this.#idleMs = opts.idleMs ?? 10_000;
    // Every change to a view is refused where every face's changes pass (RPC, the POSIX methods,
    // uploads, the FUSE mount), like a read-only mount's.
    // A change the FUSE mount answered already was checked then, against what it showed (its
    // queued changes over the store): the store alone may not show the original yet, or still.
    fs.addGuard((kind, paths, _subtree, { shown, answered }) => {
      if (answered) return;
      // Paths here are normalised; only `….md` names can be views (the common case costs one test).
      for (const p of paths) if (p.endsWith('.md')) this.refuseChange(p, VERBS[kind], shown);
    });
  }

  /**
   * The original's path when `path` is a view: shaped like one, not a stored entry itself, and
   * its original a stored regular file. Undefined otherwise (a malformed path is still -32002).
   */
  originalOf(path: string, shown: ShownEntry = (p) => this.#fs.stat(p)): string | undefined {
    const p = normalizePath(path);
    const original = originalPathOf(p);
    if (original === undefined || shown(p) !== undefined) return undefined;
    const rec = shown(original);
    return rec?.kind === 'file' && !rec.symlink ? original : undefined;
  }

  /** -32004 (EROFS on a mount) when `path` is a view (as `shown` shows the tree): they are read-only. */
  refuseChange(path: string, action: string, shown?: ShownEntry): void {
    const original = this.originalOf(path, shown);
    if (original !== undefined) {
      throw new PermissionDeniedError(`Read-only parsed view: cannot ${action} ${normalizePath(path)} (a view of ${original})`,
        { path: normalizePath(path), original, errno: 'EROFS' });
    }
  }

  /**
   * A listing with the views of its parseable files added, sorted like the listing. A view
   * entry is its original's entry with `path` and `content_type` changed: `size`, `etag` and
   * `version` stay the original's (knowing the markdown's would mean converting every document
   * on every listing); `get_metadata` and `read` report the view's own. A stored entry of the
   * same name hides the view.
   */
  withViews(entries: ListEntry[]): ListEntry[] {
    let views: ListEntry[] | undefined;
    for (const e of entries) {
      if (e.is_directory || parseableExt(e.path) === undefined || this.#isSymlink(e.path)) continue;
      (views ??= []).push({ ...e, path: viewPathOf(e.path)!, content_type: CONTENT_TYPE });
    }
    if (views === undefined) return entries;
    views.sort(byPath);
    // Merge the two sorted lists; a view whose name is taken by a stored entry is dropped.
    const out: ListEntry[] = [];
    let i = 0;
    for (const v of views) {
      while (i < entries.length && entries[i]!.path < v.path) out.push(entries[i++]!);
      if (i < entries.length && entries[i]!.path === v.path) continue;
      out.push(v);
    }
    while (i < entries.length) out.push(entries[i++]!);
    return out;
  }

  #isSymlink(path: string): boolean {
    const rec = this.#fs.stat(path);
    return rec?.kind === 'file' && rec.symlink === true;
  }

  /** Metadata of the view at `path` whose original is `original`; converts (or uses the cache). */
  async metadata(path: string, original: string): Promise<FileMetadata> {
    const { record, view } = await this.read(original);
    return {
      path: normalizePath(path), size: view.content.length, etag: view.etag, version: record.version,
      created_at: new Date(record.created), modified_at: new Date(record.modified), content_type: CONTENT_TYPE, is_directory: false,
    };
  }

  /** The view of the stored file `original`: its record and the markdown. */
  async read(original: string): Promise<{ record: FileRecord; view: RenderedView }> {
    const record = this.#fs.file(original);
    const ext = parseableExt(original)!;
    const key = `${ext}\0${record.etag}`;
    const hit = this.#cache.get(key);
    if (hit) {
      this.#cache.delete(key);
      this.#cache.set(key, hit);
      return { record, view: hit };
    }
    let pending = this.#inflight.get(key);
    if (!pending) {
      pending = this.#render(original, record, ext, key).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    return { record, view: await pending };
  }

  async #render(original: string, record: FileRecord, ext: string, key: string): Promise<RenderedView> {
    let outcome: Outcome;
    if (record.size > this.#maxInput) {
      outcome = { error: `it is ${record.size} bytes, over the ${this.#maxInput}-byte limit for conversion`, cache: true };
    } else {
      outcome = await this.#convert(ext, this.#fs.content(record));
    }
    let text: string;
    if ('text' in outcome) {
      text = outcome.text.length > this.#maxOutput
        ? outcome.text.slice(0, this.#maxOutput) + `\n\n> (svc: the text was cut at ${this.#maxOutput} characters)\n`
        : outcome.text;
    } else {
      const name = original.slice(original.lastIndexOf('/') + 1);
      text = `> svc could not convert \`${name}\` to text: ${outcome.error}.\n> The original file is \`${original}\`.\n`;
    }
    const content = Buffer.from(text, 'utf8');
    const view: RenderedView = { content, etag: createHash('sha256').update(content).digest('hex'), converted: 'text' in outcome };
    if (('text' in outcome || outcome.cache) && content.length <= this.#cacheBytes / 4) this.#remember(key, view);
    return view;
  }

  #remember(key: string, view: RenderedView): void {
    this.#cache.set(key, view);
    this.#cached += view.content.length;
    for (const [k, v] of this.#cache) {
      if (this.#cached <= this.#cacheBytes) break;
      this.#cache.delete(k);
      this.#cached -= v.content.length;
    }
  }

  /** Run one conversion in the worker, one at a time. */
  #convert(ext: string, data: Buffer): Promise<Outcome> {
    const run = this.#queue.then(() => this.#convertNow(ext, data));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #convertNow(ext: string, data: Buffer): Promise<Outcome> {
    if (this.#closed) return Promise.resolve({ error: 'the daemon is shutting down', cache: false });
    clearTimeout(this.#idleTimer);
    const worker = this.#spawn();
    const id = ++this.#nextId;
    return new Promise<Outcome>((resolve) => {
      const finish = (outcome: Outcome, kill: boolean) => {
        clearTimeout(timer);
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        if (kill) this.#drop(worker);
        else this.#idleTimer = setTimeout(() => this.#drop(worker), this.#idleMs).unref();
        resolve(outcome);
      };
      const onMessage = (a: ConvertAnswer) => {
        if (a.id !== id) return;
        finish('text' in a ? { text: a.text } : { error: a.unsupported ? `svc has no converter for ${ext} files` : `the parser failed (${a.error})`, cache: true }, false);
      };
      const onError = (err: Error) => finish({ error: `the converter stopped (${err.message})`, cache: false }, true);
      const onExit = (code: number) => finish({ error: `the converter exited (code ${code})`, cache: false }, true);
      const timer = setTimeout(() => finish({ error: `it took longer than ${this.#timeoutMs} ms`, cache: false }, true), this.#timeoutMs);
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
      worker.postMessage({ id, ext, data: new Uint8Array(data), maxExpanded: this.#maxExpanded } satisfies ConvertJob);
    });
  }

  #spawn(): Worker {
    if (this.#worker) return this.#worker;
    // From src/ under a TypeScript loader the worker is worker.ts (the loader is inherited with execArgv).
    const file = import.meta.url.endsWith('.ts') ? './worker.ts' : './worker.js';
    const worker = new Worker(new URL(file, import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: this.#maxHeapMb },
      stdout: true, stderr: true,
    });
    // The converters' own console chatter (pdf.js warnings) is not the daemon's log.
    worker.stdout.resume();
    worker.stderr.resume();
    // Failures are taken by the job that is running; one between jobs must not be unhandled.
    worker.on('error', () => undefined);
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #drop(worker: Worker): void {
    if (this.#worker === worker) this.#worker = undefined;
    void worker.terminate();
  }

  /** Stop the worker (daemon shutdown). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    const worker = this.#worker;
    this.#worker = undefined;
    if (worker) await worker.terminate();
  }

  /** The content type of every view. */
  static readonly contentType = CONTENT_TYPE;
}
