/**
 * @module test/fuse/kernel-cache
 * In process (no kernel): which notifications another face's change turns into and how they are
 * encoded (linux/fuse.h), which changes count as the mount's own (those are never sent: the kernel
 * saw them happen), and that the own-change marks stay bounded. The notifications reaching the
 * kernel are tested through a real mount in test/fuse/cross-face.test.ts.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { ChangeEvent } from '../../src/core/events.js';
import { EventBus } from '../../src/core/events.js';
import { FsService } from '../../src/fs/service.js';
import { LmdbStore } from '../../src/store/lmdb/index.js';
import { LocalBackend } from '../../src/transports/fuse/local.js';
import { FuseFileSystem } from '../../src/transports/fuse/operations.js';
import { OWN_SWEEP_AT, OWN_WINDOW_MS, OwnChanges, notificationsFor, resolveNotifications } from '../../src/transports/fuse/kernel-cache.js';
import { call, writeFile } from '../helpers/fuse-ops.js';

const at = new Date(0).toISOString();

/** A notification as the kernel reads it: [code, path whose node id goes in, name for an entry, attributes only]. */
function decode(t: Test, n: { path: string; message: Buffer }): [string, string, string?, boolean?] {
  const m = n.message;
  t.equal(m.readUInt32LE(0), m.length, 'the header carries the message length');
  t.equal(m.readBigUInt64LE(8), 0n, 'unique 0: a notification, not a reply');
  const code = m.readInt32LE(4);
  if (code === 2) {
    t.equal(m.length, 40);
    t.equal(m.readBigInt64LE(32), 0n, 'to the end of the file');
    return ['inode', n.path, undefined, m.readBigInt64LE(24) === -1n];
  }
  t.equal(code, 3, 'FUSE_NOTIFY_INVAL_ENTRY');
  const len = m.readUInt32LE(24);
  t.equal(m.length, 32 + len + 1, 'name and its NUL');
  t.equal(m[32 + len], 0);
  return ['entry', n.path, m.subarray(32, 32 + len).toString()];
}

t.test('each kind of change tells the kernel what it must forget, a rewritten file itself first', async (t) => {
  const decoded = (event: ChangeEvent) => notificationsFor(event).map((n) => decode(t, n));
  t.same(decoded({ type: 'write', path: '/docs/a.md', version: 3, at }), [
    ['inode', '/docs/a.md', undefined, false], // attributes and pages
    ['entry', '/docs', 'a.md'],
    ['inode', '/docs', undefined, true], // the directory's attributes only
  ]);
  t.same(decoded({ type: 'write', path: '/docs/new.md', version: 1, at }), [
    ['entry', '/docs', 'new.md'], ['inode', '/docs', undefined, true],
  ], 'a new file: nothing of its own to forget (the kernel is not made to look it up)');
  t.same(decoded({ type: 'delete', path: '/top.txt', at }), [['entry', '/', 'top.txt'], ['inode', '/', undefined, true]]);
  t.same(decoded({ type: 'mkdir', path: '/d/e', at }), [['entry', '/d', 'e'], ['inode', '/d', undefined, true]]);
  t.same(decoded({ type: 'rmdir', path: '/d/e', at }), [['entry', '/d', 'e'], ['inode', '/d', undefined, true]]);
  t.same(decoded({ type: 'rename', path: '/a/x', new_path: '/b/ü y', at }), [
    ['entry', '/a', 'x'], ['inode', '/a', undefined, true],
    ['entry', '/b', 'ü y'], ['inode', '/b', undefined, true],
  ], 'both names (UTF-8 bytes counted)');
  t.same(decoded({ type: 'delete', path: '/', at }), [], 'the root has no entry to forget');
});

t.test('with the binding\'s node table, ids are written in and paths the kernel does not hold are left out', async (t) => {
  const ids = new Map([['/docs/a.md', 7], ['/docs', 3]]);
  const asked: string[] = [];
  const nodeOf = (path: string) => {
    asked.push(path);
    return ids.get(path) ?? 0;
  };
  const resolved = resolveNotifications(notificationsFor({ type: 'write', path: '/docs/a.md', version: 3, at }), nodeOf);
  t.same(resolved.map((n) => [decode(t, n)[0], n.path, n.message.readBigUInt64LE(16), n.resolved]), [
    ['inode', '/docs/a.md', 7n, true], ['entry', '/docs', 3n, true], ['inode', '/docs', 3n, true],
  ], 'each node id in its message, in the same order');
  t.same(resolveNotifications(notificationsFor({ type: 'rename', path: '/docs/b.md', new_path: '/other/c.md', at }), nodeOf)
    .map((n) => [decode(t, n)[0], n.path]), [['entry', '/docs'], ['inode', '/docs']], 'a directory the kernel does not hold: nothing to drop there');
  t.same(resolveNotifications(notificationsFor({ type: 'delete', path: '/x/y', at }), nodeOf), [], 'nothing held: nothing sent');
  t.ok(asked.length > 0);
});

t.test('a path is the mount\'s own while its change runs and for a while after', async (t) => {
  let now = 1000;
  const own = new OwnChanges(() => now);
  let release!: () => void;
  const running = own.during(['/a', '/b'], () => new Promise<void>((r) => (release = r)));
  now += 10 * OWN_WINDOW_MS;
  t.ok(own.isOwn('/a') && own.isOwn('/b'), 'however long the change takes');
  t.notOk(own.isOwn('/c'));
  release();
  await running;
  now += OWN_WINDOW_MS;
  t.ok(own.isOwn('/a'), 'still within the window after it settled');
  now += 1;
  t.notOk(own.isOwn('/a'), 'then no longer');
  await t.rejects(own.during(['/f'], () => Promise.reject(new Error('refused'))), /refused/, 'a failure is passed on');
  t.ok(own.isOwn('/f'), 'and marks the path as well (it may have changed part-way)');
});

