import t from 'tap';
import { makeFs, b, sha256, rejection } from './fixture.js';

async function threeVersions(t: Parameters<typeof makeFs>[0]) {
  const fx = makeFs(t);
  await fx.fs.write('/doc.txt', b('line a\nline b\nline c\n'));
  await fx.fs.write('/doc.txt', b('line a\nline B\nline c\nline d\n'));
  await fx.fs.write('/doc.txt', b('line a\nline b\nline c\n'));
  fx.take();
  return fx;
}

t.test('list_versions: newest first with version, etag, size, modified_at', async (t) => {
  const { fs } = await threeVersions(t);
  const list = fs.listVersions('/doc.txt');
  t.same(list.map((v) => v.version), [3, 2, 1]);
  t.equal(list[0]!.etag, sha256('line a\nline b\nline c\n'));
  t.equal(list[2]!.etag, list[0]!.etag, 'same content, same etag');
  t.equal(list[1]!.size, Buffer.byteLength('line a\nline B\nline c\nline d\n'));
  for (const v of list) {
    t.ok(v.modified_at instanceof Date);
    t.equal(v.source, 'write');
  }
  t.ok(list[0]!.modified_at >= list[2]!.modified_at);
});

t.test('list_versions orders numerically past 9', async (t) => {
  const { fs } = makeFs(t);
  for (let i = 1; i <= 12; i++) await fs.write('/n.txt', b(String(i)));
  t.same(fs.listVersions('/n.txt').map((v) => v.version), [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
  t.equal(fs.getVersion('/n.txt', 10).toString(), '10');
});

t.test('list_versions keeps files apart even when one name extends another', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/a', b('1'));
  await fs.write('/a', b('2'));
  await fs.write('/a0', b('x'));
  await fs.write('/ab', b('y'));
  t.same(fs.listVersions('/a').map((v) => v.version), [2, 1]);
  t.same(fs.listVersions('/a0').map((v) => v.version), [1]);
});

t.test('get_version returns that version\'s bytes', async (t) => {
  const { fs } = await threeVersions(t);
  t.equal(fs.getVersion('/doc.txt', 2).toString(), 'line a\nline B\nline c\nline d\n');
  t.equal(fs.getVersion('/doc.txt', 1).toString(), 'line a\nline b\nline c\n');
});

t.test('versions errors: missing version or file -32000, a directory EISDIR', async (t) => {
  const { fs } = await threeVersions(t);
  await fs.mkdir('/dir');
  t.throws(() => fs.getVersion('/doc.txt', 4), { code: -32000, data: { path: '/doc.txt', version: 4 } });
  t.throws(() => fs.getVersion('/nope.txt', 1), { code: -32000, data: { path: '/nope.txt' } });
  t.throws(() => fs.listVersions('/nope.txt'), { code: -32000 });
  t.throws(() => fs.listVersions('/dir'), { code: -32005, data: { errno: 'EISDIR' } });
  t.throws(() => fs.getVersion('/', 1), { code: -32002 });
});

t.test('rollback writes the old content as a new version; history is kept', async (t) => {
  const fx = await threeVersions(t);
  const { fs } = fx;
  const res = await fs.rollback('/doc.txt', 2);
  t.same(res, { success: true, version: 4, etag: sha256('line a\nline B\nline c\nline d\n') });
  t.equal(fs.read('/doc.txt').content.toString(), 'line a\nline B\nline c\nline d\n');
  const list = fs.listVersions('/doc.txt');
  t.same(list.map((v) => v.version), [4, 3, 2, 1], 'nothing rewritten, one version added');
  t.equal(list[0]!.source, 'rollback:2');
  t.equal(list[0]!.etag, list[2]!.etag);
  t.equal(fs.getMetadata('/doc.txt')?.version, 4);
  const [e] = fx.take();
  t.match(e, { type: 'write', path: '/doc.txt', etag: res.etag, version: 4 });
  const next = await fs.write('/doc.txt', b('after'));
  t.equal(next.version, 5);
});

t.test('rollback keeps created_at and can target the current version', async (t) => {
  const { fs } = await threeVersions(t);
  const created = fs.getMetadata('/doc.txt')!.created_at.getTime();
  const res = await fs.rollback('/doc.txt', 3);
  t.equal(res.version, 4);
  t.equal(fs.getMetadata('/doc.txt')!.created_at.getTime(), created);
});

t.test('rollback refusals change nothing', async (t) => {
  const fx = await threeVersions(t);
  const before = fx.dump();
  t.match(await rejection(fx.fs.rollback('/doc.txt', 9)), { code: -32000 });
  t.match(await rejection(fx.fs.rollback('/nope.txt', 1)), { code: -32000 });
  t.same(fx.dump(), before);
  t.same(fx.take(), []);
});

t.test('diff_versions metadata', async (t) => {
  const { fs } = await threeVersions(t);
  const e1 = sha256('line a\nline b\nline c\n');
  const e2 = sha256('line a\nline B\nline c\nline d\n');
  t.same(fs.diffVersions('/doc.txt', 1, 2, 'metadata'), {
    path: '/doc.txt', v1: 1, v2: 2, etag_v1: e1, etag_v2: e2, size_v1: 21, size_v2: 28, content_changed: true,
  });
  t.match(fs.diffVersions('/doc.txt', 1, 3, 'metadata'), { content_changed: false, etag_v1: e1, etag_v2: e1 });
  t.throws(() => fs.diffVersions('/doc.txt', 1, 7, 'metadata'), { code: -32000 });
});

t.test('diff_versions content is a unified diff', async (t) => {
  const { fs } = await threeVersions(t);
  const diff = fs.diffVersions('/doc.txt', 1, 2, 'content') as string;
  t.type(diff, 'string');
  t.match(diff, /^--- \/doc\.txt \(v1\)/m);
  t.match(diff, /^\+\+\+ \/doc\.txt \(v2\)/m);
  t.match(diff, /^@@ /m);
  t.match(diff, /^-line b$/m);
  t.match(diff, /^\+line B$/m);
  t.match(diff, /^\+line d$/m);
  t.match(diff, /^ line a$/m);
  const none = fs.diffVersions('/doc.txt', 1, 3, 'content') as string;
  t.notMatch(none, /^@@/m, 'identical versions: no hunk');
});
