/**
 * @module test/helpers/fuse-ops
 * Calling the mount's fuse-native style operations in process (no kernel), for the FUSE tests
 * that drive FuseFileSystem directly.
 */
import type { Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { EventBus } from '../../src/core/events.js';
import { FsService } from '../../src/fs/service.js';
import { LmdbStore } from '../../src/store/lmdb/index.js';
import { LocalBackend } from '../../src/transports/fuse/local.js';
import { FuseFileSystem } from '../../src/transports/fuse/operations.js';
import type { FuseOperations } from '../../src/native/fuse.js';

/** Call a fuse-native style operation; resolves with [code, value]. */
export function call<V = unknown>(op: (...args: never[]) => void, ...args: unknown[]): Promise<[number, V | undefined]> {
  return new Promise((resolve) => (op as (...a: unknown[]) => void)(...args, (code: number, value?: V) => resolve([code, value])));
}

/** create, write, flush, release (as `echo text > path`), checking each answer; mode 0640 unless given. */
export async function writeFile(ops: FuseOperations, path: string, data: string | Buffer, mode = 0o100640): Promise<void> {
  const [c, fd] = await call<number>(ops.create, path, mode);
  if (c !== 0) throw new Error(`create ${path}: ${c}`);
  const buf = Buffer.from(data);
  const [w] = await call(ops.write, path, fd, buf, buf.length, 0);
  if (w < 0) throw new Error(`write ${path}: ${w}`);
  const [f] = await call(ops.flush, path, fd);
  const [r] = await call(ops.release, path, fd);
  if (f !== 0 || r !== 0) throw new Error(`close ${path}: ${f} ${r}`);
}

/** open, read (up to 4 KiB), release: the file's text. */
export async function readFile(ops: FuseOperations, path: string): Promise<string> {
  const [c, fd] = await call<number>(ops.open, path, 0);
  if (c !== 0) throw new Error(`open ${path}: ${c}`);
  const buf = Buffer.alloc(4096);
  const [n] = await call<number>(ops.read, path, fd, buf, buf.length, 0);
  await call(ops.release, path, fd);
  return buf.subarray(0, n).toString();
}

/** open, truncate, write, flush, release: as `echo text > path` over an existing file. */
export async function rewrite(ops: FuseOperations, path: string, text: string): Promise<void> {
  const [c, fd] = await call<number>(ops.open, path, 1);
  if (c !== 0) throw new Error(`open ${path}: ${c}`);
  await call(ops.ftruncate, path, fd, 0);
  const buf = Buffer.from(text);
  await call(ops.write, path, fd, buf, buf.length, 0);
  await call(ops.flush, path, fd);
  await call(ops.release, path, fd);
}

/** Whether `p` settles within a few turns of the event loop. */
export async function settlesSoon(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true), () => (done = true));
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  return done;
}

/**
 * The daemon's in-process mount without a kernel: an LMDB store in a temporary directory, its
 * FsService and LocalBackend, and the FuseFileSystem over them (owner: `ids`, else this process's),
 * all closed and removed at the test's end.
 */
export function inProcessMount(t: Test, ids: { uid: number; gid: number } = { uid: process.getuid!(), gid: process.getgid!() }) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-fuse-ops-'));
  const store = new LmdbStore(dir);
  const fs = new FsService({ store, blobs: store.blobs, events: new EventBus() });
  const log = pino({ level: 'silent' });
  const backend = new LocalBackend({ fs, events: new EventBus(), dataDir: dir, log });
  const fuse = new FuseFileSystem({ backend, log, ...ids });
  t.teardown(async () => {
    await fuse.close();
    await backend.close();
    await fs.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { fs, backend, fuse, ops: fuse.operations() };
}
