import t from 'tap';
import { makeFs, b, sha256, rejection, thrown, tick } from './fixture.js';
import { MAX_PATH_BYTES } from '../../src/core/paths.js';
import { changedOf } from '../../src/fs/records.js';

t.test('write then read returns the same bytes and the WIRE.md result shape', async (t) => {
  const { fs } = makeFs(t);
  const content = Buffer.from([0, 1, 2, 255, 10, 13]);
  const before = Date.now();
  const res = await fs.write('/docs/a.bin', content);
  t.same(Object.keys(res).sort(), ['etag', 'modified_at', 'size', 'version']);
  t.equal(res.version, 1);
  t.equal(res.size, 6);
  t.ok(res.modified_at instanceof Date);
  t.ok(res.modified_at.getTime() >= before);
  const { content: back, record } = fs.read('/docs/a.bin');
  t.ok(back.equals(content));
  t.equal(record.etag, res.etag);
  t.equal(record.version, 1);
});

t.test('paths are normalised on the way in', async (t) => {
  const { fs } = makeFs(t);
  await fs.write(' docs//n.txt/ ', b('x'));
  t.equal(fs.read('/docs/n.txt').content.toString(), 'x');
  t.ok(fs.exists('docs/n.txt'));
});

t.test('etag is the lowercase hex SHA-256 of the content', async (t) => {
  const { fs } = makeFs(t);
  for (const text of ['', 'hello', 'é😀', '\u0000\u0001']) {
    const res = await fs.write('/e.txt', b(text), { force: true });
    t.equal(res.etag, sha256(b(text)), JSON.stringify(text));
    t.match(res.etag, /^[0-9a-f]{64}$/);
  }
});

t.test('a zero-byte file is a file', async (t) => {
  const { fs } = makeFs(t);
  const res = await fs.write('/empty', Buffer.alloc(0));
  t.equal(res.size, 0);
  t.equal(res.etag, sha256(''));
  t.equal(fs.read('/empty').content.length, 0);
  t.equal(fs.getMetadata('/empty')?.is_directory, false);
});

t.test('every write is a new version; identical content keeps its etag', async (t) => {
  const { fs } = makeFs(t);
  const r1 = await fs.write('/v.txt', b('same'));
  const r2 = await fs.write('/v.txt', b('same'));
  const r3 = await fs.write('/v.txt', b('different'));
  t.same([r1.version, r2.version, r3.version], [1, 2, 3]);
  t.equal(r1.etag, r2.etag, 'identical content, identical etag');
  t.not(r2.etag, r3.etag);
  t.same(fs.listVersions('/v.txt').map((v) => [v.version, v.etag]), [[3, r3.etag], [2, r2.etag], [1, r1.etag]]);
  t.equal(fs.read('/v.txt').content.toString(), 'different');
});

t.test('created_at is kept across versions; modified_at follows the last write', async (t) => {
  const { fs } = makeFs(t);
  const r1 = await fs.write('/c.txt', b('1'));
  await tick();
  const r2 = await fs.write('/c.txt', b('2'));
  const meta = fs.getMetadata('/c.txt')!;
  t.equal(meta.created_at.getTime(), r1.modified_at.getTime());
  t.equal(meta.modified_at.getTime(), r2.modified_at.getTime());
  t.ok(meta.modified_at > meta.created_at);
  t.same(
    { ...meta, created_at: undefined, modified_at: undefined },
    {
      path: '/c.txt', size: 1, etag: sha256('2'), version: 2, content_type: 'text/plain', is_directory: false,
      created_at: undefined, modified_at: undefined,
    },
  );
});

t.test('content types come from the name', async (t) => {
  const { fs } = makeFs(t);
  const cases: [string, string][] = [
    ['/a.txt', 'text/plain'], ['/a.json', 'application/json'], ['/a.md', 'text/markdown'],
    ['/a.ts', 'text/x-typescript'], ['/noext', 'application/octet-stream'], ['/a.PNG', 'image/png'],
  ];
  for (const [p, type] of cases) {
    await fs.write(p, b('x'));
    t.equal(fs.getMetadata(p)?.content_type, type, p);
  }
});

