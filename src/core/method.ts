/**
 * @module core/method
 * The method table: each capability defines its methods once (name, zod params, access, handler).
 * RPC and WebSocket dispatch, `status.methods`, the typed client and docs/methods.md all derive
 * from it.
 */
import { z } from 'zod';
import type { OperationContext } from './context.js';
import { InvalidParamsError } from './errors.js';

/** Who may call a method: anyone, any authenticated caller, or admins only. */
export type Access = 'public' | 'user' | 'admin';

export interface MethodDef<S extends z.ZodType = z.ZodType, R = unknown, N extends string = string> {
  readonly name: N;
  readonly description: string;
  readonly params: S;
  readonly access: Access;
  readonly handler: (params: z.output<S>, ctx: OperationContext) => R | Promise<R>;
}

/** Identity function that keeps the params and result types for the typed client. */
export function defineMethod<S extends z.ZodType, R, N extends string>(def: MethodDef<S, R, N>): MethodDef<S, R, N> {
  return Object.freeze(def);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyMethod = MethodDef<any, any, string>;
export type MethodTable = Readonly<Record<string, AnyMethod>>;

/** Build a table from method lists, refusing duplicate names (a wiring bug, caught at start). */
export function buildTable(...lists: readonly (readonly AnyMethod[])[]): MethodTable {
  const table: Record<string, AnyMethod> = {};
  for (const list of lists) {
    for (const m of list) {
      if (table[m.name]) throw new Error(`duplicate method ${m.name}`);
      table[m.name] = m;
    }
  }
  return Object.freeze(table);
}

/** Params of a method as a caller sends them (defaults optional). */
export type ParamsOf<M> = M extends MethodDef<infer S, unknown, string> ? z.input<S> : never;
/** Result of a method once awaited. */
export type ResultOf<M> = M extends MethodDef<z.ZodType, infer R, string> ? Awaited<R> : never;
/** A list of methods as a name-keyed type, for the typed client. */
export type ApiOf<L extends readonly AnyMethod[]> = { [M in L[number] as M['name']]: M };

/**
 * Validate raw params against a method's schema. Any failure is -32602 naming the first bad
 * parameter, with `data: {param}` (WIRE.md "Envelope").
 */
export function parseParams(method: AnyMethod, raw: unknown): unknown {
  if (raw === undefined) raw = {};
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new InvalidParamsError('Invalid params: params must be an object');
  }
  const result = method.params.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const param = [...issue.path.map(String), (issue as { keys: string[] }).keys[0]!].join('.');
    throw new InvalidParamsError(`Invalid params: unknown parameter '${param}' for ${method.name}`, { param });
  }
  const param = issue.path.map(String).join('.') || undefined;
  // Absent is "missing" whatever the schema's own complaint (bytesParam is z.any().transform and
  // reports a custom issue for undefined, not invalid_type).
  const isMissing = issue.path.length > 0 && (raw as Record<string, unknown>)[String(issue.path[0])] === undefined;
  const message = isMissing
    ? `Invalid params: missing required parameter '${param}'`
    : `Invalid params: ${param ? `'${param}': ` : ''}${issue.message}`;
  throw new InvalidParamsError(message, param ? { param } : undefined);
}