t.test('where the mount\'s change was a commit, only a write with its etag is its own', async (t) => {
  let now = 0;
  const own = new OwnChanges(() => now);
  let release!: (r: { etag: string }) => void;
  const commit = own.during(['/f'], () => new Promise<{ etag: string }>((r) => (release = r)), (r) => r.etag);
  t.ok(own.isOwn('/f', 'e7'), 'while the commit runs, any write (what it commits is not known yet)');
  release({ etag: 'e3' });
  await commit;
  now += 10;
  t.ok(own.isOwn('/f', 'e3'), 'the etag it made');
  t.notOk(own.isOwn('/f', 'e4'), 'another face\'s write moments later is not');
  t.ok(own.isOwn('/f'), 'a change without an etag (a delete, a rename) within the window still is');
  await own.during(['/f'], async () => ({ etag: 'e5' }), (r) => r.etag);
  t.ok(own.isOwn('/f', 'e3') && own.isOwn('/f', 'e5'), 'every recent commit of it');
  now += OWN_WINDOW_MS + 1;
  t.notOk(own.isOwn('/f', 'e5'), 'and none once the window is over');
});

t.test('own-change marks stay bounded however many paths a tool changes', async (t) => {
  let now = 0;
  const own = new OwnChanges(() => now);
  for (let i = 0; i < 5 * OWN_SWEEP_AT; i++) {
    now += 1; // 1 ms apart: every mark but the last OWN_WINDOW_MS (2,000) has expired
    await own.during([`/f${i}`], async () => undefined);
  }
  t.ok(own.size <= OWN_SWEEP_AT, `${own.size} marks kept`);
  t.ok(own.isOwn(`/f${5 * OWN_SWEEP_AT - 1}`), 'the recent ones are kept');
});

t.test('the mount reports other faces\' changes and never its own', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-fuse-kc-'));
  const lmdb = new LmdbStore(dir);
  const events = new EventBus();
  const fs = new FsService({ store: lmdb, blobs: lmdb.blobs, events });
  const backend = new LocalBackend({ fs, events, dataDir: dir });
  const external: ChangeEvent[] = [];
  const fuse = new FuseFileSystem({
    backend, log: pino({ level: 'silent' }), uid: process.getuid!(), gid: process.getgid!(),
    onExternalChange: (e) => external.push(e),
  });
  t.teardown(async () => {
    await fuse.close();
    await lmdb.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const ops = fuse.operations();
  const seen: ChangeEvent[] = [];
  events.subscribe((e) => seen.push(e));

  // Through the mount: create and write, mkdir, rename, chmod, unlink, rmdir.
  await writeFile(ops, '/m.txt', 'hi');
  t.same(await call(ops.mkdir, '/d', 0o755), [0, undefined]);
  t.same(await call(ops.rename, '/m.txt', '/d/m.txt'), [0, undefined]);
  t.same(await call(ops.chmod, '/d/m.txt', 0o600), [0, undefined]);
  t.same(await call(ops.unlink, '/d/m.txt'), [0, undefined]);
  t.same(await call(ops.rmdir, '/d'), [0, undefined]);
  await backend.drain();
  t.ok(seen.length >= 5, `the mount's changes were published (${seen.length} events)`);
  t.same(external, [], 'none of them is reported as another face\'s');

  // Through the service directly (what RPC, WebSocket and other mounts do), one of them right
  // after the mount wrote the same file.
  await writeFile(ops, '/both.txt', 'mount');
  await backend.drain();
  t.same(external, [], 'the mount\'s write of /both.txt is its own');
  await fs.write('/both.txt', Buffer.from('rpc'));
  t.same(external.map((e) => [e.type, e.path, e.version]), [['write', '/both.txt', 2]], 'another face\'s write right after it is not');
  external.length = 0;
  await fs.write('/rpc.txt', Buffer.from('x'));
  await fs.mkdir('/rd');
  await fs.rename('/rpc.txt', '/rd/rpc.txt');
  await fs.delete('/rd/rpc.txt');
  t.same(external.map((e) => [e.type, e.path, e.new_path]), [
    ['write', '/rpc.txt', undefined], ['mkdir', '/rd', undefined], ['rename', '/rpc.txt', '/rd/rpc.txt'], ['delete', '/rd/rpc.txt', undefined],
  ], 'every change made elsewhere is');

  // Changes that carry no etag, made elsewhere right after the mount changed the same paths: the
  // in-process mount knows its own events exactly (they were taken for its own for 2 s, and the
  // kernel kept showing the path as it was until its cache timed out).
  t.same(await call(ops.mkdir, '/soon', 0o755), [0, undefined]);
  await writeFile(ops, '/soon/f', 'mount');
  t.same(await call(ops.chmod, '/soon/f', 0o600), [0, undefined]);
  await backend.drain();
  external.length = 0;
  await fs.rename('/soon/f', '/soon/g');
  await fs.delete('/soon/g');
  await fs.rmdir('/soon');
  t.same(external.map((e) => [e.type, e.path, e.new_path]), [
    ['rename', '/soon/f', '/soon/g'], ['delete', '/soon/g', undefined], ['rmdir', '/soon', undefined],
  ], 'another face\'s rename, delete and rmdir of what the mount changed moments ago are reported');
});
