/**
 * @module transports/rpc/http
 * The HTTP face (WIRE.md "HTTP routes"): JSON-RPC at POST /api/nfs/<method>, health, whoami,
 * status, CORS everywhere, a body limit, and the WebSocket upgrade at /api/nfs/ws.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../core/log.js';
import type { Authenticator } from '../../auth/authenticator.js';
import { InvalidParamsError, InvalidRequestError, ParseError, SvcError } from '../../core/errors.js';
import type { Dispatcher, JsonRpcResponse } from './dispatch.js';
import { WebSocketFace } from './ws.js';
import type { EventBus } from '../../core/events.js';
import type { OperationContext } from '../../core/context.js';

export const CORS_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
  'Access-Control-Allow-Headers': 'Content-Type, Authorization, X-Svc-Subject, X-Svc-Tenant-ID, X-API-Key',
  'Access-Control-Max-Age': '86400',
});

export interface StatusInfo {
  version: string;
  backend: Record<string, unknown>;
  metadata_store: Record<string, unknown>;
  /** The daemon's own FUSE mount (`serve --mount`), while it is mounted. */
  fuse_mount?: { dir: string; binding: string } | undefined;
}

export interface HttpFaceOptions {
  host: string;
  port: number;
  maxBody: number;
  dispatcher: Dispatcher;
  authenticator: Authenticator;
  events: EventBus;
  status: () => StatusInfo;
  log: Logger;
  /** The permission check for WebSocket change events: whether the caller may read a path. */
  mayRead?: ((ctx: OperationContext, path: string) => boolean) | undefined;
  /** Milliseconds since the epoch for the WebSocket credential re-check (default Date.now; tests move it). */
  clock?: (() => number) | undefined;
  /** Local auth mode's password login (POST /api/auth/login); absent in every other mode. */
  login?: ((username: string, password: string) => Promise<unknown>) | undefined;
}

const METHOD_ROUTE = /^\/api\/nfs\/([A-Za-z0-9_.-]*)$/;

export class HttpFace {
  readonly #opts: HttpFaceOptions;
  readonly #server: Server;
  readonly #ws: WebSocketFace;
  #inFlight = 0;
  #drained: (() => void) | undefined;

