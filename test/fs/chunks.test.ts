import t from 'tap';
import { CHUNK_SIZE } from '../../src/fs/service.js';
import { makeFs, noise, b, chunked, sha256, chunkHashesOf, rejection } from './fixture.js';

const MiB = 1024 * 1024;

t.test('CHUNK_SIZE is 1 MiB', async (t) => {
  t.equal(CHUNK_SIZE, MiB);
});

t.test('content around and across chunk boundaries round-trips exactly', async (t) => {
  const { fs } = makeFs(t);
  const sizes = [CHUNK_SIZE - 1, CHUNK_SIZE, CHUNK_SIZE + 1, 2 * CHUNK_SIZE, 2 * CHUNK_SIZE + 12345];
  for (const [i, size] of sizes.entries()) {
    const content = noise(size, i + 1);
    const path = `/big/${size}.bin`;
    const res = await fs.write(path, content);
    t.equal(res.size, size);
    t.equal(res.etag, sha256(content), 'the etag hashes the whole content, not a chunk');
    const { content: back, record } = fs.read(path);
    t.ok(back.equals(content), `${size} bytes read back exactly`);
    t.same(record.chunks, chunkHashesOf(content), `${size} bytes stored as ${Math.ceil(size / CHUNK_SIZE)} chunk(s)`);
    t.ok(fs.getVersion(path, 1).equals(content), 'and through get_version');
  }
});

t.test('a 3 MiB file written twice shares its chunks; the store does not grow', async (t) => {
  const fx = makeFs(t);
  const { fs, store } = fx;
  const content = noise(3 * MiB, 7);
  const hashes = chunkHashesOf(content);
  t.equal(new Set(hashes).size, 3, 'three distinct chunks');

  await fs.write('/big.bin', content);
  for (const h of hashes) {
    t.ok(store.blobs.has(h));
    t.equal(fx.refs(h), 1);
  }
  const refsAfterFirst = [...fx.allRefs().keys()].sort();

  await fs.write('/big.bin', content);
  t.same([...fx.allRefs().keys()].sort(), refsAfterFirst, 'no new chunk after the identical second version');
  for (const h of hashes) t.equal(fx.refs(h), 2, 'each chunk referenced by both versions');

  await fs.write('/copy.bin', content);
  t.same([...fx.allRefs().keys()].sort(), refsAfterFirst, 'nor after a copy under another name');
  for (const h of hashes) t.equal(fx.refs(h), 3);

  await fs.delete('/big.bin');
  for (const h of hashes) {
    t.equal(fx.refs(h), 1, 'the copy still holds them');
    t.ok(store.blobs.has(h));
  }
  t.ok(fs.read('/copy.bin').content.equals(content));

  await fs.delete('/copy.bin');
  for (const h of hashes) {
    t.equal(fx.refs(h), 0);
    t.notOk(store.blobs.has(h), 'freed with the last reference');
  }
  t.same(fx.allRefs().size, 0);
});

t.test('chunks still used by another file survive a delete; the others are freed', async (t) => {
  const fx = makeFs(t);
  const { fs, store } = fx;
  const a = noise(3 * MiB, 11);
  const [a0, a1, a2] = chunkHashesOf(a);
  // B shares A's first chunk, then has one of its own.
  const b2 = Buffer.concat([a.subarray(0, CHUNK_SIZE), noise(MiB, 12)]);
  const [b0, b1] = chunkHashesOf(b2);
  t.equal(b0, a0);

  await fs.write('/a.bin', a);
  await fs.write('/b.bin', b2);
  t.equal(fx.refs(a0), 2);
  await fs.delete('/a.bin');
  t.ok(store.blobs.has(a0), 'the shared chunk survives');
  t.equal(fx.refs(a0), 1);
  t.notOk(store.blobs.has(a1!));
  t.notOk(store.blobs.has(a2!));
  t.equal(fx.refs(a1!), 0);
  t.ok(store.blobs.has(b1!));
  t.ok(fs.read('/b.bin').content.equals(b2), 'B reads back intact');
});

t.test('old versions keep their chunks until the file goes', async (t) => {
  const fx = makeFs(t);
  const { fs, store } = fx;
  await fs.write('/h.txt', b(chunked('version one')));
  await fs.write('/h.txt', b(chunked('version two')));
  t.ok(store.blobs.has(sha256(chunked('version one'))), 'history holds the old chunk');
  t.equal(fs.getVersion('/h.txt', 1).toString(), chunked('version one'));
  await fs.delete('/h.txt');
  t.notOk(store.blobs.has(sha256(chunked('version one'))));
  t.notOk(store.blobs.has(sha256(chunked('version two'))));
  t.same(fx.allRefs().size, 0);
});

