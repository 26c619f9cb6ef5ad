/**
 * What the write path stores, row by row: a new small file is one entry holding its content, a
 * larger one an entry and one chunk (the current version lives in the entry, a chunk with one user
 * has no refs row), and the history, reference
 * counts, version times and sources come out the same as when every version had its own row.
 * Also the upgrade of a data directory written in that earlier layout.
 */
import t from 'tap';
import { makeFs, b, chunked, sha256, rejection } from './fixture.js';
import { SEP, versionKey, entryKey, type EntryRecord, type FileRecord, type VersionRecord } from '../../src/fs/records.js';

const keys = (rows: [string, unknown][]) => rows.map(([k]) => k);

t.test('a new small file is one entry row holding its content: no chunk, no version row, no reference row', async (t) => {
  const fx = makeFs(t);
  await fx.fs.mkdir('/d');
  const before = fx.dump();
  await fx.fs.write('/d/new.txt', b('fresh content'));
  const after = fx.dump();
  t.same(keys(after.entries).filter((k) => !keys(before.entries).includes(k)), [entryKey('/d/new.txt')]);
  t.same(after.versions, [], 'no version row');
  t.same(after.refs, [], 'no reference row');
  t.same([...fx.store.blobs.hashes()], [], 'no chunk');
  const rec = fx.fs.stat('/d/new.txt') as FileRecord;
  t.same(rec.chunks, []);
  t.equal(rec.inline, 'fresh content', 'the content is in the entry');
  t.equal(fx.fs.read('/d/new.txt').content.toString(), 'fresh content');
  t.same(fx.fs.listVersions('/d/new.txt').map((v) => [v.version, v.source]), [[1, 'write']]);
});

t.test('a new file above the inline size is one entry row and one chunk: no version row, no reference row', async (t) => {
  const fx = makeFs(t);
  await fx.fs.mkdir('/d');
  const before = fx.dump();
  const text = chunked('fresh content');
  await fx.fs.write('/d/new.txt', b(text));
  const after = fx.dump();
  t.same(keys(after.entries).filter((k) => !keys(before.entries).includes(k)), [entryKey('/d/new.txt')]);
  t.same(after.versions, [], 'no version row');
  t.same(after.refs, [], 'no reference row');
  t.same([...fx.store.blobs.hashes()], [sha256(text)], 'one chunk');
  t.equal(fx.refs(sha256(text)), 1);
  t.equal((fx.fs.stat('/d/new.txt') as FileRecord).inline, undefined);
});

t.test('the superseded version becomes a row; a second user of a chunk adds a count row, the last one frees it', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/a.txt', b(chunked('one')));
  await fs.write('/a.txt', b(chunked('two')));
  t.same(keys(fx.dump().versions), [versionKey('/a.txt', 1)], 'version 1 moved to the history');
  t.same(fx.dump().refs, [], 'still one user per chunk');
  await fs.write('/b.txt', b(chunked('one'))); // shares version 1's chunk
  t.same(fx.dump().refs, [[sha256(chunked('one')), 2]]);
  await fs.write('/c.txt', b(chunked('one')));
  t.equal(fx.refs(sha256(chunked('one'))), 3);
  await fs.delete('/b.txt');
  await fs.delete('/c.txt');
  t.same(fx.dump().refs, [], 'back to one user: the count row goes');
  t.ok(fx.store.blobs.has(sha256(chunked('one'))), 'the chunk stays for version 1 of /a.txt');
  t.equal(fs.getVersion('/a.txt', 1).toString(), chunked('one'));
  await fs.delete('/a.txt');
  t.same([...fx.store.blobs.hashes()], [], 'the last user gone: every chunk freed');
  t.same(fx.dump(), { entries: fx.dump().entries, versions: [], refs: [] });
});

t.test('a chunk used twice within one transaction is stored once with two references', async (t) => {
  const fx = makeFs(t);
  await Promise.all([fx.fs.write('/x/1.txt', b(chunked('same'))), fx.fs.write('/x/2.txt', b(chunked('same')))]);
  t.equal(fx.refs(sha256(chunked('same'))), 2);
  await fx.fs.delete('/x/1.txt');
  t.equal(fx.refs(sha256(chunked('same'))), 1);
  await fx.fs.delete('/x/2.txt');
  t.equal(fx.refs(sha256(chunked('same'))), 0);
});

