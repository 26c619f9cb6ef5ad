/**
 * @module test/fs/write-many
 * FsService.writeMany: several files in one transaction (the FUSE mount's group commit), each as
 * writeChunks would write it; a refused item writes nothing and does not stop the others; a mark
 * is stored in the same transaction.
 */
import t from 'tap';
import type { TransactOptions } from '../../src/store/types.js';
import { makeFs, b, sha256 } from './fixture.js';

t.test('several files, one transaction, one version each, events in order', async (t) => {
  const fx = makeFs(t);
  const { fs, store } = fx;
  await fs.write('/old.txt', b('v1'));
  fx.take();
  let transactions = 0;
  const inner = store.transact.bind(store);
  store.transact = <T>(fn: () => T, opts?: TransactOptions) => {
    transactions++;
    return inner(fn, opts);
  };
  const results = await fs.writeMany([
    { path: '/a.txt', pieces: [{ data: b('alpha') }], opts: { attributes: { mode: 0o600 }, modified: 1000 } },
    { path: '/old.txt', pieces: [{ data: b('v2') }] },
    { path: '/d/e/new.txt', pieces: [{ data: () => b('lazy') }] },
    { path: '/old.txt', pieces: [{ data: b('v3') }] },
    { path: '/empty', pieces: [] },
  ]);
  t.equal(transactions, 1, 'one transaction for every file');
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
  const values = results.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
  t.same(values.map((v) => [v?.version, v?.etag, v?.size]), [
    [1, sha256('alpha'), 5], [2, sha256('v2'), 2], [1, sha256('lazy'), 4], [3, sha256('v3'), 2], [1, sha256(''), 0],
  ]);
  t.equal(fs.read('/a.txt').content.toString(), 'alpha');
  t.equal(fs.stat('/a.txt')?.mode, 0o600, 'attributes are stored');
  t.equal(fs.stat('/a.txt')?.modified, 1000, 'and the given modification time');
  t.same(fs.listVersions('/old.txt').map((v) => v.version), [3, 2, 1], 'a path given twice gets two versions');
  t.equal(fs.read('/old.txt').content.toString(), 'v3');
  t.equal(fs.read('/d/e/new.txt').content.toString(), 'lazy', 'missing parents are created');
  t.equal(fs.read('/empty').content.length, 0);
  t.same(fx.take().map((e) => [e.type, e.path, e.version]), [
    ['write', '/a.txt', 1], ['write', '/old.txt', 2], ['mkdir', '/d', undefined], ['mkdir', '/d/e', undefined],
    ['write', '/d/e/new.txt', 1], ['write', '/old.txt', 3], ['write', '/empty', 1],
  ], 'one event per file (and per created directory), in order');
});

t.test('a refused item writes nothing and the others are written; the mark is stored with them', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.mkdir('/dir');
  await fs.write('/file', b('f'));
  fx.take();
  t.equal(fs.mark('journal'), undefined, 'no mark yet');
  const results = await fs.writeMany([
    { path: '/ok1', pieces: [{ data: b('1') }] },
    { path: '/dir', pieces: [{ data: b('x') }] },
    { path: '/file/below', pieces: [{ data: b('x') }] },
    { path: '/file', pieces: [{ data: b('x') }], opts: { ifMatch: 'nope' } },
    { path: '/bad\u0000name', pieces: [{ data: b('x') }] },
    { path: '/ok2', pieces: [{ data: b('2') }] },
  ], { mark: { name: 'journal', value: 42 } });
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'rejected', 'rejected', 'fulfilled']);
  const codes = results.map((r) => (r.status === 'rejected' ? (r.reason as { data?: { errno?: string } }).data?.errno ?? (r.reason as Error).name : 'ok'));
  t.equal(codes[1], 'EISDIR', 'a directory at the path');
  t.equal(codes[2], 'ENOTDIR', 'a file where a parent should be');
  t.equal(fs.read('/file').content.toString(), 'f', 'a failed precondition leaves the file as it was');
  t.equal(fs.stat('/file/below'), undefined);
  t.equal(fs.read('/ok1').content.toString(), '1');
  t.equal(fs.read('/ok2').content.toString(), '2');
  t.equal(fs.mark('journal'), 42, 'the mark is stored');
  t.same(fx.take().map((e) => e.path), ['/ok1', '/ok2'], 'events only for what was written');
  await fs.writeMany([], { mark: { name: 'journal', value: 43 } });
  t.equal(fs.mark('journal'), 43, 'a mark alone');
});

