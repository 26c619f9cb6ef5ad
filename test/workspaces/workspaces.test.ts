import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { buildServices, type Services } from '../../src/daemon.js';

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
  const { workspaces: ws } = await open(t);
  await ws.register('/tmpws', { ttl: 0.05 });
  t.ok(ws.get('/tmpws'));
  await new Promise((r) => setTimeout(r, 80));
  t.equal(ws.get('/tmpws'), null);
  t.same(ws.list(), []);
  await t.rejects(ws.snapshot('/tmpws'), { code: -32000 });
  await ws.register('/tmpws');
  t.ok(ws.get('/tmpws'));
});

t.test('snapshot operations need a registered workspace', async (t) => {
  const { workspaces: ws } = await open(t);
  await t.rejects(ws.snapshot('/ghost'), { code: -32000, message: /Workspace not registered: \/ghost/ });
  t.throws(() => ws.log('/ghost'), { code: -32000 });
  t.throws(() => ws.diff('/ghost', 1, 2), { code: -32000 });
  await t.rejects(ws.restore('/ghost', 1), { code: -32000 });
});

t.test('snapshot / edit / restore / diff round trip on 1,000 files; history intact', async (t) => {
  const { fs, workspaces: ws, store } = await open(t);
  const N = 1000;
  await Promise.all(Array.from({ length: N }, (_, i) => fs.write(`/w/d${i % 10}/f${i}.txt`, enc(`file ${i}\n`))));
  await ws.register('/w');
  const chunksBefore = [...store.blobs.hashes()].length;
  const s1 = await ws.snapshot('/w', { description: 'first', tags: ['t1'], created_by: 'tester' });
  t.match(s1, { snapshot_number: 1, file_count: N, description: 'first', tags: ['t1'], created_by: 'tester' });
  t.equal([...store.blobs.hashes()].length, chunksBefore, 'a snapshot copies no bytes');

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
