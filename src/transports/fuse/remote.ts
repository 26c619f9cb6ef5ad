/**
 * @module transports/fuse/remote
 * The remote FUSE backend: any svc daemon through the typed RPC client (`svc mount --remote-url`).
 * The mount acts as the API key's subject, so every operation is checked by the daemon exactly as
 * an RPC call is. Attributes are cached for a short time and dropped as soon as the daemon's change
 * bus (WebSocket `watch`) reports a change, so changes from any face show up within a second.
 *
 * Files stream both ways, one chunk per request: reads with `read_range`, commits as an upload
 * (`upload_begin`, `upload_part` per chunk with a few in flight, `upload_commit`: one version), so
 * neither side holds a large file whole and no request exceeds the daemon's --max-body.
 */
import WebSocket from 'ws';
import { tmpdir } from 'node:os';
import type { Logger } from '../../core/log.js';
import type { ChangeEvent } from '../../core/events.js';
import { SvcError, type ErrorCodeValue } from '../../core/errors.js';
import type { EntryAttributes } from '../../fs/records.js';
import { CHUNK_SIZE, type AttributeChanges } from '../../fs/service.js';
import type { PosixEntry } from '../../fs/posix.js';
import { RpcError, SvcClient, type Api, type MethodName, type Wire } from '../../client/index.js';
import type { ParamsOf, ResultOf } from '../../core/method.js';
import { parentOf, isWithin } from '../../core/paths.js';
import type { CommitOptions, CommitPiece, CommitResult, FuseBackend, NodeInfo, SpaceInfo, StoredContent, VersionInfo } from './backend.js';

/**
 * How long a cached attribute may be served without a change event (ms). A change that publishes
 * none (RPC `set_attributes`: a chmod, chown or utimens through another face) shows up once this
 * and then the kernel's cache (KERNEL_CACHE_SECONDS, 0.5 s, filled from this one at worst just
 * before it expires) have run out: 400 + 500 ms, within the second the mount promises.
 */
const ATTR_TTL_MS = 400;
const RECONNECT_MS = 1000;
/** The change watch pings the daemon this often… */
const PING_MS = 1500;
/**
 * …and a daemon silent for this long (no pong, no event) is taken as not answering: the calls
 * waiting for it fail (EIO), and new ones fail at once, until it answers a ping again. A daemon
 * that is hung, stopped, or behind a network that drops packets would otherwise hold every access
 * of the mount for the RPC client's 120 s, in the kernel, where Ctrl-C cannot end it.
 */
const SILENT_MS = 5000;
/** Parts of one upload sent at the same time. */
const UPLOAD_WINDOW = 4;
/** What statfs reports: the daemon's disk is not visible over RPC. */
const REPORTED_SPACE: SpaceInfo = { blockSize: 4096, blocks: 2 ** 32 - 1, blocksFree: 2 ** 31, files: 2 ** 32 - 1, filesFree: 2 ** 31 };

/** The error a remote mount's start fails with when its daemon cannot be reached (`svc mount` exits 3 then, as every client command does). */
export class UnreachableError extends Error {}

export interface RemoteBackendOptions {
  url: string;
  apiKey?: string | undefined;
  log: Logger;
  /** Injected for tests (the RPC calls; the change watch uses its own WebSocket). */
  fetch?: typeof fetch;
}

function nodeOf(e: Wire<PosixEntry>): NodeInfo {
  const mtime = Date.parse(e.modified_at);
  // A daemon from before changed_at: the mtime.
  const ctime = e.changed_at === undefined ? mtime : Date.parse(e.changed_at);
  return {
    kind: e.kind, size: e.size, mode: e.mode ?? undefined, uid: e.uid ?? undefined, gid: e.gid ?? undefined,
    mtime, ctime, version: e.version ?? undefined, etag: e.etag ?? undefined,
  };
}

/** Histories the remote mount keeps listed (the files last browsed under `/.versions`). */
const HISTORIES_KEPT = 64;

