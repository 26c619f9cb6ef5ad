/**
 * Small content kept in the entry row (FsService's INLINE_MAX_BYTES): every way content is read,
 * versioned, moved, searched and removed gives the same answers as for chunked content, and no
 * chunk or reference row is left behind.
 */
import t from 'tap';
import { INLINE_MAX_BYTES } from '../../src/fs/service.js';
import { readRange } from '../../src/fs/posix.js';
import { inlineOf, type FileRecord } from '../../src/fs/records.js';
import { makeFs, b, sha256 } from './fixture.js';

const record = (fx: ReturnType<typeof makeFs>, path: string) => fx.fs.stat(path) as FileRecord;

t.test('up to INLINE_MAX_BYTES of ASCII the content is in the entry; one byte more is a chunk', async (t) => {
  const fx = makeFs(t);
  const edge = Buffer.alloc(INLINE_MAX_BYTES, 'e');
  const over = Buffer.alloc(INLINE_MAX_BYTES + 1, 'o');
  await fx.fs.write('/edge.txt', edge);
  await fx.fs.write('/over.txt', over);
  t.equal(record(fx, '/edge.txt').inline, edge.toString(), 'ASCII is kept as it is');
  t.ok(inlineOf(record(fx, '/edge.txt'))!.equals(edge));
  t.same(record(fx, '/edge.txt').chunks, []);
  t.notOk(inlineOf(record(fx, '/over.txt')));
  t.same([...fx.store.blobs.hashes()], [sha256(over)], 'only the larger file has a chunk');
  t.equal(record(fx, '/edge.txt').etag, sha256(edge), 'the etag is the SHA-256 of the content either way');
  t.ok(fx.fs.read('/edge.txt').content.equals(edge));
  t.ok(fx.fs.read('/over.txt').content.equals(over));
});

t.test('other bytes are kept as base64 while that fits in INLINE_MAX_BYTES characters', async (t) => {
  const fx = makeFs(t);
  const fits = (INLINE_MAX_BYTES / 4) * 3;
  const edge = Buffer.alloc(fits, 0xe9); // é in Latin-1, not ASCII
  const over = Buffer.alloc(fits + 1, 0xff);
  const mixed = Buffer.from([0x00, 0x41, 0x80, 0x0a, 0xff, 0x7f]);
  await fx.fs.write('/edge.bin', edge);
  await fx.fs.write('/over.bin', over);
  await fx.fs.write('/mixed.bin', mixed);
  t.equal(record(fx, '/edge.bin').inline64, edge.toString('base64'));
  t.equal(record(fx, '/edge.bin').inline, undefined);
  t.ok(fx.fs.read('/edge.bin').content.equals(edge));
  t.notOk(inlineOf(record(fx, '/over.bin')), 'too long once base64-encoded: a chunk');
  t.same([...fx.store.blobs.hashes()], [sha256(over)]);
  t.ok(fx.fs.read('/over.bin').content.equals(over));
  t.ok(fx.fs.read('/mixed.bin').content.equals(mixed), 'control bytes, NUL and high bytes round-trip');
  t.same(readRange(fx.fs, '/mixed.bin', 2, 3), mixed.subarray(2, 5));
  await fx.fs.write('/mixed.bin', b('now text'));
  t.ok(fx.fs.getVersion('/mixed.bin', 1).equals(mixed), 'a base64 version in the history');
  await fx.fs.rollback('/mixed.bin', 1);
  t.ok(fx.fs.read('/mixed.bin').content.equals(mixed));
  t.equal(record(fx, '/mixed.bin').inline, undefined, 'rolled back: base64 again, no text field left over');
});

t.test('an empty file is inline and reads back empty', async (t) => {
  const fx = makeFs(t);
  await fx.fs.write('/empty.txt', Buffer.alloc(0));
  t.equal(record(fx, '/empty.txt').inline, '');
  t.equal(fx.fs.read('/empty.txt').content.length, 0);
  t.same([...fx.store.blobs.hashes()], []);
  t.same(readRange(fx.fs, '/empty.txt', 0, 10), Buffer.alloc(0));
});

