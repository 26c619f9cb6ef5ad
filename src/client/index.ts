/**
 * @module client
 * Typed JSON-RPC client derived from the method table: `client.call('write', {...})` is checked
 * against the method's zod input and returns its result type in wire form (Buffers for bytes,
 * ISO strings for datetimes). Used by the CLI, and later by MCP remote mode and FUSE remote mode.
 */
import type { ParamsOf, ResultOf } from '../core/method.js';
import type { FsApi } from '../fs/methods.js';
import type { PosixApi } from '../fs/posix.js';
import type { WorkspaceApi } from '../workspaces/methods.js';
import type { MountApi } from '../mounts/methods.js';
import type { AdminApi } from '../admin/methods.js';
import type { RebacApi } from '../rebac/methods.js';
import type { NamespaceApi } from '../namespaces/methods.js';
import { decodeValue, encodeValue } from '../core/wire.js';

/** Every method the daemon serves, by name. */
export type Api = FsApi & PosixApi & WorkspaceApi & MountApi & AdminApi & RebacApi & NamespaceApi;
export type MethodName = keyof Api & string;

/** A result as it arrives over the wire: Dates are ISO strings, bytes are Buffers. */
export type Wire<T> = T extends Date ? string
  : T extends Buffer ? Buffer
  : T extends readonly (infer U)[] ? Wire<U>[]
  : T extends object ? { [K in keyof T]: Wire<T[K]> }
  : T;

/** A JSON-RPC error from the daemon, with its code (spec §7). */
export class RpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message);
    this.name = 'RpcError';
  }
}

export interface ClientOptions {
  url: string;
  apiKey?: string | undefined;
  subject?: string | undefined;
  tenantId?: string | undefined;
  /** Injected for tests; global fetch by default. */
  fetch?: typeof fetch;
  /** Give up on a request after this many ms (default 120 000; 0 = never). */
  timeoutMs?: number;
}

export class SvcClient {
  readonly #base: string;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  #nextId = 1;

  constructor(opts: ClientOptions) {
    this.#base = opts.url.replace(/\/+$/, '');
    this.#headers = { 'Content-Type': 'application/json' };
    if (opts.apiKey) this.#headers.Authorization = `Bearer ${opts.apiKey}`;
    if (opts.subject) this.#headers['X-Svc-Subject'] = opts.subject;
    if (opts.tenantId) this.#headers['X-Svc-Tenant-ID'] = opts.tenantId;
    this.#fetch = opts.fetch ?? fetch;
    this.#timeoutMs = opts.timeoutMs ?? 120_000;
  }

  /** Call a method; rejects with {@link RpcError} on a JSON-RPC error. */
  async call<M extends MethodName>(method: M, params: ParamsOf<Api[M]>): Promise<Wire<ResultOf<Api[M]>>> {
    const id = this.#nextId++;
    const res = await this.#fetch(`${this.#base}/api/nfs/${method}`, {
      method: 'POST',
      headers: this.#headers,
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params: encodeValue(params) }),
      signal: this.#signal(),
    });
    const text = await res.text();
    let body: { result?: unknown; error?: { code: number; message: string; data?: unknown } };
    try {
      body = JSON.parse(text);
    } catch {
      throw new RpcError(-32603, `daemon answered HTTP ${res.status} with a body that is not JSON`);
    }
    if (body.error) throw new RpcError(body.error.code, body.error.message, body.error.data);
    return decodeValue(body.result) as Wire<ResultOf<Api[M]>>;
  }

  /** GET /api/nfs/status. */
  status(): Promise<{
    status: string; service: string; version: string; methods: string[]; backend: unknown; metadata_store: unknown;
    /** Present while the daemon has its own FUSE mount (`serve --mount`). */
    fuse_mount?: { dir: string; binding: string };
  }> {
    return this.#get('/api/nfs/status');
  }

  /** GET /api/auth/whoami. */
  whoami(): Promise<{ authenticated: boolean; subject_type: string; subject_id: string; tenant_id: string; is_admin: boolean }> {
    return this.#get('/api/auth/whoami');
  }

  async #get<T>(path: string): Promise<T> {
    const res = await this.#fetch(this.#base + path, { headers: this.#headers, signal: this.#signal() });
    const text = await res.text();
    let body: T & { error?: string; message?: string };
    try {
      body = JSON.parse(text);
    } catch {
      throw new RpcError(-32603, `daemon answered HTTP ${res.status} with a body that is not JSON`);
    }
    if (!res.ok) throw new RpcError(res.status === 401 ? -32003 : -32004, body.message ?? body.error ?? `HTTP ${res.status}`);
    return body;
  }

  #signal(): AbortSignal | undefined {
    return this.#timeoutMs > 0 ? AbortSignal.timeout(this.#timeoutMs) : undefined;
  }
}