t.test('guards are asked for every item and settled once the batch is committed', async (t) => {
  const { fs } = makeFs(t);
  const asked: string[] = [];
  let settled = 0;
  fs.addGuard((kind, paths) => {
    asked.push(`${kind} ${paths.join(',')}`);
    if (paths[0]!.startsWith('/ro/')) throw Object.assign(new Error('read-only'), { name: 'ReadOnly' });
    return () => settled++;
  });
  const results = await fs.writeMany([
    { path: '/rw/a', pieces: [{ data: b('a') }] },
    { path: '/ro/b', pieces: [{ data: b('b') }] },
  ]);
  t.same(asked, ['write /rw/a', 'write /ro/b']);
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected']);
  t.equal(settled, 1, 'the admitted item is settled');
  t.equal(fs.stat('/ro/b'), undefined);
});

t.test('guards learn whether the change was answered already, and see what the asker shows', async (t) => {
  const { fs } = makeFs(t);
  const seen: string[] = [];
  fs.addGuard((kind, paths, _subtree, { shown, answered }) => {
    seen.push(`${kind} ${paths[0]} answered=${answered} shown=${shown(paths[0]!)?.kind ?? 'nothing'}`);
  });
  await fs.write('/f', b('x'));
  await fs.writeMany([{ path: '/f', pieces: [{ data: b('y') }] }]);
  await fs.writeMany([{ path: '/f', pieces: [{ data: b('z') }] }], { answered: true });
  fs.checkChange('write', '/g', false, (p) => (p === '/g' ? { kind: 'dir' } : undefined));
  t.same(seen, [
    'write /f answered=false shown=nothing', 'write /f answered=false shown=file', 'write /f answered=true shown=file',
    'write /g answered=false shown=dir',
  ]);
});

t.test('a commit hook failing after the commit: thrown, unless the caller takes it (then the results are returned)', async (t) => {
  const { fs } = makeFs(t);
  let failing = true;
  fs.addCommitHook(async () => {
    if (failing) throw new Error('hook failed');
  });
  await t.rejects(fs.writeMany([{ path: '/a', pieces: [{ data: b('1') }] }]), /hook failed/, 'thrown by default');
  t.equal(fs.read('/a').content.toString(), '1', 'though committed');
  const taken: unknown[] = [];
  const results = await fs.writeMany([{ path: '/a', pieces: [{ data: b('2') }] }], { onHookFailure: (err) => taken.push(err) });
  t.same(results.map((r) => r.status === 'fulfilled' && r.value?.version), [2], 'the results, with the version committed');
  t.match(taken, [/hook failed/], 'the failure handed to the caller');
  failing = false;
  t.same(fs.listVersions('/a').map((v) => v.version), [2, 1], 'one version per call');
});

t.test('deletes join the batch: in order with writes, refused when there is nothing to delete', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/a', b('a1'));
  await fs.write('/a', b('a2'));
  await fs.mkdir('/dir');
  fx.take();
  const results = await fs.writeMany([
    { path: '/a', delete: true },
    { path: '/a', pieces: [{ data: b('fresh') }] },
    { path: '/missing', delete: true },
    { path: '/dir', delete: true },
  ]);
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'rejected']);
  t.same(results[1]!.status === 'fulfilled' && results[1]!.value?.version, 1, 'a write after the delete starts a new history');
  t.equal(fs.read('/a').content.toString(), 'fresh');
  t.same(fs.listVersions('/a').map((v) => v.version), [1]);
  t.ok(fs.isDirectory('/dir'), 'a directory is not deleted');
  t.same(fx.take().map((e) => [e.type, e.path]), [['delete', '/a'], ['write', '/a']]);
});