t.test('repeated chunks inside one file are stored once and counted per use', async (t) => {
  const fx = makeFs(t);
  const { fs, store } = fx;
  const zeros = Buffer.alloc(3 * CHUNK_SIZE);
  const [h] = chunkHashesOf(zeros);
  await fs.write('/zeros.bin', zeros);
  t.same(new Set(chunkHashesOf(zeros)), new Set([h]));
  t.equal(fx.refs(h!), 3, 'one row, three references');
  t.ok(fs.read('/zeros.bin').content.equals(zeros));
  await fs.delete('/zeros.bin');
  t.equal(fx.refs(h!), 0);
  t.notOk(store.blobs.has(h!));
});

t.test('identical files above the inline size share one chunk', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/one.txt', b(chunked('shared text')));
  await fs.write('/two.txt', b(chunked('shared text')));
  t.equal(fx.refs(sha256(chunked('shared text'))), 2);
  t.equal(fx.allRefs().size, 1);
  await fs.delete('/one.txt');
  t.equal(fx.refs(sha256(chunked('shared text'))), 1);
  t.equal(fs.read('/two.txt').content.toString(), chunked('shared text'));
});

t.test('rename moves references, it does not copy or free them', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  const content = noise(2 * MiB, 21);
  await fs.write('/from/x.bin', content);
  await fs.write('/from/x.bin', b('small'));
  const before = fx.allRefs();
  await fs.rename('/from', '/to');
  t.same(fx.allRefs(), before);
  t.ok(fs.getVersion('/to/x.bin', 1).equals(content));
});

t.test('rollback adds references to the old chunks; deleting frees everything', async (t) => {
  const fx = makeFs(t);
  const { fs, store } = fx;
  const big = noise(2 * MiB + 5, 31);
  const hashes = chunkHashesOf(big);
  await fs.write('/r.bin', big);
  await fs.write('/r.bin', b('overwritten'));
  for (const h of hashes) t.equal(fx.refs(h), 1);
  await fs.rollback('/r.bin', 1);
  for (const h of hashes) t.equal(fx.refs(h), 2, 'versions 1 and 3 both use them');
  t.ok(fs.read('/r.bin').content.equals(big));
  await fs.delete('/r.bin');
  for (const h of hashes) t.notOk(store.blobs.has(h));
  t.same(fx.allRefs().size, 0);
});

t.test('rmdir recursive frees the chunks of everything below', async (t) => {
  const fx = makeFs(t);
  const { fs, store } = fx;
  const big = noise(2 * MiB, 41);
  await fs.write('/tree/a/big.bin', big);
  await fs.write('/tree/a/big.bin', b(chunked('v2')));
  await fs.write('/tree/b/c/small.txt', b(chunked('small')));
  await fs.write('/keep/small.txt', b(chunked('small'))); // shares a chunk with /tree/b/c/small.txt
  await fs.rmdir('/tree', { recursive: true });
  for (const h of chunkHashesOf(big)) t.notOk(store.blobs.has(h));
  t.notOk(store.blobs.has(sha256(chunked('v2'))));
  t.ok(store.blobs.has(sha256(chunked('small'))), 'a chunk also used outside the tree survives');
  t.equal(fx.refs(sha256(chunked('small'))), 1);
  t.same([...fx.allRefs().keys()], [sha256(chunked('small'))]);
  t.same(fx.allVersions().map((v) => v.path), ['/keep/small.txt'], 'only the kept file has versions');
  t.same(fx.dump().versions, [], 'no history rows left for the removed tree (the kept file has one version, in its entry)');
});

t.test('a refused big write stores no chunk and no reference', async (t) => {
  const fx = makeFs(t);
  const { fs, store } = fx;
  await fs.write('/exists.bin', b('x'));
  const before = fx.dump();
  const big = noise(3 * MiB, 51);
  t.match(await rejection(fs.write('/exists.bin', big, { ifNoneMatch: true })), { code: -32001 });
  t.match(await rejection(fs.write('/exists.bin', big, { ifMatch: 'stale' })), { code: -32006 });
  t.same(fx.dump(), before);
  for (const h of chunkHashesOf(big)) t.notOk(store.blobs.has(h));
});

t.test('every reference row matches a stored chunk', async (t) => {
  const fx = makeFs(t);
  const { fs, store } = fx;
  await fs.write('/p/1.bin', noise(MiB + 3, 61));
  await fs.write('/p/2.bin', b(chunked('two')));
  await fs.write('/p/2.bin', b(chunked('two again')));
  await fs.rename('/p/2.bin', '/q/2.bin');
  await fs.rollback('/q/2.bin', 1);
  await fs.delete('/p/1.bin');
  for (const [hash, n] of fx.allRefs()) {
    t.ok(store.blobs.has(hash), `${hash.slice(0, 8)} stored`);
    t.ok(n >= 1);
  }
  // Count uses from the versions (current ones in the entries, older ones in version rows): they own the references.
  const uses = new Map<string, number>();
  for (const v of fx.allVersions()) {
    for (const h of v.chunks) uses.set(h, (uses.get(h) ?? 0) + 1);
  }
  t.ok(uses.size > 0);
  t.same(fx.allRefs(), uses, 'reference counts equal the uses by versions');
});