t.test('writes create missing parent directories', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/a/b/c/file.txt', b('deep'));
  for (const d of ['/a', '/a/b', '/a/b/c']) t.ok(fs.isDirectory(d), d);
  t.same(fx.take().map((e) => [e.type, e.path]), [
    ['mkdir', '/a'], ['mkdir', '/a/b'], ['mkdir', '/a/b/c'], ['write', '/a/b/c/file.txt'],
  ]);
  await fs.write('/a/b/other.txt', b('x'));
  t.same(fx.take().map((e) => e.type), ['write'], 'existing parents are not re-created');
});

t.test('read errors', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/d/f.txt', b('x'));
  t.throws(() => fs.read('/missing.txt'), { code: -32000, message: 'File not found: /missing.txt', data: { path: '/missing.txt' } });
  t.throws(() => fs.read('/d'), { code: -32005, data: { path: '/d', errno: 'EISDIR' } });
  t.throws(() => fs.read('/'), { code: -32002 });
  t.throws(() => fs.read('/d/../f.txt'), { code: -32002 });
  t.throws(() => fs.read('/d/f.txt/below'), { code: -32000 });
});

t.test('a refused write changes nothing: onto a directory, below a file, bad path', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/dir/file.txt', b('x'));
  fx.take();
  const before = fx.dump();
  const unique = b('content nobody else has');
  t.match(await rejection(fs.write('/dir', unique)), { code: -32005, data: { errno: 'EISDIR' } });
  t.match(await rejection(fs.write('/dir/file.txt/new/deeper.txt', unique)), { code: -32005, data: { errno: 'ENOTDIR' } });
  t.match(await rejection(fs.write('/dir/../x', unique)), { code: -32002 });
  t.match(await rejection(fs.write('/', unique)), { code: -32002 });
  t.same(fx.dump(), before, 'no entry, no version, no reference');
  t.notOk(fx.store.blobs.has(sha256(unique)), 'no chunk');
  t.same(fx.take(), [], 'no event');
});

t.test('delete removes the file and its whole history', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/x/gone.txt', b('v1'));
  await fs.write('/x/gone.txt', b('v2'));
  fx.take();
  await fs.delete('/x/gone.txt');
  t.same(fx.take().map((e) => ({ type: e.type, path: e.path })), [{ type: 'delete', path: '/x/gone.txt' }]);
  t.notOk(fs.exists('/x/gone.txt'));
  t.ok(fs.isDirectory('/x'), 'the parent directory stays');
  t.same(fx.dump().versions, [], 'no version rows left');
  t.throws(() => fs.listVersions('/x/gone.txt'), { code: -32000 });
  const again = await fs.write('/x/gone.txt', b('new life'));
  t.equal(again.version, 1, 'a new file starts again at version 1');
});

t.test('delete errors', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.mkdir('/d');
  fx.take();
  t.match(await rejection(fs.delete('/nope')), { code: -32000, data: { path: '/nope' } });
  t.match(await rejection(fs.delete('/d')), { code: -32005, data: { errno: 'EISDIR' } });
  t.ok(fs.isDirectory('/d'));
  t.match(await rejection(fs.delete('/')), { code: -32002 });
  t.same(fx.take(), []);
});

