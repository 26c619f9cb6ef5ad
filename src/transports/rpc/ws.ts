/**
 * @module transports/rpc/ws
 * JSON-RPC 2.0 over WebSocket at /api/nfs/ws: the method table plus `watch`/`unwatch`, which
 * push `fs.event` notifications from the change bus for every change made through any face.
 *
 * The credential of the upgrade request is checked again for every message (a revoked or expired
 * key, or a demoted admin, takes effect at once, as over HTTP), and before delivering events once
 * it was last checked more than {@link EVENT_RECHECK_MS} ago. A failed check answers -32003 and
 * closes the socket (1008). Events reach a subscriber only for paths it may read.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../../core/log.js';
import type { Authenticator } from '../../auth/authenticator.js';
import type { ChangeEvent, EventBus } from '../../core/events.js';
import type { OperationContext } from '../../core/context.js';
import { InvalidParamsError, InvalidRequestError, ParseError, SvcError } from '../../core/errors.js';
import { normalizePath, isWithin, parentOf } from '../../core/paths.js';
import type { Dispatcher, JsonRpcResponse, LocalMethod } from './dispatch.js';

/** How stale the identity behind delivered events may get before it is resolved again. */
export const EVENT_RECHECK_MS = 30_000;

interface Subscription {
  path: string;
  recursive: boolean;
}

/** Does a watch on `sub` see a change at `path`? */
function sees(sub: Subscription, path: string | undefined): boolean {
  if (path === undefined) return false;
  // The watched directory itself or an ancestor removed/moved (rmdir -r, rename) ends it: always seen.
  if (isWithin(sub.path, path)) return true;
  return sub.recursive ? isWithin(path, sub.path) : parentOf(path) === sub.path;
}

export interface WebSocketFaceOptions {
  dispatcher: Dispatcher;
  authenticator: Authenticator;
  events: EventBus;
  log: Logger;
  /** The permission check: whether the caller may read a path (events of other paths are withheld). */
  mayRead?: ((ctx: OperationContext, path: string) => boolean) | undefined;
  /** Milliseconds since the epoch (default Date.now; tests move it). */
  clock?: (() => number) | undefined;
}

export class WebSocketFace {
  static readonly methods = ['unwatch', 'watch'] as const;
  readonly #wss: WebSocketServer;
  readonly #opts: WebSocketFaceOptions;
  /** Each open connection's message queue (the promise settles when what it has received is answered). */
  readonly #queues = new Map<WebSocket, () => Promise<void>>();
  #closing = false;

