/**
 * @module test/fuse/sync
 * Durability of the in-process mount, in process (no kernel): what the mount changes (close,
 * unlink, rename, mkdir, rmdir, chmod, utimens) is committed without waiting for the store's flush,
 * as a local disk's close() does not sync; fsync and fsyncdir answer only once the store has
 * flushed; RPC-style service calls stay durable.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { EventBus } from '../../src/core/events.js';
import { FsService } from '../../src/fs/service.js';
import { LmdbStore } from '../../src/store/lmdb/index.js';
import { GatedStore } from '../helpers/gated-store.js';
import { LocalBackend } from '../../src/transports/fuse/local.js';
import { FuseFileSystem } from '../../src/transports/fuse/operations.js';
import type { FuseOperations } from '../../src/native/fuse.js';
import type { FuseBackend } from '../../src/transports/fuse/backend.js';
import { call, settlesSoon } from '../helpers/fuse-ops.js';

/** The in-process mount over a held-able store; `wrap`: what the mount sees of its backend. */
function setup(t: Test, wrap: (backend: LocalBackend) => FuseBackend = (b) => b) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-fuse-sync-'));
  const lmdb = new LmdbStore(dir);
  const store = new GatedStore(lmdb);
  const events = new EventBus();
  const fs = new FsService({ store, blobs: lmdb.blobs, events });
  const backend = wrap(new LocalBackend({ fs, events, dataDir: dir }));
  const fuse = new FuseFileSystem({ backend, log: pino({ level: 'silent' }), uid: process.getuid!(), gid: process.getgid!() });
  t.teardown(async () => {
    store.release();
    await fuse.close();
    await lmdb.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, fs, ops: fuse.operations() };
}

/** Wait (bounded) until the store has been asked for its flush `n` times. */
async function flushRequested(store: GatedStore, n: number): Promise<void> {
  for (let i = 0; i < 1000 && store.flushCalls < n; i++) await new Promise((r) => setTimeout(r, 5));
}

async function createWithContent(ops: FuseOperations, path: string, text: string): Promise<number> {
  const [c1, fd] = await call<number>(ops.create, path, 0o100644);
  if (c1 !== 0 || fd === undefined) throw new Error(`create ${path}: ${c1}`);
  const buf = Buffer.from(text);
  await new Promise<void>((resolve) => ops.write(path, fd, buf, buf.length, 0, () => resolve()));
  return fd;
}

t.test('close, unlink, rename, mkdir, rmdir, chmod and utimens through the mount commit without waiting for the flush', async (t) => {
  const { store, fs, ops } = setup(t);
  store.hold({ transactions: false }); // a flush that never finishes: every operation below must still answer
  const fd = await createWithContent(ops, '/a.txt', 'hello');
  t.same(await call(ops.flush, '/a.txt', fd), [0, undefined], 'flush answers');
  t.same(await call(ops.release, '/a.txt', fd), [0, undefined], 'release answers');
  t.equal(fs.read('/a.txt').content.toString(), 'hello', 'the closed file is committed: visible to the service at once');
  t.equal((await call(ops.mkdir, '/d', 0o40755))[0], 0, 'mkdir');
  t.equal((await call(ops.rename, '/a.txt', '/d/b.txt'))[0], 0, 'rename');
  t.equal((await call(ops.chmod, '/d/b.txt', 0o600))[0], 0, 'chmod');
  t.equal((await call(ops.utimens, '/d/b.txt', 1000, 2000))[0], 0, 'utimens');
  t.equal(fs.stat('/d/b.txt')?.mode, 0o600);
  t.equal((await call(ops.unlink, '/d/b.txt'))[0], 0, 'unlink');
  t.equal(fs.stat('/d/b.txt'), undefined, 'the unlink is committed');
  t.equal((await call(ops.rmdir, '/d'))[0], 0, 'rmdir');
  t.equal(fs.stat('/d'), undefined);
  t.ok(store.transactions.length >= 7, 'the mount made its changes in transactions');
  t.same(store.transactions.filter((d) => d), [], 'none of them waited for the flush');
});