t.test('getMetadata, exists, isDirectory', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/m/f.txt', b('abc'));
  const dir = fs.getMetadata('/m')!;
  t.equal(dir.is_directory, true);
  t.equal(dir.etag, null);
  t.equal(dir.version, null);
  t.equal(dir.size, 0);
  t.equal(fs.getMetadata('/m/f.txt')?.size, 3);
  t.equal(fs.getMetadata('/m/none'), null, 'null when absent, never an error');
  t.throws(() => fs.getMetadata('/m/../x'), { code: -32002 });

  t.equal(fs.exists('/m/f.txt'), true);
  t.equal(fs.exists('/m'), true);
  t.equal(fs.exists('/m/none'), false);
  t.equal(fs.exists('/none/deeper'), false);
  t.equal(fs.isDirectory('/m'), true);
  t.equal(fs.isDirectory('/m/f.txt'), false);
  t.equal(fs.isDirectory('/none'), false);
  t.throws(() => fs.exists('/a\u0000b'), { code: -32002 }, 'a malformed path is still -32002');
  t.throws(() => fs.isDirectory(''), { code: -32002 });
});

t.test('OCC: if_match', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  const v1 = await fs.write('/occ.txt', b('one'));
  const v2 = await fs.write('/occ.txt', b('two'), { ifMatch: v1.etag });
  t.equal(v2.version, 2, 'a matching etag writes');
  fx.take();
  const before = fx.dump();

  const stale = await rejection(fs.write('/occ.txt', b('three'), { ifMatch: v1.etag }));
  t.equal(stale.code, -32006);
  t.same(stale.data, { path: '/occ.txt', expected_etag: v1.etag, current_etag: v2.etag });

  const missing = await rejection(fs.write('/new/absent.txt', b('x'), { ifMatch: v1.etag }));
  t.equal(missing.code, -32006, 'if_match on a missing file is a conflict too');
  t.same(missing.data, { path: '/new/absent.txt', expected_etag: v1.etag, current_etag: null });

  t.same(fx.dump(), before, 'refused writes leave nothing behind');
  t.notOk(fs.exists('/new'), 'not even the parent directory');
  t.notOk(fx.store.blobs.has(sha256('three')));
  t.same(fx.take(), []);
  t.equal(fs.read('/occ.txt').content.toString(), 'two');
});

t.test('OCC: if_none_match is create-only', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  const r = await fs.write('/once.txt', b('first'), { ifNoneMatch: true });
  t.equal(r.version, 1);
  const before = fx.dump();
  const err = await rejection(fs.write('/once.txt', b('second'), { ifNoneMatch: true }));
  t.equal(err.code, -32001);
  t.same(err.data, { path: '/once.txt' });
  t.same(fx.dump(), before);
  t.notOk(fx.store.blobs.has(sha256('second')));
  t.equal(fs.read('/once.txt').content.toString(), 'first');
});

t.test('OCC: force skips both checks', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/f.txt', b('one'));
  const r2 = await fs.write('/f.txt', b('two'), { force: true, ifMatch: 'not-the-etag' });
  t.equal(r2.version, 2);
  const r3 = await fs.write('/f.txt', b('three'), { force: true, ifNoneMatch: true });
  t.equal(r3.version, 3);
  const r4 = await fs.write('/absent.txt', b('x'), { force: true, ifMatch: 'whatever' });
  t.equal(r4.version, 1);
});

t.test('concurrent writes to one file get distinct, consecutive versions', async (t) => {
  const { fs } = makeFs(t);
  const n = 20;
  const results = await Promise.all(Array.from({ length: n }, (_, i) => fs.write('/busy.txt', b(`w${i}`))));
  t.same(results.map((r) => r.version).sort((x, y) => x - y), Array.from({ length: n }, (_, i) => i + 1));
  t.equal(fs.listVersions('/busy.txt').length, n);
  const last = results.find((r) => r.version === n)!;
  t.equal(fs.read('/busy.txt').record.etag, last.etag, 'the highest version is the current content');
});

t.test('concurrent writes with the same if_match: exactly one wins', async (t) => {
  const { fs } = makeFs(t);
  const base = await fs.write('/race.txt', b('base'));
  const settled = await Promise.allSettled(
    Array.from({ length: 8 }, (_, i) => fs.write('/race.txt', b(`contender ${i}`), { ifMatch: base.etag })),
  );
  const won = settled.filter((s) => s.status === 'fulfilled');
  t.equal(won.length, 1);
  for (const s of settled) if (s.status === 'rejected') t.equal((s.reason as { code: number }).code, -32006);
  t.equal(fs.listVersions('/race.txt').length, 2);
});