t.test('version times: the commit time, whatever the file\'s mtime says', async (t) => {
  const { fs } = makeFs(t);
  const mtime = Date.UTC(2001, 0, 1);
  const w1 = await fs.write('/m.txt', b('v1'), { modified: mtime });
  t.equal(fs.stat('/m.txt')!.modified, mtime, 'the entry carries the given mtime');
  const committed = w1.modified_at.getTime();
  t.not(committed, mtime);
  t.equal(fs.listVersions('/m.txt')[0]!.modified_at.getTime(), committed, 'the version shows its commit time');
  await fs.setAttributes('/m.txt', { modified: Date.UTC(2010, 5, 5) });
  t.equal(fs.listVersions('/m.txt')[0]!.modified_at.getTime(), committed, 'utimes does not move the version time');
  await fs.setAttributes('/m.txt', { modified: committed });
  t.notOk('versionAt' in fs.stat('/m.txt')!, 'mtime back at the commit time: nothing extra stored');
  await fs.setAttributes('/m.txt', { modified: Date.UTC(2012, 1, 1) });
  const w2 = await fs.write('/m.txt', b('v2'));
  const list = fs.listVersions('/m.txt');
  t.same(list.map((v) => v.modified_at.getTime()), [w2.modified_at.getTime(), committed], 'history keeps version 1\'s commit time');
  t.equal(fs.versionRecord('/m.txt', 1).modified, committed);
});

t.test('version sources: rollback, rename over a file and later writes keep each version\'s own', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/s.txt', b('a'));
  await fs.write('/s.txt', b('b'));
  await fs.rollback('/s.txt', 1);
  t.same(fs.listVersions('/s.txt').map((v) => [v.version, v.source]), [[3, 'rollback:1'], [2, 'write'], [1, 'write']]);
  await fs.write('/s.txt', b('c'));
  t.same(fs.listVersions('/s.txt').map((v) => v.source), ['write', 'rollback:1', 'write', 'write']);
  await fs.write('/other.txt', b('moved'));
  await fs.rename('/other.txt', '/s.txt', { overwrite: true });
  const list = fs.listVersions('/s.txt');
  t.same(list.map((v) => [v.version, v.source]), [[5, 'rename'], [4, 'write'], [3, 'rollback:1'], [2, 'write'], [1, 'write']]);
  t.equal(fs.read('/s.txt').content.toString(), 'moved');
  t.equal(fs.getVersion('/s.txt', 4).toString(), 'c');
  t.equal(fs.getVersion('/s.txt', 3).toString(), 'a');
  await fs.write('/s.txt', b('d'));
  t.equal(fs.listVersions('/s.txt')[1]!.source, 'rename', 'a superseded rename keeps its source');
  t.match(await rejection(Promise.resolve().then(() => fs.getVersion('/s.txt', 7))), { code: -32000 });
  t.match(await rejection(Promise.resolve().then(() => fs.getVersion('/s.txt', 0))), { code: -32000 });
});

t.test('the parent check: a file parent or grandparent is ENOTDIR naming it; nothing is written', async (t) => {
  const fx = makeFs(t);
  await fx.fs.write('/f', b('file'));
  const before = fx.dump();
  t.match(await rejection(fx.fs.write('/f/x.txt', b('x'))), { code: -32005, data: { path: '/f', errno: 'ENOTDIR' } });
  t.match(await rejection(fx.fs.write('/f/y/z.txt', b('x'))), { code: -32005, data: { path: '/f', errno: 'ENOTDIR' } });
  t.same(fx.dump(), before);
  await fx.fs.write('/p/q/r.txt', b('deep'));
  t.ok(fx.fs.isDirectory('/p') && fx.fs.isDirectory('/p/q'), 'missing parents are created');
  await fx.fs.write('/p/q/s.txt', b('sibling'));
  t.same(fx.fs.list('/p').map((e) => e.path), ['/p/q/', '/p/q/r.txt', '/p/q/s.txt']);
});