type HistoryEntry = Wire<ResultOf<Api['list_versions']>>[number];

function versionInfo(v: HistoryEntry): VersionInfo {
  return { version: v.version, size: v.size, modified: Date.parse(v.modified_at) };
}

export class RemoteBackend implements FuseBackend {
  readonly description: string;
  readonly spoolDir = tmpdir();
  readonly #client: SvcClient;
  readonly #opts: RemoteBackendOptions;
  readonly #cache = new Map<string, { info: NodeInfo | undefined; at: number }>();
  /** Histories listed lately, by path, oldest first ({@link #history}). */
  readonly #histories = new Map<string, { key: string; list: HistoryEntry[] }>();
  readonly #listeners = new Set<(e: ChangeEvent) => void>();
  readonly #lostListeners = new Set<() => void>();
  /** A change watch was answered before: a later one follows a disconnection, which may have missed changes. */
  #watched = false;
  /**
   * Counts invalidations: change events, this mount's own changes, lost watches. An answer is
   * cached only if none came while it was asked for: the daemon may have answered before a change
   * whose event arrived first, and caching it would serve the old attributes after the event said
   * they changed (until {@link ATTR_TTL_MS}, and the kernel's cache after that).
   */
  #generation = 0;
  #ws: WebSocket | undefined;
  #closed = false;
  #reconnect: NodeJS.Timeout | undefined;
  /** Aborted while the daemon is silent (SILENT_MS); a new one once it answers again. */
  #silent = new AbortController();
  #lastHeard = Date.now();
  #pinger: NodeJS.Timeout | undefined;