t.test('a write event carries path, etag and version', async (t) => {
  const fx = makeFs(t);
  const r = await fx.fs.write('/ev.txt', b('x'));
  const [e] = fx.take();
  t.same(e, { type: 'write', path: '/ev.txt', etag: r.etag, version: 1, at: r.modified_at.toISOString() });
});

t.test('a thrown error from a service call is -32002 for a non-string path', async (t) => {
  const { fs } = makeFs(t);
  t.match(thrown(() => fs.read(42 as unknown as string)), { code: -32002 });
});

t.test('the longest path taken is stored with its versions, renamed and deleted; one byte more is -32002 ENAMETOOLONG', async (t) => {
  // Every key the store writes for a path (its entry, each version: the path and 11 bytes more)
  // must fit LMDB's 1,978-byte keys, or the write would fail only when committed.
  const { fs } = makeFs(t);
  const dir = ('/' + 'd'.repeat(99)).repeat(18); // 1800 bytes
  const longest = `${dir}/${'f'.repeat(MAX_PATH_BYTES - dir.length - 1)}`;
  t.equal(Buffer.byteLength(longest), MAX_PATH_BYTES);
  await fs.write(longest, b('one'));
  await fs.write(longest, b('two'));
  t.equal(fs.read(longest).content.toString(), 'two');
  t.equal(fs.getVersion(longest, 1).toString(), 'one');
  const renamed = longest.slice(0, -1) + 'g';
  await fs.rename(longest, renamed);
  t.equal(fs.read(renamed).content.toString(), 'two');
  await fs.delete(renamed);
  t.notOk(fs.exists(renamed));
  const err = await rejection(fs.write(longest + 'x', b('x')));
  t.match(err, { code: -32002, data: { errno: 'ENAMETOOLONG' } });
  t.match(await rejection(fs.mkdir(`${longest}x`)), { code: -32002, data: { errno: 'ENAMETOOLONG' } });
});

t.test('the change time (ctime) follows every change of an entry, and setting the mtime back does not move it back', async (t) => {
  const { fs } = makeFs(t);
  const old = Date.UTC(2001, 0, 1);
  const since = (at: number) => changedOf(fs.stat('/c.txt')!) >= at;
  let at = Date.now();
  await fs.write('/c.txt', b('x'), { modified: old });
  t.equal(fs.stat('/c.txt')!.modified, old, 'the mtime is the one given (tar x, cp -p)');
  t.ok(since(at), 'the ctime is the write\'s time');
  await new Promise((r) => setTimeout(r, 5));
  at = Date.now();
  await fs.setAttributes('/c.txt', { mode: 0o600 });
  t.ok(since(at), 'a chmod moves it');
  at = Date.now();
  await fs.setAttributes('/c.txt', { modified: old - 1000 });
  t.ok(since(at), 'so does setting the mtime back');
  t.equal(fs.stat('/c.txt')!.modified, old - 1000);
  await fs.mkdir('/d');
  await fs.write('/d/below', b('y'), { modified: old });
  await new Promise((r) => setTimeout(r, 5));
  at = Date.now();
  await fs.rename('/d', '/e');
  t.ok(changedOf(fs.stat('/e')!) >= at, 'a rename moves the renamed entry\'s');
  t.ok(changedOf(fs.stat('/e/below')!) < at, 'not that of what moves with it');
  t.equal(fs.stat('/e/below')!.modified, old, 'and no mtime');
});