t.test('history: superseded inline versions keep their bytes; get_version, diff and rollback read them', async (t) => {
  const fx = makeFs(t);
  const big = Buffer.alloc(INLINE_MAX_BYTES + 10, 'B');
  await fx.fs.write('/h.txt', b('one\n'));
  await fx.fs.write('/h.txt', b('two\n'));
  await fx.fs.write('/h.txt', big);
  await fx.fs.write('/h.txt', b('four\n'));
  t.equal(fx.fs.getVersion('/h.txt', 1).toString(), 'one\n');
  t.equal(fx.fs.getVersion('/h.txt', 2).toString(), 'two\n');
  t.ok(fx.fs.getVersion('/h.txt', 3).equals(big));
  t.match(fx.fs.diffVersions('/h.txt', 1, 2, 'content') as string, /-one\n\+two/);
  t.same(readRange(fx.fs, '/h.txt', 1, 2, 2), b('wo'), 'a ranged read of an old inline version');

  const r = await fx.fs.rollback('/h.txt', 1);
  t.equal(r.version, 5);
  t.equal(fx.fs.read('/h.txt').content.toString(), 'one\n', 'rollback to an inline version');
  t.equal(record(fx, '/h.txt').inline, 'one\n');
  await fx.fs.rollback('/h.txt', 3);
  t.ok(fx.fs.read('/h.txt').content.equals(big), 'and back to a chunked one');
  t.notOk(inlineOf(record(fx, '/h.txt')), 'which is a chunk reference again, not inline');
  t.same(fx.allRefs(), fx.expectedRefs(), 'reference counts match the chunk uses');

  await fx.fs.delete('/h.txt');
  t.same([...fx.store.blobs.hashes()], [], 'deleting the file frees everything');
  t.same(fx.dump().refs, []);
  t.same(fx.dump().versions, []);
});

t.test('rename (plain, over a file, a whole directory) carries inline content along', async (t) => {
  const fx = makeFs(t);
  await fx.fs.write('/a/x.txt', b('x content'));
  await fx.fs.write('/a/y.txt', b('y content'));
  await fx.fs.write('/a/sub/z.txt', b('z content'));
  await fx.fs.rename('/a/x.txt', '/a/x2.txt');
  t.equal(fx.fs.read('/a/x2.txt').content.toString(), 'x content');
  await fx.fs.rename('/a/x2.txt', '/a/y.txt', { overwrite: true });
  t.equal(fx.fs.read('/a/y.txt').content.toString(), 'x content', 'rename over a file: the moved content');
  t.equal(fx.fs.getVersion('/a/y.txt', 1).toString(), 'y content', 'the replaced file keeps its history');
  await fx.fs.rename('/a', '/moved');
  t.equal(fx.fs.read('/moved/sub/z.txt').content.toString(), 'z content');
  t.equal(fx.fs.getVersion('/moved/y.txt', 1).toString(), 'y content', 'history moves with the directory');
  t.same([...fx.store.blobs.hashes()], []);
});

t.test('grep and ranged reads see inline content', async (t) => {
  const fx = makeFs(t);
  await fx.fs.write('/g/one.txt', b('alpha\nneedle here\nomega\n'));
  await fx.fs.write('/g/two.txt', b('nothing\n'));
  const hits = await fx.fs.grep({ pattern: 'needle', path: '/g' });
  t.match(hits, [{ file: '/g/one.txt', line: 2, content: 'needle here' }]);
  t.equal(hits.length, 1);
  t.same(readRange(fx.fs, '/g/one.txt', 6, 6), b('needle'));
  t.same(readRange(fx.fs, '/g/one.txt', 19, 100), b('mega\n'), 'a range past the end is cut at the end');
});

t.test('writeMany (the FUSE group commit) stores small files inline; a held chunk stays a chunk', async (t) => {
  const fx = makeFs(t);
  const results = await fx.fs.writeMany([
    { path: '/m/1.txt', pieces: [{ data: b('first') }] },
    { path: '/m/2.txt', pieces: [{ data: b('second'), hash: sha256('second') }] },
  ]);
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled']);
  t.equal(record(fx, '/m/1.txt').inline, 'first');
  t.equal(fx.fs.read('/m/2.txt').content.toString(), 'second');
  t.same([...fx.store.blobs.hashes()], []);

  const held = b('held small chunk');
  t.same(await fx.fs.holdChunks([{ hash: sha256(held), data: () => held }]), [true]);
  await fx.fs.writeChunks('/m/held.txt', [{ data: held, hash: sha256(held), size: held.length, held: true }]);
  t.notOk(inlineOf(record(fx, '/m/held.txt')), 'the hold became the entry\'s chunk reference');
  t.same(fx.pending(), new Map(), 'no pending hold left');
  t.same(fx.allRefs(), fx.expectedRefs());
  t.equal(fx.fs.read('/m/held.txt').content.toString(), 'held small chunk');
});