  constructor(opts: RemoteBackendOptions) {
    this.#opts = opts;
    this.description = opts.url;
    const fetchOf = opts.fetch ?? fetch;
    this.#client = new SvcClient({
      url: opts.url, apiKey: opts.apiKey,
      // Every call also ends when the daemon is found silent (SILENT_MS).
      fetch: (input, init) => fetchOf(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, this.#silent.signal]) : this.#silent.signal }),
    });
  }

  /** Check the daemon answers and serves the POSIX methods, and start watching its changes. */
  async connect(): Promise<void> {
    let methods: string[];
    try {
      methods = (await this.#client.status()).methods;
    } catch (err) {
      if (err instanceof RpcError && err.code === -32003) {
        throw new Error(`the daemon at ${this.#opts.url} refused the credentials (--api-key / SVC_API_KEY): ${err.message}`);
      }
      throw new UnreachableError(`cannot reach the daemon at ${this.#opts.url}: ${(err as Error).message}`);
    }
    const missing = ['stat', 'readdir', 'read_range', 'set_attributes', 'symlink', 'upload_begin', 'upload_part', 'upload_commit', 'upload_abort'].filter((m) => !methods.includes(m));
    if (missing.length) throw new Error(`the daemon at ${this.#opts.url} is too old to be mounted (no ${missing.join(', ')})`);
    await this.#watch();
  }

  async stat(path: string): Promise<NodeInfo | undefined> {
    const hit = this.#cache.get(path);
    if (hit && Date.now() - hit.at < ATTR_TTL_MS) return hit.info;
    const generation = this.#generation;
    const e = await this.#call('stat', { path });
    const info = e ? nodeOf(e) : undefined;
    if (generation === this.#generation) this.#cache.set(path, { info, at: Date.now() });
    return info;
  }

  async list(dir: string): Promise<[string, NodeInfo][]> {
    const generation = this.#generation;
    const entries = await this.#call('readdir', { path: dir });
    const now = Date.now();
    const fresh = generation === this.#generation;
    const prefix = dir === '/' ? 1 : dir.length + 1;
    return entries.map((e) => {
      const info = nodeOf(e);
      if (fresh) this.#cache.set(e.path, { info, at: now });
      return [e.path.slice(prefix), info];
    });
  }

  async content(path: string): Promise<StoredContent> {
    this.#cache.delete(path);
    const info = await this.stat(path);
    if (!info) throw new SvcError(-32000, `File not found: ${path}`, { path });
    if (info.kind === 'dir') throw new SvcError(-32005, `Is a directory: ${path}`, { path, errno: 'EISDIR' });
    return this.#stored(path, info.version!, info.size, info.etag!);
  }

  /**
   * Asked at open(2), as a local disk refuses there: an upload begun and abandoned is checked by
   * the daemon as the commit will be (permissions, read-only svc mounts, parsed views). A refusal
   * found only at the flush is lost on programs that do not check close() (a shell's `>`).
   */
  async checkWritable(path: string): Promise<void> {
    const { upload_id } = await this.#call('upload_begin', { path });
    await this.#call('upload_abort', { upload_id }).catch(() => undefined);
  }

  async commit(path: string, pieces: CommitPiece[], opts: CommitOptions = {}): Promise<CommitResult> {
    this.#invalidate(path);
    if (opts.symlink) {
      const target = Buffer.concat(await Promise.all(pieces.map((p) => p.read()))).toString();
      const r = await this.#call('symlink', { path, target, ...opts.attributes });
      return { version: r.version, etag: r.etag, size: r.size };
    }
    const { upload_id } = await this.#call('upload_begin', { path });
    try {
      // A few parts in flight; each is read (from memory, the spool or the daemon) only when sent.
      let next = 0;
      const send = async (): Promise<void> => {
        for (let i = next++; i < pieces.length; i = next++) {
          await this.#call('upload_part', { upload_id, index: i, content: await pieces[i]!.read() });
        }
      };
      await Promise.all(Array.from({ length: Math.min(UPLOAD_WINDOW, pieces.length) }, send));
      const { mode, uid, gid } = opts.attributes ?? {};
      const r = await this.#call('upload_commit', {
        upload_id, size: pieces.reduce((n, p) => n + p.size, 0), mode, uid, gid,
        modified_at: opts.modified === undefined ? undefined : new Date(opts.modified).toISOString(),
      });
      return { version: r.version, etag: r.etag, size: r.size };
    } catch (err) {
      await this.#call('upload_abort', { upload_id }).catch(() => undefined);
      throw err;
    } finally {
      this.#invalidate(path);
    }
  }

  async remove(path: string): Promise<void> {
    await this.#changing([path], () => this.#call('delete', { path }));
  }

  async rename(from: string, to: string): Promise<void> {
    await this.#changing([from, to], () => this.#call('rename', { old_path: from, new_path: to, overwrite: true }));
  }

  async mkdir(path: string, attributes: EntryAttributes): Promise<void> {
    await this.#changing([path], () => this.#call('mkdir', { path }));
    await this.#setAttributes(path, attributes);
  }

  async rmdir(path: string): Promise<void> {
    await this.#changing([path], () => this.#call('rmdir', { path }));
  }

  async setAttributes(path: string, changes: AttributeChanges): Promise<void> {
    await this.#setAttributes(path, changes);
  }

  async versions(path: string): Promise<VersionInfo[]> {
    return (await this.#history(path)).map(versionInfo).reverse();
  }

  async version(path: string, version: number): Promise<VersionInfo | undefined> {
    const v = await this.#historyEntry(path, version);
    return v && versionInfo(v);
  }

  async versionContent(path: string, version: number): Promise<StoredContent> {
    const v = await this.#historyEntry(path, version);
    if (!v) throw new SvcError(-32000, `Version ${version} not found for ${path}`, { path, version });
    return this.#stored(path, version, v.size, v.etag);
  }

  /** Version `version` of `path` from its kept history, or from the daemon when that has none (listed again). */
  async #historyEntry(path: string, version: number): Promise<HistoryEntry | undefined> {
    const find = (list: HistoryEntry[]) => list.find((x) => x.version === version);
    return find(await this.#history(path)) ?? find(await this.#history(path, true));
  }

  /**
   * A file's versions (the daemon's `list_versions`, newest first), kept while the file's current
   * version and etag are those they were listed with: a history only grows, so the list is still
   * whole until the file changes (a delete and a file made again have another current version or
   * etag; the attributes they are compared with follow change events). Without it, each lookup
   * and each open below `/.versions/<file>/` listed the whole history again: reading every version
   * of a file with N of them took N² entries over the wire. `fresh`: listed again in any case (a
   * version the kept list lacks, in case the attributes it was checked against were behind).
   */
  async #history(path: string, fresh = false): Promise<HistoryEntry[]> {
    const info = await this.stat(path);
    const key = info?.kind === 'file' ? `${info.version}:${info.etag}` : undefined;
    const kept = this.#histories.get(path);
    if (!fresh && key !== undefined && kept?.key === key) return kept.list;
    const list = await this.#call('list_versions', { path });
    // Kept only if it is the history of the file as stat showed it (its newest version that one).
    if (key !== undefined && list[0] && `${list[0].version}:${list[0].etag}` === key) {
      this.#histories.delete(path);
      this.#histories.set(path, { key, list });
      if (this.#histories.size > HISTORIES_KEPT) this.#histories.delete(this.#histories.keys().next().value!);
    }
    return list;
  }

  async space(): Promise<SpaceInfo> {
    return REPORTED_SPACE;
  }

  onChange(listener: (e: ChangeEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  onLostChanges(listener: () => void): () => void {
    this.#lostListeners.add(listener);
    return () => this.#lostListeners.delete(listener);
  }

  /** Every RPC write is answered only after its durable commit: nothing left to wait for. */
  async sync(): Promise<void> {}

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#reconnect);
    clearInterval(this.#pinger);
    this.#ws?.close();
  }

  // ---------------------------------------------------------------- internals

  async #setAttributes(path: string, changes: AttributeChanges): Promise<void> {
    this.#invalidate(path);
    const { mode, uid, gid, modified } = changes;
    if (mode === undefined && uid === undefined && gid === undefined && modified === undefined) return;
    await this.#call('set_attributes', {
      path, mode, uid, gid, modified_at: modified === undefined ? undefined : new Date(modified).toISOString(),
    });
  }

  /** A call whose JSON-RPC errors come back as SvcErrors (the operations map those to errno). */
  async #call<M extends MethodName>(method: M, params: ParamsOf<Api[M]>): Promise<Wire<ResultOf<Api[M]>>> {
    try {
      return await this.#client.call(method, params);
    } catch (err) {
      if (err instanceof RpcError) throw new SvcError(err.code as ErrorCodeValue, err.message, err.data as Record<string, unknown> | undefined);
      throw err;
    }
  }

  /**
   * A stored version, read by path and version number (the wire's `read_range`). When the open file
   * it backs moves (it or a directory above it renamed), `moved` points it at the new name, where
   * the next read finds its version again by etag: a rename over a file gives the content the
   * next version number of that name.
   */
  #stored(path: string, version: number, size: number, etag: string): StoredContent {
    let at: Promise<{ path: string; version: number }> = Promise.resolve({ path, version });
    const read = async (offset: number, length: number) => {
      const where = await at;
      return this.#call('read_range', { path: where.path, offset, length, version: where.version });
    };
    return {
      size, version, etag,
      hash: () => undefined,
      load: (i) => read(i * CHUNK_SIZE, CHUNK_SIZE),
      fetchRange: (i, from, to) => read(i * CHUNK_SIZE + from, to - from),
      moved: (to) => {
        at = at.then(async () => {
          this.#cache.delete(to);
          const info = await this.stat(to);
          if (info?.etag !== etag || info.version === undefined) {
            throw new SvcError(-32000, `File not found: ${to} no longer holds what was opened as ${path}`, { path: to });
          }
          return { path: to, version: info.version };
        });
        // Failed, it fails the reads that follow; none may follow (an unhandled rejection ends the process).
        at.catch(() => undefined);
      },
    };
  }

  /** The daemon answered on the watch: calls go to it again. */
  #heard(): void {
    this.#lastHeard = Date.now();
    if (this.#silent.signal.aborted) {
      this.#silent = new AbortController();
      this.#opts.log.info({ url: this.#opts.url }, 'the daemon answers again');
    }
  }

  /**
   * A change of the names `paths` (and so of their directories' times): what is cached of them is
   * dropped before it and again once answered, so a stat made meanwhile caches nothing old.
   */
  async #changing<T>(paths: readonly string[], change: () => Promise<T>): Promise<T> {
    for (const p of paths) this.#invalidate(p);
    try {
      return await change();
    } finally {
      for (const p of paths) this.#invalidate(p);
    }
  }

  #invalidate(path: string): void {
    this.#generation++;
    this.#cache.delete(path);
    this.#cache.delete(parentOf(path));
  }

  #onEvent(event: ChangeEvent): void {
    if (event.type === 'rename' || event.type === 'rmdir') {
      for (const p of this.#cache.keys()) {
        if (isWithin(p, event.path) || (event.new_path && isWithin(p, event.new_path))) this.#cache.delete(p);
      }
    }
    this.#invalidate(event.path);
    if (event.new_path) this.#invalidate(event.new_path);
    for (const l of this.#listeners) l(event);
  }

  /** Subscribe to the daemon's change bus over WebSocket; reconnects until closed. */
  #watch(): Promise<void> {
    const wsUrl = this.#opts.url.replace(/^http/, 'ws').replace(/\/+$/, '') + '/api/nfs/ws';
    const headers = this.#opts.apiKey ? { Authorization: `Bearer ${this.#opts.apiKey}` } : undefined;
    return new Promise((resolve) => {
      const ws = new WebSocket(wsUrl, { headers });
      this.#ws = ws;
      let opened = false;
      ws.on('open', () => {
        opened = true;
        this.#heard();
        clearInterval(this.#pinger);
        this.#pinger = setInterval(() => {
          if (Date.now() - this.#lastHeard > SILENT_MS && !this.#silent.signal.aborted) {
            this.#opts.log.warn({ url: this.#opts.url, silentMs: Date.now() - this.#lastHeard }, 'the daemon stopped answering; failing calls until it answers again');
            this.#silent.abort(new Error(`the daemon at ${this.#opts.url} stopped answering`));
          }
          // Not while closing (ping would throw): the close reconnects.
          if (ws.readyState === WebSocket.OPEN) ws.ping();
        }, PING_MS);
        this.#pinger.unref();
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'watch', params: { path: '/', recursive: true } }));
        resolve();
      });
      ws.on('pong', () => this.#heard());
      ws.on('message', (data) => {
        this.#heard();
        let msg: { id?: number; result?: unknown; method?: string; params?: ChangeEvent };
        try {
          msg = JSON.parse(data.toString());
        } catch {
          return;
        }
        if (msg.method === 'fs.event' && msg.params) this.#onEvent(msg.params);
        if (msg.id === 1 && msg.result !== undefined) {
          // Watching again after a disconnection: what changed meanwhile sent no event.
          if (this.#watched) for (const l of this.#lostListeners) l();
          this.#watched = true;
        }
      });
      ws.on('error', (err) => this.#opts.log.debug({ err }, 'change watch connection error'));
      ws.on('close', () => {
        clearInterval(this.#pinger);
        // Whatever happened while disconnected is unknown: forget every cached attribute.
        this.#generation++;
        this.#cache.clear();
        if (!opened) resolve();
        if (this.#closed) return;
        this.#opts.log.warn({ url: wsUrl }, 'change watch disconnected; reconnecting');
        this.#reconnect = setTimeout(() => void this.#watch(), RECONNECT_MS);
      });
    });
  }
}