t.test('upgrade: a data directory in the earlier layout (a row per version, a count row per chunk)', async (t) => {
  const fx = makeFs(t);
  const { fs, store } = fx;
  const entries = store.table<EntryRecord>('entries');
  const versions = store.table<VersionRecord>('versions');
  const refs = store.table<number>('refs');
  const h = (s: string) => sha256(s);
  const row = (version: number, text: string, modified: number, source = 'write'): VersionRecord => ({
    version, etag: h(text), size: text.length, chunks: [h(text)], modified, contentType: 'text/plain', source,
  });
  // /old.txt: v1 'one', v2 rollback to 'one' committed at 2000 with mtime 3000; /two.txt: v1 'one', then 'two'.
  await store.transact(() => {
    entries.put(entryKey('/old.txt'), {
      kind: 'file', version: 2, etag: h('one'), size: 3, chunks: [h('one')], contentType: 'text/plain', created: 1000, modified: 3000,
    });
    versions.put(versionKey('/old.txt', 1), row(1, 'one', 1000));
    versions.put(versionKey('/old.txt', 2), row(2, 'one', 2000, 'rollback:1'));
    entries.put(entryKey('/two.txt'), {
      kind: 'file', version: 2, etag: h('two'), size: 3, chunks: [h('two')], contentType: 'text/plain', created: 1000, modified: 4000,
    });
    versions.put(versionKey('/two.txt', 1), row(1, 'one', 1000));
    versions.put(versionKey('/two.txt', 2), row(2, 'two', 4000));
    store.blobs.put(h('one'), b('one'));
    store.blobs.put(h('two'), b('two'));
    refs.put(h('one'), 3);
    refs.put(h('two'), 1);
  });
  await fs.upgrade();
  t.same(keys(fx.dump().versions), [versionKey('/old.txt', 1), versionKey('/two.txt', 1)], 'duplicate rows of current versions gone');
  t.same(fx.dump().refs, [[h('one'), 3]], 'count rows of 1 gone');
  t.same(fs.listVersions('/old.txt').map((v) => [v.version, v.source, v.modified_at.getTime()]), [[2, 'rollback:1', 2000], [1, 'write', 1000]]);
  t.same(fs.listVersions('/two.txt').map((v) => [v.version, v.source, v.modified_at.getTime()]), [[2, 'write', 4000], [1, 'write', 1000]]);
  t.equal(fs.stat('/old.txt')!.modified, 3000, 'the file keeps its mtime');
  t.equal(fs.read('/two.txt').content.toString(), 'two');
  const done = fx.dump();
  await fs.upgrade();
  t.same(fx.dump(), done, 'a second upgrade changes nothing');
  // The upgraded store behaves like a new one.
  await fs.write('/two.txt', b('three'));
  t.same(fs.listVersions('/two.txt').map((v) => v.version), [3, 2, 1]);
  await fs.delete('/old.txt');
  await fs.delete('/two.txt');
  t.same([...store.blobs.hashes()], [], 'every chunk freed');
  t.same(fx.dump().refs, []);
  t.same(fx.dump().versions.filter(([k]) => k.includes(SEP)), []);
});

t.test('upgrade of a new data directory only marks it', async (t) => {
  const fx = makeFs(t);
  await fx.fs.upgrade();
  await fx.fs.write('/n.txt', b('n'));
  const before = fx.dump();
  await fx.fs.upgrade();
  t.same(fx.dump(), before);
  t.equal(fx.store.table<number>('fs_meta').get('layout'), 4);
});

t.test('upgrade from layout 2 (before inline content) or 3 (before chunks in pieces) only marks it; a later layout is refused', async (t) => {
  const fx = makeFs(t);
  await fx.fs.write('/big.txt', b(chunked('kept as a chunk')));
  const meta = fx.store.table<number>('fs_meta');
  await fx.store.transact(() => meta.put('layout', 2));
  const before = fx.dump();
  await fx.fs.upgrade();
  t.same(fx.dump(), before, 'no row rewritten');
  t.equal(meta.get('layout'), 4);
  t.equal(fx.fs.read('/big.txt').content.toString(), chunked('kept as a chunk'));
  await fx.store.transact(() => meta.put('layout', 3));
  await fx.fs.upgrade();
  t.same(fx.dump(), before, 'from layout 3: no row rewritten either');
  t.equal(meta.get('layout'), 4);
  await fx.store.transact(() => meta.put('layout', 5));
  await t.rejects(fx.fs.upgrade(), /written by a newer svc \(storage layout 5; this build reads layouts up to 4\)/);
  t.equal(meta.get('layout'), 5, 'left as it was');
});