t.test('a directory\'s mtime and ctime move when a name is made, removed or renamed in it, not when a file in it is rewritten', async (t) => {
  const { fs } = makeFs(t);
  const old = Date.UTC(2001, 0, 1);
  await fs.mkdir('/d');
  await fs.mkdir('/e');
  const setBack = async () => {
    for (const dir of ['/d', '/e']) await fs.setAttributes(dir, { modified: old });
    await tick(5);
    return Date.now();
  };
  /** Whether `dir`'s mtime and ctime are both at or after `at` (a change's time). */
  const moved = (dir: string, at: number) => {
    const rec = fs.stat(dir)!;
    return rec.modified >= at && changedOf(rec) === rec.modified;
  };
  let at = await setBack();
  await fs.write('/d/f', b('1'));
  t.ok(moved('/d', at), 'a file made in it moves it');
  at = await setBack();
  await fs.write('/d/f', b('2'));
  t.equal(fs.stat('/d')!.modified, old, 'a file in it rewritten does not');
  at = await setBack();
  await fs.rename('/d/f', '/e/g');
  t.ok(moved('/d', at) && moved('/e', at), 'a rename moves both directories');
  await fs.write('/d/h', b('h'));
  at = await setBack();
  await fs.rename('/d/h', '/e/g', { overwrite: true });
  t.ok(moved('/d', at) && moved('/e', at), 'so does a rename over a file');
  at = await setBack();
  await fs.delete('/e/g');
  t.ok(moved('/e', at), 'a delete moves it');
  at = await setBack();
  await fs.mkdir('/d/sub');
  t.ok(moved('/d', at), 'a directory made in it');
  at = await setBack();
  await fs.rmdir('/d/sub');
  t.ok(moved('/d', at), 'and removed');
  at = await setBack();
  await fs.write('/d/x/y/z', b('z'));
  t.ok(moved('/d', at), 'a write that makes the missing directories moves the first one\'s parent');
  at = Date.now();
  await fs.write('/top', b('t'));
  t.ok(fs.stat('/')!.modified >= at, 'the root moves too');
  t.equal(fs.getMetadata('/d/x/y/z')!.version, 1);
});

t.test('writeMany: each item moves its directory, but not one made in the batch with a time of its own (keepTime)', async (t) => {
  const { fs } = makeFs(t);
  const old = Date.UTC(2001, 0, 1);
  await fs.mkdir('/d');
  await fs.setAttributes('/d', { modified: old });
  await tick(5);
  const at = Date.now();
  const results = await fs.writeMany([
    { path: '/kept', mkdir: true, modified: old, keepTime: true },
    { path: '/kept/a', pieces: [{ data: b('a') }] },
    { path: '/plain', mkdir: true, modified: old },
    { path: '/plain/a', pieces: [{ data: b('a') }] },
    { path: '/d/a', pieces: [{ data: b('a') }] },
    { path: '/missing/a', delete: true },
  ]);
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected']);
  t.equal(fs.stat('/kept')!.modified, old, 'the time rsync set after the files stays');
  t.ok(fs.stat('/plain')!.modified >= at, 'without keepTime, the files made in it move it');
  t.ok(fs.stat('/d')!.modified >= at, 'as they move a stored one');
  t.ok(fs.stat('/')!.modified >= at);
});

t.test('a rollback and a restore moving a file\'s mtime leave no older ctime behind', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/f', b('1'));
  await fs.write('/f', b('2'));
  await fs.setAttributes('/f', { mode: 0o600 });
  await tick(5);
  await fs.rollback('/f', 1);
  const rec = fs.stat('/f')!;
  t.ok(changedOf(rec) >= rec.modified, 'the ctime is not before the mtime');
  await fs.write('/g', b('g'));
  const pinned = await fs.pinTree('/');
  await fs.setAttributes('/g', { mode: 0o600 });
  await tick(5);
  await fs.restoreTree('/', pinned);
  await fs.unpinTree(pinned.values());
  const restored = fs.stat('/g')!;
  t.equal(restored.mode, 0o644, 'the restore set the mode back');
  t.ok(changedOf(restored) >= restored.modified, 'nor after a restore that changed only the mode');
});
