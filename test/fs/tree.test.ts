import t from 'tap';
import { makeFs, b, rejection } from './fixture.js';
import { SEP } from '../../src/fs/records.js';

t.test('mkdir creates a directory and publishes mkdir', async (t) => {
  const fx = makeFs(t);
  await fx.fs.mkdir('/d');
  t.ok(fx.fs.isDirectory('/d'));
  t.same(fx.take().map((e) => [e.type, e.path]), [['mkdir', '/d']]);
});

t.test('mkdir on an existing directory: -32001 unless parents or exist_ok', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.mkdir('/d');
  fx.take();
  t.match(await rejection(fs.mkdir('/d')), { code: -32001, message: 'Directory already exists: /d', data: { path: '/d' } });
  await t.resolves(fs.mkdir('/d', { existOk: true }));
  await t.resolves(fs.mkdir('/d', { parents: true }), 'parents=true tolerates it, like mkdir -p');
  t.same(fx.take(), [], 'nothing created, nothing published');
});

t.test('mkdir without parents needs the parent; with parents creates the chain', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  t.match(await rejection(fs.mkdir('/x/y/z')), { code: -32000 });
  t.notOk(fs.exists('/x'), 'a refused mkdir creates nothing');
  await fs.mkdir('/x/y/z', { parents: true });
  for (const d of ['/x', '/x/y', '/x/y/z']) t.ok(fs.isDirectory(d), d);
  t.same(fx.take().map((e) => [e.type, e.path]), [['mkdir', '/x'], ['mkdir', '/x/y'], ['mkdir', '/x/y/z']]);
  await fs.mkdir('/x/y/w');
  t.ok(fs.isDirectory('/x/y/w'), 'an existing parent is enough without parents');
});

t.test('mkdir where a file is in the way', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/f', b('x'));
  t.match(await rejection(fs.mkdir('/f')), { code: -32001 }, 'the name is taken by a file');
  t.match(await rejection(fs.mkdir('/f', { existOk: true })), { code: -32001 }, 'exist_ok does not cover a file');
  t.match(await rejection(fs.mkdir('/f/sub', { parents: true })), { code: -32005, data: { errno: 'ENOTDIR' } });
  t.equal(fs.read('/f').content.toString(), 'x');
});

t.test('mkdir of the root', async (t) => {
  const { fs } = makeFs(t);
  t.match(await rejection(fs.mkdir('/')), { code: -32001 });
  await t.resolves(fs.mkdir('/', { parents: true }));
  await t.resolves(fs.mkdir('/', { existOk: true }));
  t.match(await rejection(fs.mkdir('/a/../b')), { code: -32002 });
});

t.test('rmdir of an empty directory', async (t) => {
  const fx = makeFs(t);
  await fx.fs.mkdir('/e');
  fx.take();
  await fx.fs.rmdir('/e');
  t.notOk(fx.fs.exists('/e'));
  t.same(fx.take().map((e) => [e.type, e.path]), [['rmdir', '/e']]);
});

t.test('rmdir of a non-empty directory needs recursive', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/full/a.txt', b('a'));
  await fs.mkdir('/full/sub/deeper', { parents: true });
  await fs.write('/full/sub/deeper/b.txt', b('b'));
  await fs.write('/fullness.txt', b('sibling with a shared prefix'));
  fx.take();
  const before = fx.dump();
  t.match(await rejection(fs.rmdir('/full')), { code: -32005, data: { path: '/full', errno: 'ENOTEMPTY' } });
  t.same(fx.dump(), before, 'a refused rmdir removes nothing');
  await fs.rmdir('/full', { recursive: true });
  for (const p of ['/full', '/full/a.txt', '/full/sub', '/full/sub/deeper', '/full/sub/deeper/b.txt']) t.notOk(fs.exists(p), p);
  t.ok(fs.exists('/fullness.txt'), 'a sibling sharing the prefix is untouched');
  t.same(fx.take().map((e) => [e.type, e.path]), [['rmdir', '/full']]);
});

t.test('rmdir errors', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/file', b('x'));
  t.match(await rejection(fs.rmdir('/nope')), { code: -32000, data: { path: '/nope' } });
  t.match(await rejection(fs.rmdir('/file')), { code: -32005, data: { errno: 'ENOTDIR' } });
  t.match(await rejection(fs.rmdir('/')), { code: -32002 });
  t.match(await rejection(fs.rmdir('/', { recursive: true })), { code: -32002 });
  t.ok(fs.exists('/file'));
});

t.test('rename a file: content and versions follow, the old path is gone', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  const v1 = await fs.write('/old.txt', b('one'));
  await fs.write('/old.txt', b('two'));
  const created = fs.getMetadata('/old.txt')!.created_at;
  fx.take();
  await fs.rename('/old.txt', '/new/place/renamed.txt');
  t.notOk(fs.exists('/old.txt'));
  t.equal(fs.read('/new/place/renamed.txt').content.toString(), 'two');
  t.same(fs.listVersions('/new/place/renamed.txt').map((v) => v.version), [2, 1]);
  t.equal(fs.getVersion('/new/place/renamed.txt', 1).toString(), 'one');
  t.equal(fs.listVersions('/new/place/renamed.txt')[1]?.etag, v1.etag);
  t.throws(() => fs.listVersions('/old.txt'), { code: -32000 });
  t.equal(fs.getMetadata('/new/place/renamed.txt')?.created_at.getTime(), created.getTime(), 'created_at moves with it');
  t.same(fx.take().map((e) => ({ type: e.type, path: e.path, new_path: e.new_path })), [
    { type: 'mkdir', path: '/new', new_path: undefined },
    { type: 'mkdir', path: '/new/place', new_path: undefined },
    { type: 'rename', path: '/old.txt', new_path: '/new/place/renamed.txt' },
  ]);
  const next = await fs.write('/new/place/renamed.txt', b('three'));
  t.equal(next.version, 3, 'numbering continues after a rename');
});