  constructor(opts: WebSocketFaceOptions & { maxPayload: number }) {
    this.#opts = opts;
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayload });
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.#closing) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n');
      return;
    }
    this.#opts.authenticator.resolve(req.headers, 'ws').then(
      (ctx) => {
        if (this.#closing) socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n');
        else this.#wss.handleUpgrade(req, socket, head, (ws) => this.#serve(ws, ctx, req));
      },
      (err: Error) => {
        const status = err instanceof SvcError && err.httpStatus === 403 ? '403 Forbidden' : '401 Unauthorized';
        socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\n${err.message}`);
      },
    );
  }

  /**
   * Shut down: no new connections or messages; every message already received is handled and
   * answered (in-flight requests finish), then each connection is closed with 1001.
   */
  async close(): Promise<void> {
    this.#closing = true;
    this.#wss.close();
    await Promise.all([...this.#queues.values()].map((drained) => drained()));
    for (const ws of this.#wss.clients) ws.close(1001, 'server shutting down');
  }

  #serve(ws: WebSocket, initial: OperationContext, req: IncomingMessage): void {
    const subs = new Map<string, Subscription>();
    const send = (msg: unknown) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
    };
    const now = this.#opts.clock ?? Date.now;
    let ctx = initial;
    let checkedAt = now();
    // One connection's messages are handled in the order they arrive (see below); events queue behind them.
    let queue: Promise<void> = Promise.resolve();
    /** Resolve the upgrade's credential again; false (after answering -32003 and closing) when it no longer holds. */
    const recheck = async (id: unknown = null): Promise<boolean> => {
      try {
        ctx = await this.#opts.authenticator.resolve(req.headers, 'ws');
        checkedAt = now();
        return true;
      } catch (err) {
        const rpcId = typeof id === 'string' || typeof id === 'number' ? id : null;
        send(this.#opts.dispatcher.errorResponse(rpcId, err));
        subs.clear();
        ws.close(1008, 'credential no longer valid');
        return false;
      }
    };
    const mayRead = this.#opts.mayRead;
    const visible = (path: string | undefined) => path !== undefined && (!mayRead || mayRead(ctx, path));
    const deliver = (event: ChangeEvent) => {
      for (const [id, sub] of subs) {
        if ((sees(sub, event.path) && visible(event.path)) || (sees(sub, event.new_path) && visible(event.new_path))) {
          send({ jsonrpc: '2.0', method: 'fs.event', params: { subscription_id: id, ...event } });
        }
      }
    };
    const onEvent = (event: ChangeEvent) => {
      if (subs.size === 0) return;
      if (now() - checkedAt < EVENT_RECHECK_MS) {
        deliver(event);
        return;
      }
      // Queued behind messages, so events and answers keep their order.
      queue = queue.then(async () => {
        if (subs.size > 0 && (now() - checkedAt < EVENT_RECHECK_MS || await recheck())) deliver(event);
      }).catch((err) => this.#opts.log.error({ err }, 'websocket event failed'));
    };
    const unsubscribe = this.#opts.events.subscribe(onEvent);
    const local: Record<string, LocalMethod> = {
      watch: (params) => {
        const { path = '/', recursive = true, ...rest } = params;
        const unknown = Object.keys(rest)[0];
        if (unknown) throw new InvalidParamsError(`Invalid params: unknown parameter '${unknown}' for watch`, { param: unknown });
        if (typeof path !== 'string') throw new InvalidParamsError("Invalid params: 'path' must be a string", { param: 'path' });
        if (typeof recursive !== 'boolean') {
          throw new InvalidParamsError("Invalid params: 'recursive' must be a boolean", { param: 'recursive' });
        }
        const id = randomUUID();
        subs.set(id, { path: normalizePath(path), recursive });
        return { subscription_id: id };
      },
      unwatch: (params) => {
        const id = params.subscription_id;
        if (typeof id !== 'string') {
          throw new InvalidParamsError("Invalid params: missing required parameter 'subscription_id'", { param: 'subscription_id' });
        }
        return { success: subs.delete(id) };
      },
    };
    const { dispatcher } = this.#opts;
    const handleOne = (env: unknown) => dispatcher.handle(env, ctx, { notificationsSilent: true, local });
    const onMessage = async (data: unknown): Promise<void> => {
      let msg: unknown;
      try {
        msg = JSON.parse(String(data));
      } catch {
        send(dispatcher.errorResponse(null, new ParseError()));
        return;
      }
      const firstId = Array.isArray(msg) ? null : (msg as { id?: unknown } | null)?.id;
      if (!(await recheck(firstId))) return;
      if (Array.isArray(msg)) {
        if (msg.length === 0) {
          send(dispatcher.errorResponse(null, new InvalidRequestError('Invalid Request: empty batch')));
          return;
        }
        const answers: JsonRpcResponse[] = [];
        for (const env of msg) {
          const answer = await handleOne(env);
          if (answer) answers.push(answer);
        }
        if (answers.length) send(answers);
        return;
      }
      const answer = await handleOne(msg);
      if (answer) send(answer);
    };
    // One connection's messages are handled in the order they arrive, as a client expects of a
    // socket (a notification `write` then a `read` sees the write); connections run in parallel.
    this.#queues.set(ws, () => queue);
    ws.on('message', (data) => {
      // A message that arrives once shutdown has begun is not started: the connection closes with 1001.
      if (this.#closing) return;
      queue = queue.then(() => onMessage(data)).catch((err) => this.#opts.log.error({ err }, 'websocket message failed'));
    });
    ws.on('close', () => {
      this.#queues.delete(ws);
      unsubscribe();
      subs.clear();
    });
    ws.on('error', (err) => this.#opts.log.debug({ err }, 'websocket error'));
  }
}
