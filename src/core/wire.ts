/**
 * @module core/wire
 * Wire data types of spec §2.1 / WIRE.md "Wire types": bytes, datetime and timedelta, as zod
 * schemas for method params and as encode/decode functions for results. Shared by the server and
 * the typed client so both sides agree byte for byte.
 */
import { z } from 'zod';

// Unanchored on purpose: an anchored /^[A-Za-z0-9+/]*={0,2}$/ costs ~7 ms per MiB of content;
// a search for one bad character plus a look at the padding accepts exactly the same strings.
const NOT_BASE64 = /[^A-Za-z0-9+/=]/;

/** The bytes wire form, `{"__type__":"bytes","data":<base64>}`. */
export interface WireBytes { __type__: 'bytes'; data: string }

/** Encode bytes for the wire. */
export function wireBytes(buf: Uint8Array): WireBytes {
  return { __type__: 'bytes', data: Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('base64') };
}

/** Decode base64 strictly: a length that is not a multiple of 4 or a stray character is refused. */
export function decodeBase64(data: string): Buffer | undefined {
  if (data.length % 4 !== 0 || NOT_BASE64.test(data)) return undefined;
  const pad = data.indexOf('=');
  // '=' only as the last one or two characters
  if (pad !== -1 && (pad < data.length - 2 || (pad === data.length - 2 && data[data.length - 1] !== '='))) return undefined;
  return Buffer.from(data, 'base64');
}

/**
 * A bytes parameter. A bare string is refused with the spec's text (§2.1: strings must be
 * encoded before hashing); a Buffer is accepted as is for in-process callers.
 */
export const bytesParam = z.any().transform((v, ctx): Buffer => {
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (typeof v === 'string') {
    ctx.addIssue({
      code: 'custom',
      message: 'Strings must be encoded before hashing: send bytes as {"__type__":"bytes","data":"<base64>"}',
    });
    return z.NEVER;
  }
  if (v && typeof v === 'object' && v.__type__ === 'bytes' && typeof v.data === 'string') {
    const buf = decodeBase64(v.data);
    if (buf) return buf;
    ctx.addIssue({ code: 'custom', message: 'Invalid base64 in bytes data' });
    return z.NEVER;
  }
  ctx.addIssue({ code: 'custom', message: 'Expected bytes: {"__type__":"bytes","data":"<base64>"}' });
  return z.NEVER;
});

/** A datetime parameter: an ISO 8601 string or `{"__type__":"datetime","data":…}`. */
export const datetimeParam = z.any().transform((v, ctx): Date => {
  const raw = v && typeof v === 'object' && v.__type__ === 'datetime' ? v.data : v;
  const d = raw instanceof Date ? raw : typeof raw === 'string' ? new Date(raw) : undefined;
  if (!d || Number.isNaN(d.getTime())) {
    ctx.addIssue({ code: 'custom', message: 'Expected an ISO 8601 datetime string' });
    return z.NEVER;
  }
  return d;
});

/** A timedelta parameter: seconds as a number, or `{"__type__":"timedelta","seconds":n}`. */
export const timedeltaParam = z.any().transform((v, ctx): number => {
  const raw = v && typeof v === 'object' && v.__type__ === 'timedelta' ? v.seconds : v;
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw < 0) {
    ctx.addIssue({ code: 'custom', message: 'Expected a non-negative number of seconds' });
    return z.NEVER;
  }
  return raw;
});

/**
 * Turn a service result into its JSON form: Buffers become bytes objects, Dates ISO strings.
 * Plain objects and arrays are walked; everything else is returned as is.
 */
export function encodeValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return wireBytes(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(encodeValue);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = encodeValue(v);
  return out;
}

/** Inverse of {@link encodeValue} for clients: bytes objects become Buffers. Datetimes stay strings. */
export function decodeValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(decodeValue);
  const obj = value as Record<string, unknown>;
  if (obj.__type__ === 'bytes' && typeof obj.data === 'string') return Buffer.from(obj.data, 'base64');
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = decodeValue(v);
  return out;
}