t.test('rename a directory moves its whole subtree and nothing else', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/d/a.txt', b('a'));
  await fs.write('/d/a.txt', b('a2'));
  await fs.write('/d/sub/b.txt', b('b'));
  await fs.write('/d/sub/deep/c.txt', b('c'));
  await fs.mkdir('/d/empty');
  // Names that sort next to /d's keys but are not below it.
  await fs.write('/d.txt', b('not inside'));
  await fs.write('/d-x/y.txt', b('not inside'));
  await fs.write('/d0/z.txt', b('not inside'));
  await fs.write('/dé/q.txt', b('not inside'));
  fx.take();

  await fs.rename('/d', '/moved/here');
  t.same(fs.list('/moved/here').map((e) => e.path), [
    '/moved/here/a.txt', '/moved/here/empty/', '/moved/here/sub/', '/moved/here/sub/b.txt',
    '/moved/here/sub/deep/', '/moved/here/sub/deep/c.txt',
  ]);
  t.notOk(fs.exists('/d'));
  t.notOk(fs.exists('/d/a.txt'));
  for (const p of ['/d.txt', '/d-x/y.txt', '/d0/z.txt', '/dé/q.txt']) t.equal(fs.read(p).content.toString(), 'not inside', p);
  t.same(fs.listVersions('/moved/here/a.txt').map((v) => v.version), [2, 1], 'versions follow');
  t.equal(fs.getVersion('/moved/here/a.txt', 1).toString(), 'a');
  t.equal(fs.read('/moved/here/sub/deep/c.txt').content.toString(), 'c');
  const versionPaths = new Set(fx.dump().versions.map(([k]) => k.split(SEP)[0]));
  t.notOk([...versionPaths].some((p) => p!.startsWith('/d/')), 'no version row left under the old name');
  t.same(fx.take().map((e) => [e.type, e.path, e.new_path]), [
    ['mkdir', '/moved', undefined], ['rename', '/d', '/moved/here'],
  ]);
});

t.test('rename refusals change nothing', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/d/sub/f.txt', b('f'));
  await fs.write('/other.txt', b('o'));
  await fs.write('/file', b('x'));
  fx.take();
  const before = fx.dump();
  t.match(await rejection(fs.rename('/d', '/d/sub/inside')), { code: -32005 }, 'into itself');
  t.match(await rejection(fs.rename('/d', '/d/x')), { code: -32005 }, 'into itself, a new name');
  t.match(await rejection(fs.rename('/d/sub/f.txt', '/other.txt')), { code: -32001, data: { path: '/other.txt' } }, 'onto a file');
  t.match(await rejection(fs.rename('/other.txt', '/d')), { code: -32001 }, 'onto a directory');
  t.match(await rejection(fs.rename('/missing', '/anywhere')), { code: -32000, data: { path: '/missing' } });
  t.match(await rejection(fs.rename('/other.txt', '/file/below')), { code: -32005, data: { errno: 'ENOTDIR' } }, 'below a file');
  t.match(await rejection(fs.rename('/other.txt', '/')), { code: -32002 });
  t.match(await rejection(fs.rename('/', '/x')), { code: -32002 });
  t.match(await rejection(fs.rename('/other.txt', '/a/../b')), { code: -32002 });
  t.same(fx.dump(), before);
  t.same(fx.take(), []);
});

t.test('rename onto itself is a no-op; of a missing path, -32000', async (t) => {
  const fx = makeFs(t);
  await fx.fs.write('/same.txt', b('s'));
  fx.take();
  const before = fx.dump();
  await fx.fs.rename('/same.txt', '//same.txt/');
  t.same(fx.dump(), before);
  t.match(await rejection(fx.fs.rename('/nope', '/nope')), { code: -32000 });
});

t.test('a directory renamed to a sibling whose name extends it', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/ab/x.txt', b('x'));
  await fs.rename('/ab', '/abc');
  t.same(fs.list('/').map((e) => e.path), ['/abc/', '/abc/x.txt']);
  await fs.rename('/abc', '/a');
  t.same(fs.list('/').map((e) => e.path), ['/a/', '/a/x.txt']);
});

t.test('long names: directories of 70 to 250 characters list, rename and keep versions like short ones', async (t) => {
  const { fs } = makeFs(t);
  for (const n of [63, 64, 70, 120, 250]) {
    const dir = '/' + 'd'.repeat(n);
    await fs.write(`${dir}/a.txt`, b('one'));
    await fs.write(`${dir}/a.txt`, b('two'));
    await fs.write(`${dir}/sub/b.txt`, b('b'));
    t.same(fs.list(dir).map((e) => e.path), [`${dir}/a.txt`, `${dir}/sub/`, `${dir}/sub/b.txt`], `list under a ${n}-char name`);
    t.same(fs.list(dir, { recursive: false }).map((e) => e.path), [`${dir}/a.txt`, `${dir}/sub/`]);
    t.same(fs.listVersions(`${dir}/a.txt`).map((v) => v.version), [2, 1]);
    await fs.rename(dir, `${dir}x`);
    t.same(fs.list(`${dir}x`).map((e) => e.path), [`${dir}x/a.txt`, `${dir}x/sub/`, `${dir}x/sub/b.txt`]);
    t.same(fs.listVersions(`${dir}x/a.txt`).map((v) => v.version), [2, 1]);
  }
  t.equal(fs.list('/', { recursive: false }).length, 5);
});
