/**
 * @module transports/rpc/dispatch
 * One JSON-RPC 2.0 envelope in, one response out (WIRE.md "Envelope"); shared by HTTP and
 * WebSocket. Knows the method table, never a store.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../core/log.js';
import type { OperationContext } from '../../core/context.js';
import { type MethodTable, parseParams } from '../../core/method.js';
import {
  InternalError, InvalidParamsError, InvalidRequestError, MethodNotFoundError, PermissionDeniedError, SvcError, toJsonRpc,
} from '../../core/errors.js';
import { encodeValue } from '../../core/wire.js';

export type JsonRpcId = string | number | null;

export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** A method served by the transport itself (WebSocket watch/unwatch), with connection state. */
export type LocalMethod = (params: Record<string, unknown>, ctx: OperationContext) => unknown;

export interface DispatcherOptions {
  /**
   * Awaited before each call, when it returns a promise: changes another face has acknowledged but
   * not yet committed (the in-process mount's queued closes: FsService.settled), so that a call
   * sees them. If they cannot be committed, the call goes on with what is stored.
   */
  settle?: (() => Promise<void> | undefined) | undefined;
}

export class Dispatcher {
  readonly #settle: DispatcherOptions['settle'];

  constructor(private readonly table: MethodTable, private readonly log: Logger, opts: DispatcherOptions = {}) {
    this.#settle = opts.settle;
  }

  /** Names of every dispatchable method, sorted (status.methods). */
  methodNames(extra: readonly string[] = []): string[] {
    return [...Object.keys(this.table), ...extra].sort();
  }

  /** An error response for an envelope that could not be parsed or authenticated. */
  errorResponse(id: JsonRpcId, err: unknown): JsonRpcResponse {
    return { jsonrpc: '2.0', id, error: toJsonRpc(this.#asSvcError(err)) };
  }

  /**
   * Handle one request object. Returns undefined for a notification when `notificationsSilent`
   * (WebSocket); over HTTP every request is answered, with `id: null` when it had none.
   */
  async handle(
    envelope: unknown,
    ctx: OperationContext,
    opts: { urlMethod?: string; notificationsSilent?: boolean; local?: Readonly<Record<string, LocalMethod>> } = {},
  ): Promise<JsonRpcResponse | undefined> {
    const isObject = envelope !== null && typeof envelope === 'object' && !Array.isArray(envelope);
    const env = (isObject ? envelope : {}) as Record<string, unknown>;
    const hasId = isObject && 'id' in env;
    const rawId = env.id;
    const id: JsonRpcId = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null;
    try {
      if (!isObject) throw new InvalidRequestError('Invalid Request: the body must be a JSON-RPC request object');
      if (hasId && rawId !== null && typeof rawId !== 'string' && !(typeof rawId === 'number' && Number.isFinite(rawId))) {
        throw new InvalidRequestError('Invalid Request: id must be a number, a string or null');
      }
      if ('jsonrpc' in env && env.jsonrpc !== '2.0') throw new InvalidRequestError('Invalid Request: jsonrpc must be "2.0"');
      let method = opts.urlMethod;
      if ('method' in env) {
        if (typeof env.method !== 'string') throw new InvalidRequestError('Invalid Request: method must be a string');
        if (method !== undefined && env.method !== method) {
          throw new InvalidRequestError(`Method mismatch: URL names ${method}, body names ${env.method}`);
        }
        method = env.method;
      }
      if (!method) throw new InvalidRequestError('Invalid Request: method is required');
      const params = env.params ?? {};
      if (params === null || typeof params !== 'object' || Array.isArray(params)) {
        throw new InvalidParamsError('Invalid params: params must be an object');
      }
      const result = await this.#call(method, params as Record<string, unknown>, ctx, opts.local);
      if (!hasId && opts.notificationsSilent) return undefined;
      return { jsonrpc: '2.0', id, result: result === undefined ? { success: true } : encodeValue(result) };
    } catch (err) {
      if (!hasId && opts.notificationsSilent && isObject) return undefined;
      return { jsonrpc: '2.0', id: hasId ? id : null, error: toJsonRpc(this.#asSvcError(err, env.method)) };
    }
  }

  async #call(name: string, params: Record<string, unknown>, ctx: OperationContext, local?: Readonly<Record<string, LocalMethod>>) {
    const localMethod = local && Object.hasOwn(local, name) ? local[name] : undefined;
    if (localMethod) return localMethod(params, ctx);
    const method = Object.hasOwn(this.table, name) ? this.table[name] : undefined;
    if (!method) throw new MethodNotFoundError(name);
    if (method.access === 'admin' && !ctx.isAdmin) {
      throw new PermissionDeniedError(`Permission denied: ${name} requires admin privileges`);
    }
    const parsed = parseParams(method, params);
    const settling = this.#settle?.();
    if (settling) await settling.catch(() => undefined);
    return method.handler(parsed, ctx);
  }

  #asSvcError(err: unknown, method?: unknown): SvcError {
    if (err instanceof SvcError) return err;
    // A server fault is never reported with a client-fault code: -32603 with an id to find the log.
    const errorId = randomUUID();
    this.log.error({ err, error_id: errorId, method }, 'internal error');
    return new InternalError(errorId);
  }
}
