/**
 * @module test/fs/fixture
 * An FsService over a real LmdbStore in a temp dir, with the bus's events recorded and helpers to
 * look at what the service keeps (entries, versions, chunk references).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { LmdbStore } from '../../src/store/lmdb/index.js';
import { EventBus, type ChangeEvent } from '../../src/core/events.js';
import { FsService, CHUNK_SIZE, INLINE_MAX_BYTES } from '../../src/fs/service.js';
import type { GrepperOptions } from '../../src/fs/grep.js';
import type { SvcError } from '../../src/core/errors.js';

export const sha256 = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex');

/** The chunk hashes the service is expected to store for `content`, in order. */
export function chunkHashesOf(content: Uint8Array): string[] {
  if (content.byteLength <= CHUNK_SIZE) return [sha256(content)];
  const out: string[] = [];
  for (let off = 0; off < content.byteLength; off += CHUNK_SIZE) {
    out.push(sha256(content.subarray(off, Math.min(off + CHUNK_SIZE, content.byteLength))));
  }
  return out;
}

export interface FsFixture {
  fs: FsService;
  store: LmdbStore;
  bus: EventBus;
  /** Errors thrown by bus listeners (reported, never propagated). */
  listenerErrors: unknown[];
  /** Every event published so far. */
  events: ChangeEvent[];
  /** Events published since the last call (and forget them). */
  take(): ChangeEvent[];
  /** Reference count of a chunk: its refs row, else 1 when the chunk is stored, else 0. */
  refs(hash: string): number;
  /** Every stored chunk with its reference count, hash → count. */
  allRefs(): Map<string, number>;
  /** Every version of every file (current ones included), through the service: path, version, chunks. */
  allVersions(): { path: string; version: number; chunks: string[] }[];
  /** Pending holds (chunks stored ahead of their file's commit), hash → holds. */
  pending(): Map<string, number>;
  /**
   * The reference counts the tree implies: one per chunk listed by each version (current ones
   * included), plus one per pending hold. Equal to {@link allRefs} when the counts are consistent.
   */
  expectedRefs(): Map<string, number>;
  /** Every stored row of every fs table, for before/after comparisons. */
  dump(): { entries: [string, unknown][]; versions: [string, unknown][]; refs: [string, unknown][] };
}

export function makeFs(t: Test, opts: { grep?: GrepperOptions } = {}): FsFixture {
  const dir = mkdtempSync(join(tmpdir(), 'svc-fs-'));
  const store = new LmdbStore(dir);
  const listenerErrors: unknown[] = [];
  const bus = new EventBus((err) => listenerErrors.push(err));
  const events: ChangeEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const fs = new FsService({ store, blobs: store.blobs, events: bus, grep: opts.grep });
  t.teardown(async () => {
    await fs.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const refsTable = store.table<number>('refs');
  const pendingTable = () => [...store.table<number>('pending_chunks').range({})].map((e): [string, number] => [e.key, e.value]);
  const rows = (name: string) => [...store.table<unknown>(name).range({})].map((e): [string, unknown] => [e.key, e.value]);
  let seen = 0;
  return {
    fs, store, bus, events, listenerErrors,
    take: () => {
      const out = events.slice(seen);
      seen = events.length;
      return out;
    },
    refs: (hash) => refsTable.get(hash) ?? (store.blobs.has(hash) ? 1 : 0),
    allRefs: () => {
      const out = new Map([...store.blobs.hashes()].map((h): [string, number] => [h, refsTable.get(h) ?? 1]));
      for (const { key } of refsTable.range({})) {
        if (!out.has(key)) out.set(key, NaN); // a refs row without its chunk: fails every comparison
      }
      return out;
    },
    allVersions: () => fs.list('/').filter((e) => !e.is_directory).flatMap((e) => fs.listVersions(e.path).map((v) => ({
      path: e.path, version: v.version, chunks: fs.versionRecord(e.path, v.version).chunks,
    }))),
    pending: () => new Map(pendingTable()),
    expectedRefs: () => {
      const out = new Map<string, number>();
      const add = (h: string, n: number) => out.set(h, (out.get(h) ?? 0) + n);
      for (const v of fs.list('/').filter((e) => !e.is_directory)) {
        for (const ver of fs.listVersions(v.path)) for (const h of fs.versionRecord(v.path, ver.version).chunks) add(h, 1);
      }
      for (const [h, n] of pendingTable()) add(h, n);
      return out;
    },
    dump: () => ({ entries: rows('entries'), versions: rows('versions'), refs: rows('refs') }),
  };
}

/** Bytes of a string. */
export const b = (s: string): Buffer => Buffer.from(s);
/** `s` padded past INLINE_MAX_BYTES: content the service stores as a chunk, not inline in the entry. */
export const chunked = (s: string): string => s.padEnd(INLINE_MAX_BYTES + 1, '.');

/** Deterministic pseudo-random bytes: every chunk differs from every other, and seeds differ. */
export function noise(size: number, seed = 1): Buffer {
  const out = Buffer.alloc(Math.ceil(size / 4) * 4);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i += 4) {
    // xorshift32
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    out.writeUInt32LE(x, i);
  }
  return Buffer.from(out.subarray(0, size));
}

/** The error a promise rejects with (fails the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<SvcError> {
  try {
    await p;
  } catch (err) {
    return err as SvcError;
  }
  throw new Error('expected a rejection');
}

/** The error a function throws. */
export function thrown(fn: () => unknown): SvcError {
  try {
    fn();
  } catch (err) {
    return err as SvcError;
  }
  throw new Error('expected a throw');
}

export const tick = (ms = 3) => new Promise((r) => setTimeout(r, ms));