  constructor(opts: HttpFaceOptions) {
    this.#opts = opts;
    this.#server = createServer({ keepAliveTimeout: 5000 }, (req, res) => {
      this.#inFlight++;
      res.once('close', () => {
        if (--this.#inFlight === 0) this.#drained?.();
      });
      this.#route(req, res).catch((err) => {
        opts.log.error({ err }, 'unhandled error in HTTP route');
        if (!res.headersSent) this.#json(res, 500, { error: 'Internal Server Error' });
        else res.destroy();
      });
    });
    this.#ws = new WebSocketFace({
      dispatcher: opts.dispatcher, authenticator: opts.authenticator, events: opts.events, maxPayload: opts.maxBody, log: opts.log,
      mayRead: opts.mayRead, clock: opts.clock,
    });
    this.#server.on('upgrade', (req, socket, head) => {
      if (pathOf(req) === '/api/nfs/ws') this.#ws.handleUpgrade(req, socket, head);
      else socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
    });
    // A request Node cannot parse (bad request line or headers, headers too large) still gets a JSON
    // answer with the CORS headers, like every other answer.
    this.#server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      const [status, text] = err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
      const body = JSON.stringify({ error: text });
      const headers = Object.entries(CORS_HEADERS).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\n${headers}Content-Type: application/json\r\n`
        + `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  }

  /** Names of the methods only the WebSocket face serves. */
  static readonly wsMethods = WebSocketFace.methods;

  async listen(): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#opts.port, this.#opts.host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    return this.#server.address() as AddressInfo;
  }

  /** Stop accepting, close sockets, and wait for in-flight requests to finish. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    // WebSocket connections answer what they have received, then close with 1001.
    const wsClosed = this.#ws.close();
    this.#server.closeIdleConnections();
    if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
    await wsClosed;
    this.#server.closeIdleConnections();
    await closed;
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = pathOf(req);
    if (req.method === 'OPTIONS') {
      res.writeHead(204, CORS_HEADERS).end();
      return;
    }
    if (req.method === 'GET' && path === '/health') {
      this.#json(res, 200, { status: 'healthy', service: 'svc-rpc' });
      return;
    }
    if (req.method === 'GET' && path === '/api/auth/whoami') {
      const ctx = await this.#resolveOr401(req, res);
      if (!ctx) return;
      this.#json(res, 200, {
        authenticated: ctx.authenticated, subject_type: ctx.subjectType, subject_id: ctx.subjectId,
        tenant_id: ctx.tenantId, is_admin: ctx.isAdmin,
      });
      return;
    }
    if (req.method === 'GET' && path === '/api/nfs/status') {
      if (!(await this.#resolveOr401(req, res))) return;
      const info = this.#opts.status();
      this.#json(res, 200, {
        status: 'running', service: 'svc-rpc', version: info.version,
        methods: this.#opts.dispatcher.methodNames(WebSocketFace.methods), backend: info.backend, metadata_store: info.metadata_store,
        ...(info.fuse_mount ? { fuse_mount: info.fuse_mount } : {}),
      });
      return;
    }
    if (req.method === 'POST' && path === '/api/auth/login' && this.#opts.login) {
      await this.#login(req, res, this.#opts.login);
      return;
    }
    const m = METHOD_ROUTE.exec(path);
    if (req.method === 'POST' && m) {
      await this.#rpc(req, res, m[1] || undefined);
      return;
    }
    this.#json(res, 404, { error: 'Not Found' });
  }

  async #rpc(req: IncomingMessage, res: ServerResponse, urlMethod: string | undefined): Promise<void> {
    const { dispatcher, authenticator } = this.#opts;
    let body: Buffer;
    try {
      body = await readBody(req, this.#opts.maxBody);
    } catch (err) {
      if (err instanceof SvcError) {
        discardRest(req);
        this.#json(res, err.httpStatus, dispatcher.errorResponse(null, err));
      } // else: the client went away mid-body; nothing to answer, nothing was written.
      return;
    }
    let envelope: unknown;
    try {
      envelope = JSON.parse(body.toString('utf8'));
    } catch {
      this.#json(res, 200, dispatcher.errorResponse(null, new ParseError()));
      return;
    }
    const id = idOf(envelope);
    let ctx;
    try {
      ctx = await authenticator.resolve(req.headers, 'rpc');
    } catch (err) {
      this.#json(res, 200, dispatcher.errorResponse(id, err));
      return;
    }
    if (Array.isArray(envelope)) {
      this.#json(res, 200, dispatcher.errorResponse(null, new InvalidRequestError(
        'Invalid Request: batches are served over WebSocket (/api/nfs/ws); POST one request object',
      )));
      return;
    }
    const response = (await dispatcher.handle(envelope, ctx, urlMethod === undefined ? {} : { urlMethod })) as JsonRpcResponse;
    this.#json(res, 200, response);
  }

  /** `{username, password}` → `{access_token, token_type, expires_in}`; failures are JSON-RPC errors (-32003 for bad credentials). */
  async #login(req: IncomingMessage, res: ServerResponse, login: NonNullable<HttpFaceOptions['login']>): Promise<void> {
    const fail = (status: number, err: unknown) => this.#json(res, status, this.#opts.dispatcher.errorResponse(null, err));
    let body: unknown;
    try {
      body = JSON.parse((await readBody(req, 64 * 1024)).toString('utf8'));
    } catch (err) {
      if (err instanceof SvcError) return fail(err.httpStatus, err);
      if (err instanceof SyntaxError) return fail(400, new ParseError());
      return; // the client went away mid-body
    }
    const { username, password } = (body ?? {}) as { username?: unknown; password?: unknown };
    if (typeof username !== 'string' || typeof password !== 'string') {
      return fail(400, new InvalidParamsError('Invalid params: username and password (strings) are required'));
    }
    try {
      this.#json(res, 200, await login(username, password));
    } catch (err) {
      fail(err instanceof SvcError ? err.httpStatus : 500, err);
    }
  }

  async #resolveOr401(req: IncomingMessage, res: ServerResponse) {
    try {
      return await this.#opts.authenticator.resolve(req.headers, 'http');
    } catch (err) {
      const status = err instanceof SvcError ? err.httpStatus : 401;
      this.#json(res, status === 200 ? 401 : status, {
        error: status === 403 ? 'Forbidden' : 'Unauthorized', message: (err as Error).message,
      });
      return undefined;
    }
  }

  #json(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      ...CORS_HEADERS,
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
    });
    res.end(text);
  }
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

function idOf(envelope: unknown): string | number | null {
  if (envelope && typeof envelope === 'object' && !Array.isArray(envelope)) {
    const id = (envelope as { id?: unknown }).id;
    if (typeof id === 'string' || typeof id === 'number') return id;
  }
  return null;
}

/** Bytes of a refused body read and thrown away before the connection is cut instead. */
const DISCARD_MAX_BYTES = 64 * 1024 * 1024;
/** How long a refused body may keep arriving before the connection is cut. */
const DISCARD_MAX_MS = 10_000;

/**
 * After answering a refused body early (413), read the rest of it and throw it away, so the client
 * gets to read the answer: closing a socket with unread data makes the kernel reset the connection,
 * and a client still sending then sees EPIPE/ECONNRESET instead of the 413. Bounded: past
 * {@link DISCARD_MAX_BYTES} or {@link DISCARD_MAX_MS} the connection is cut anyway. Once the body
 * has ended the connection is reused as usual.
 */
function discardRest(req: IncomingMessage): void {
  if (req.complete) return;
  let discarded = 0;
  const cut = () => req.socket.destroy();
  const timer = setTimeout(cut, DISCARD_MAX_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_MAX_BYTES) cut();
  });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/** Read a request body up to `limit` bytes; 413 (-32600) beyond it; rejects plainly when the client aborts. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => new InvalidRequestError(
    `Request body too large: the limit is ${limit} bytes`, { limit }, 413,
  );
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge());
        return;
      }
      parts.push(chunk);
    });
    // A small body (every 1 KiB write) arrives as one chunk: used as is, not copied.
    req.once('end', () => resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size)));
    req.once('aborted', () => reject(new Error('client aborted')));
    req.once('error', reject);
  });
}
