import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { buildServices, type Services } from '../../src/daemon.js';
import { WorkspaceService } from '../../src/workspaces/service.js';
import { INLINE_MAX_BYTES } from '../../src/fs/service.js';

const enc = (s: string) => Buffer.from(s);

async function open(t: Test): Promise<Services> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-ws-'));
  const services = buildServices(dir, pino({ level: 'silent' }));
  t.teardown(async () => {
    await services.mounts.close();
    await services.store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return services;
}

t.test('register, list, info, duplicate, unregister keeps files', async (t) => {
  const { fs, workspaces: ws } = await open(t);
  await fs.write('/proj/a.txt', enc('a'));
  const rec = await ws.register('proj', { name: 'Project', tags: ['x'], metadata: { k: 1 }, created_by: 'me' });
  t.match(rec, { path: '/proj', name: 'Project', tags: ['x'], metadata: { k: 1 }, created_by: 'me' });
  t.ok(rec.created_at instanceof Date);
  await t.rejects(ws.register('/proj'), { code: -32001 });
  t.same(ws.list().map((w) => w.path), ['/proj']);
  t.equal(ws.get('/proj')?.name, 'Project');
  t.equal(ws.get('/nope'), null);
  t.equal(await ws.unregister('/proj'), true);
  t.equal(await ws.unregister('/proj'), false);
  t.equal(ws.get('/proj'), null);
  t.equal(fs.read('/proj/a.txt').content.toString(), 'a', 'files are kept');
});

t.test('ttl: an expired registration is gone and the path can be registered again', async (t) => {
  const { fs, store } = await open(t);
  let now = Date.parse('2026-11-24T00:00:00Z');
  const ws = new WorkspaceService({ store, fs, clock: () => now });
  await ws.register('/tmpws', { ttl: 60 });
  t.ok(ws.get('/tmpws'));
  now += 59_999;
  t.ok(ws.get('/tmpws'), 'alive until the ttl has passed');
  now += 1;
  t.equal(ws.get('/tmpws'), null);
  t.same(ws.list(), []);
  await t.rejects(ws.snapshot('/tmpws'), { code: -32000 });
  await ws.register('/tmpws');
  t.ok(ws.get('/tmpws'));
  now += 10 ** 9;
  t.ok(ws.get('/tmpws'), 'no ttl: never expires');
});

t.test('snapshot operations need a registered workspace', async (t) => {
  const { workspaces: ws } = await open(t);
  await t.rejects(ws.snapshot('/ghost'), { code: -32000, message: /Workspace not registered: \/ghost/ });
  t.throws(() => ws.log('/ghost'), { code: -32000 });
  t.throws(() => ws.diff('/ghost', 1, 2), { code: -32000 });
  await t.rejects(ws.restore('/ghost', 1), { code: -32000 });
});

t.test('a restore racing an unregister of its workspace is -32000 and restores nothing', async (t) => {
  const { fs, workspaces: ws } = await open(t);
  await ws.register('/race');
  await fs.write('/race/a.txt', Buffer.from('only the snapshot keeps this'));
  await ws.snapshot('/race');
  await fs.delete('/race/a.txt');
  // Both start while the workspace is registered; the unregister commits first and then releases
  // the snapshot's chunks, so the restore must notice inside its own transaction.
  const unregistered = ws.unregister('/race');
  const restored = ws.restore('/race', 1);
  await t.rejects(restored, { code: -32000, message: /Workspace not registered: \/race/ });
  t.equal(await unregistered, true);
  t.equal(fs.exists('/race/a.txt'), false, 'nothing was restored');
  // The content is gone with the snapshot: writing it again stores it afresh, whole.
  await fs.write('/race/b.txt', Buffer.from('only the snapshot keeps this'));
  t.equal(fs.read('/race/b.txt').content.toString(), 'only the snapshot keeps this');
});

t.test('a snapshot copies no chunked content; inline content is stored once and freed with the last snapshot', async (t) => {
  const { fs, workspaces: ws, store } = await open(t);
  const big = Buffer.alloc(INLINE_MAX_BYTES + 1, 'b');
  await fs.write('/c/big.txt', big);
  await fs.write('/c/small.txt', enc('small content'));
  await ws.register('/c');
  const before = [...store.blobs.hashes()];
  t.equal(before.length, 1, 'only the big file has a chunk');
  await ws.snapshot('/c');
  await ws.snapshot('/c');
  const after = [...store.blobs.hashes()];
  t.equal(after.length, 2, 'two snapshots: the small file stored once, the big one not again');
  await fs.delete('/c/small.txt');
  await fs.write('/c/big.txt', enc('now small'));
  await ws.restore('/c', 1);
  t.equal(fs.read('/c/small.txt').content.toString(), 'small content', 'restored from the snapshot');
  t.ok(fs.read('/c/big.txt').content.equals(big));
  t.equal(fs.getVersion('/c/big.txt', 2).toString(), 'now small', 'history kept across the restore');
  await ws.unregister('/c');
  await fs.rmdir('/c', { recursive: true });
  t.same([...store.blobs.hashes()], [], 'nothing left once the snapshots and files are gone');
});

t.test('snapshot / edit / restore / diff round trip on 1,000 files; history intact', async (t) => {
  const { fs, workspaces: ws, store } = await open(t);
  const N = 1000;
  await Promise.all(Array.from({ length: N }, (_, i) => fs.write(`/w/d${i % 10}/f${i}.txt`, enc(`file ${i}\n`))));
  await ws.register('/w');
  const chunksBefore = [...store.blobs.hashes()].length;
  const s1 = await ws.snapshot('/w', { description: 'first', tags: ['t1'], created_by: 'tester' });
  t.match(s1, { snapshot_number: 1, file_count: N, description: 'first', tags: ['t1'], created_by: 'tester' });
  // Small files keep their content in their entries; a snapshot shares content by chunk
  // references, so it stores each one as a chunk (once: a later snapshot only references it).
  t.equal([...store.blobs.hashes()].length, chunksBefore + N, 'each small file\'s content became one chunk');

  // edits: modify 0..99, delete 100..199, add 100 new files
  await Promise.all(Array.from({ length: 100 }, (_, i) => fs.write(`/w/d${i % 10}/f${i}.txt`, enc(`changed ${i}\n`))));
  await Promise.all(Array.from({ length: 100 }, (_, i) => fs.delete(`/w/d${(i + 100) % 10}/f${i + 100}.txt`)));
  await Promise.all(Array.from({ length: 100 }, (_, i) => fs.write(`/w/new/n${i}.txt`, enc(`new ${i}\n`))));
  const s2 = await ws.snapshot('/w', { description: 'second' });
  t.equal(s2.snapshot_number, 2);
  t.equal(s2.file_count, N);

  const d = ws.diff('/w', 1, 2);
  t.same(d.summary, { added_count: 100, modified_count: 100, deleted_count: 100 });
  t.ok(d.added.every((p) => p.startsWith('/w/new/')));
  t.ok(d.modified.includes('/w/d0/f0.txt'));
  t.ok(d.deleted.includes('/w/d0/f100.txt'));

  t.same(ws.log('/w').map((s) => s.snapshot_number), [2, 1], 'newest first');
  t.same(ws.log('/w', 1).map((s) => s.snapshot_number), [2]);

  const r = await ws.restore('/w', 1);
  t.match(r, { restored: true, files_restored: 200, files_deleted: 100, snapshot_number: 1 });
  t.equal(fs.read('/w/d0/f0.txt').content.toString(), 'file 0\n');
  t.equal(fs.read('/w/d0/f100.txt').content.toString(), 'file 100\n', 'deleted files return');
  t.notOk(fs.exists('/w/new/n0.txt'), 'added files are gone');
  t.same(fs.listVersions('/w/d0/f0.txt').map((v) => v.version), [3, 2, 1], 'restore is a new version; history kept');
  t.same(ws.diff('/w', 1, 1).summary, { added_count: 0, modified_count: 0, deleted_count: 0 });

  // restore to 2 again
  const r2 = await ws.restore('/w', 2);
  t.equal(r2.files_restored, 200);
  t.equal(fs.read('/w/new/n5.txt').content.toString(), 'new 5\n');
  t.rejects(ws.restore('/w', 9), { code: -32000 });
});

t.test('snapshot content outlives deletes; unregister releases it', async (t) => {
  const { fs, workspaces: ws, store } = await open(t);
  const big = randomBytes(3 * 1024 * 1024 + 5);
  const { etag } = await fs.write('/p/big.bin', big);
  await ws.register('/p');
  await ws.snapshot('/p');
  await fs.delete('/p/big.bin');
  const chunks = [...store.blobs.hashes()];
  t.ok(chunks.length >= 4, 'chunks still referenced by the snapshot');
  await ws.restore('/p', 1);
  t.equal(fs.read('/p/big.bin').record.etag, etag);
  t.ok(fs.read('/p/big.bin').content.equals(big));
  await fs.delete('/p/big.bin');
  await ws.unregister('/p');
  t.same([...store.blobs.hashes()], [], 'last reference gone: chunks freed');
  t.same([...store.table('refs').keys({})], [], 'and no reference count is left behind');
  for (const h of chunks) t.notOk(store.blobs.has(h));
});

t.test('deprecated agent_id maps to /workspace/<agent_id>', async (t) => {
  const { fs, workspaces: ws, methods } = await open(t);
  await fs.write('/workspace/bot/x.txt', enc('x'));
  await ws.register('/workspace/bot');
  const ctx = { authenticated: false, subjectType: 'user', subjectId: 'anonymous', tenantId: 'default', isAdmin: false, source: 'test' };
  const snap = await methods.workspace_snapshot!.handler(methods.workspace_snapshot!.params.parse({ agent_id: 'bot' }), ctx);
  t.match(snap, { snapshot_number: 1, workspace_path: '/workspace/bot', file_count: 1 });
  t.throws(() => methods.workspace_log!.params.parse({ bogus: 1 }));
});

t.test('manifest records mode; restore brings mode back, diff sees a mode change', async (t) => {
  const { fs, workspaces: ws } = await open(t);
  await fs.write('/m/run.sh', enc('#!/bin/sh\n'));
  await fs.setAttributes('/m/run.sh', { mode: 0o755 });
  await fs.write('/m/plain.txt', enc('p'));
  await ws.register('/m');
  await ws.snapshot('/m');
  // content and mode change
  await fs.write('/m/run.sh', enc('#!/bin/sh\necho changed\n'));
  await fs.setAttributes('/m/run.sh', { mode: 0o600 });
  // mode-only change
  await fs.setAttributes('/m/plain.txt', { mode: 0o400 });
  await ws.snapshot('/m');
  t.same(ws.diff('/m', 1, 2).modified, ['/m/plain.txt', '/m/run.sh'], 'a mode change is a modification');
  const versionsBefore = fs.listVersions('/m/plain.txt').length;
  const r = await ws.restore('/m', 1);
  t.equal(r.files_restored, 1, 'only the file whose content changed is rewritten');
  t.equal(fs.stat('/m/run.sh')?.mode, 0o755, 'mode restored with the content');
  t.equal(fs.read('/m/run.sh').content.toString(), '#!/bin/sh\n');
  t.equal(fs.stat('/m/plain.txt')?.mode, 0o644, 'mode-only change restored');
  t.equal(fs.listVersions('/m/plain.txt').length, versionsBefore, 'a mode is metadata: no new version');
  t.same(ws.diff('/m', 1, 1).summary, { added_count: 0, modified_count: 0, deleted_count: 0 });
});

t.test('chunk references: snapshot content survives overwrite, delete and rollback of every live user', async (t) => {
  const { fs, workspaces: ws, store } = await open(t);
  const x = randomBytes(1024 * 1024 + 17); // two chunks
  const { etag } = await fs.write('/w/a.bin', x);
  await fs.write('/elsewhere/copy.bin', x); // a second live user of the same chunks
  await ws.register('/w');
  await ws.snapshot('/w');
  const hashes = fs.file('/w/a.bin').chunks;
  t.equal(hashes.length, 2);
  await fs.write('/w/a.bin', enc('overwritten'));
  await fs.delete('/w/a.bin'); // drops every version of the live file
  await fs.delete('/elsewhere/copy.bin'); // the last live user of the chunks
  for (const h of hashes) t.ok(store.blobs.has(h), 'chunk kept for the snapshot');
  const r = await ws.restore('/w', 1);
  t.match(r, { files_restored: 1, files_deleted: 0 });
  t.equal(fs.read('/w/a.bin').record.etag, etag);
  t.ok(fs.read('/w/a.bin').content.equals(x));
  // the restored file and the snapshot each hold a reference: deleting the file keeps them
  await fs.delete('/w/a.bin');
  for (const h of hashes) t.ok(store.blobs.has(h));
  await ws.restore('/w', 1);
  await ws.unregister('/w'); // the snapshot's references go; the live file's stay
  t.ok(fs.read('/w/a.bin').content.equals(x), 'live file readable after its snapshot is gone');
  await fs.delete('/w/a.bin');
  for (const h of hashes) t.notOk(store.blobs.has(h), 'freed with the last reference');
});

t.test('records carry every field; restore result shape; ttl sweep releases snapshots', async (t) => {
  const { fs, workspaces: ws, store } = await open(t);
  const rec = await ws.register('/s', { session_id: 'sess-1', ttl: 3600, description: 'd' });
  t.match(rec, { path: '/s', name: null, description: 'd', created_by: null, tags: [], metadata: {}, session_id: 'sess-1', ttl: 3600 });
  t.equal(rec.expires_at!.getTime() - rec.created_at.getTime(), 3_600_000);
  t.equal((await ws.register('/forever')).ttl, null);

  await fs.write('/s/f.txt', enc('f'));
  await ws.snapshot('/s');
  await fs.write('/s/f.txt', enc('g'));
  const r = await ws.restore('/s', 1);
  t.same(Object.keys(r).sort(), ['files_deleted', 'files_restored', 'restored', 'snapshot_number', 'timestamp']);
  t.ok(r.timestamp instanceof Date);

  await fs.write('/short/x.bin', randomBytes(2000));
  const hash = fs.file('/short/x.bin').chunks[0]!;
  let now = Date.now();
  const clocked = new WorkspaceService({ store, fs, clock: () => now });
  await clocked.register('/short', { ttl: 0.2 });
  await clocked.snapshot('/short'); // the snapshot pins the content...
  await fs.delete('/short/x.bin'); // ...which no live file uses any more
  t.ok(store.blobs.has(hash));
  now += 200;
  t.equal(clocked.get('/short'), null, 'expired');
  t.notOk(clocked.list().some((w) => w.path === '/short'), 'not listed');
  await t.rejects(clocked.restore('/short', 1), { code: -32000, message: 'Workspace not registered: /short' });
  t.throws(() => clocked.log('/short'), { code: -32000 });
  t.equal(await clocked.sweepExpired(), 1);
  t.notOk(store.blobs.has(hash), 'content pinned by an expired registration is released');
  t.equal(await clocked.sweepExpired(), 0);
  t.same(ws.list().map((w) => w.path), ['/forever', '/s']);
});

t.test('log limit, diff paths absolute, unknown snapshot', async (t) => {
  const { fs, workspaces: ws, methods } = await open(t);
  await ws.register('/l');
  for (let i = 0; i < 5; i++) {
    await fs.write(`/l/f${i}.txt`, enc(String(i)));
    await ws.snapshot('/l', { description: `s${i}` });
  }
  t.same(ws.log('/l', 2).map((s) => s.description), ['s4', 's3']);
  t.same(ws.log('/l').length, 5);
  t.same(ws.diff('/l', 1, 5).added, ['/l/f1.txt', '/l/f2.txt', '/l/f3.txt', '/l/f4.txt']);
  t.same(ws.diff('/l', 5, 1).deleted, ['/l/f1.txt', '/l/f2.txt', '/l/f3.txt', '/l/f4.txt']);
  t.throws(() => ws.diff('/l', 1, 99), { code: -32000 });
  t.throws(() => methods.workspace_log!.params.parse({ workspace_path: '/l', limit: 0 }));
  t.equal(methods.workspace_log!.params.parse({ workspace_path: '/l' }).limit, 100, 'limit defaults to 100');
  t.same(ws.diff('/l', 2, 2).summary, { added_count: 0, modified_count: 0, deleted_count: 0 });
  await ws.register('/l2');
  t.equal((await ws.snapshot('/l2')).snapshot_number, 1, 'numbers count per workspace');
  t.equal((await ws.snapshot('/l')).snapshot_number, 6);
});

t.test('file names that are Object.prototype members are ordinary entries', async (t) => {
  const { fs, workspaces: ws } = await open(t);
  await fs.write('/o/keep.txt', enc('k'));
  await ws.register('/o');
  await ws.snapshot('/o');
  for (const name of ['__proto__', 'toString', 'constructor', 'hasOwnProperty']) await fs.write(`/o/${name}`, enc(name));
  await ws.snapshot('/o');
  t.same(ws.diff('/o', 1, 2), {
    added: ['/o/__proto__', '/o/constructor', '/o/hasOwnProperty', '/o/toString'], modified: [], deleted: [],
    summary: { added_count: 4, modified_count: 0, deleted_count: 0 },
  });
  t.same(ws.diff('/o', 2, 1).deleted, ['/o/__proto__', '/o/constructor', '/o/hasOwnProperty', '/o/toString']);
  t.match(await ws.restore('/o', 1), { files_deleted: 4, files_restored: 0 });
  t.notOk(fs.exists('/o/__proto__'));
  t.match(await ws.restore('/o', 2), { files_deleted: 0, files_restored: 4 });
  t.equal(fs.read('/o/__proto__').content.toString(), '__proto__');
});

t.test('a running daemon drops expired registrations and frees what their snapshots pinned', async (t) => {
  const { Daemon } = await import('../../src/daemon.js');
  const { loadConfig } = await import('../../src/config.js');
  const { createHash } = await import('node:crypto');
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-ws-sweep-'));
  let now = Date.parse('2026-11-24T00:00:00Z');
  const daemon = new Daemon(loadConfig({ port: 0, dataDir, logLevel: 'silent' }, {}), undefined, {
    clock: () => now, sweepEveryMs: 20,
  });
  await daemon.start();
  t.teardown(async () => {
    await daemon.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { fs, workspaces, store } = daemon.services;
  const content = enc('pinned only by the snapshot of a short-lived workspace');
  const hash = createHash('sha256').update(content).digest('hex');
  await workspaces.register('/short', { ttl: 60 });
  await fs.write('/short/a.txt', content);
  await workspaces.snapshot('/short');
  await fs.delete('/short/a.txt');
  t.ok(store.blobs.has(hash), 'the snapshot keeps the chunk alive');
  now += 61_000;
  for (let i = 0; i < 200 && store.blobs.has(hash); i++) await new Promise((r) => setTimeout(r, 10));
  t.notOk(store.blobs.has(hash), 'released by the periodic sweep, without a restart');
  await t.resolves(workspaces.register('/short'), 'the path can be registered again');
});