t.test('a new small file costs one transaction: create, write, flush, release', async (t) => {
  const { store, ops } = setup(t);
  const before = store.transactions.length;
  const fd = await createWithContent(ops, '/one.txt', 'one');
  t.equal((await call(ops.flush, '/one.txt', fd))[0], 0);
  t.equal((await call(ops.release, '/one.txt', fd))[0], 0);
  t.equal(store.transactions.length - before, 1);
});

t.test('fsync answers only once the store has flushed, after committing the handle', async (t) => {
  const { store, fs, ops } = setup(t);
  const fd = await createWithContent(ops, '/f.txt', 'unsynced');
  store.hold({ transactions: false });
  const fsync = call(ops.fsync, '/f.txt', 0, fd);
  await flushRequested(store, 1);
  t.equal(store.flushCalls, 1, 'fsync asked the store for its flush');
  t.equal(fs.read('/f.txt').content.toString(), 'unsynced', 'the handle was committed before the wait');
  t.notOk(await settlesSoon(fsync), 'fsync waits while the flush is pending');
  store.release();
  t.same(await fsync, [0, undefined], 'fsync answers once flushed');
  t.equal((await call(ops.release, '/f.txt', fd))[0], 0);
});

t.test('fdatasync and fsyncdir wait for the flush as well', async (t) => {
  const { store, ops } = setup(t);
  const fd = await createWithContent(ops, '/g.txt', 'x');
  store.hold({ transactions: false });
  const fdatasync = call(ops.fsync, '/g.txt', 1, fd);
  const fsyncdir = call(ops.fsyncdir, '/', 0, 0);
  await flushRequested(store, 2);
  t.equal(store.flushCalls, 2, 'both asked the store for its flush');
  t.notOk(await settlesSoon(fdatasync), 'fdatasync waits');
  t.notOk(await settlesSoon(fsyncdir), 'fsyncdir waits');
  store.release();
  t.same(await fdatasync, [0, undefined]);
  t.same(await fsyncdir, [0, undefined]);
  t.equal((await call(ops.release, '/g.txt', fd))[0], 0);
});

t.test('fsyncdir waits for releases under way: a file made and closed without a write is stored at its release, after close(2)', async (t) => {
  // As on a remote mount: no provisional close at the flush, and commits that take a while (RPC).
  // The kernel sends the release after close(2) has returned; a directory's fsync right after
  // answered before the file was stored (the tree test's remote variant, listing after closing).
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const { fs, ops } = setup(t, (local) => new Proxy(local, {
    get: (target, key) => {
      if (key === 'holdsProvisional') return undefined;
      if (key === 'commit') return async (...args: Parameters<LocalBackend['commit']>) => (await gate, target.commit(...args));
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }));
  const [, fd] = await call<number>(ops.create, '/made', 0o100644);
  t.equal((await call(ops.flush, '/made', fd))[0], 0, 'close(2): the flush');
  const release = call(ops.release, '/made', fd);
  const fsyncdir = call(ops.fsyncdir, '/', 0, 0);
  t.notOk(await settlesSoon(fsyncdir), 'fsyncdir waits while the release commits');
  open();
  t.same(await release, [0, undefined]);
  t.same(await fsyncdir, [0, undefined]);
  t.equal(fs.stat('/made')?.kind, 'file', 'the file is stored once fsyncdir answered');
});

t.test('service calls without an origin (every RPC write) stay durable', async (t) => {
  const { store, fs } = setup(t);
  await fs.write('/r.txt', Buffer.from('rpc'));
  await fs.mkdir('/rd');
  await fs.rename('/r.txt', '/rd/r.txt');
  await fs.setAttributes('/rd/r.txt', { mode: 0o600 });
  await fs.delete('/rd/r.txt');
  await fs.rmdir('/rd');
  t.equal(store.transactions.length, 6);
  t.same(store.transactions.filter((d) => !d), [], 'every one waited for the durable commit');
});
