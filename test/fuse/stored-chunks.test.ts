/**
 * @module test/fuse/stored-chunks
 * Reading and changing a stored multi-chunk file through the in-process mount (no kernel): full
 * stored chunks are read into one buffer the open file reuses, so reads in any order, partial
 * rewrites of a chunk and the commit that follows must each see the right chunk's bytes.
 */
import t from 'tap';
import { CHUNK_SIZE } from '../../src/fs/service.js';
import { noise } from '../fs/fixture.js';
import { call, inProcessMount } from '../helpers/fuse-ops.js';
import { journaledMount } from '../helpers/journaled-mount.js';

t.test('reads in any order and partial rewrites of stored chunks see the right bytes', async (t) => {
  const { fs, backend, ops } = inProcessMount(t);
  const content = noise(3 * CHUNK_SIZE + 12345, 7);
  await fs.write('/big.bin', content);

  const [, fd] = await call<number>(ops.open, '/big.bin', 2);
  const read = async (pos: number, len: number) => {
    const buf = Buffer.alloc(len);
    const n = await new Promise<number>((resolve) => ops.read('/big.bin', fd!, buf, len, pos, resolve));
    return buf.subarray(0, Math.max(0, n));
  };
  // Chunks 2, 0, 3, 1, 0 again: each read must come from its own chunk, not the last one loaded.
  for (const pos of [2 * CHUNK_SIZE + 5, 100, 3 * CHUNK_SIZE + 1, CHUNK_SIZE + 777, 4096]) {
    t.same(await read(pos, 65536), content.subarray(pos, pos + 65536), `read at ${pos}`);
  }
  t.same(await read(CHUNK_SIZE - 1000, 4000), content.subarray(CHUNK_SIZE - 1000, CHUNK_SIZE + 3000), 'across a chunk boundary');

  // A write into the middle of chunk 1 (its other bytes come from the store), after chunk 2 was read.
  await read(2 * CHUNK_SIZE, 10);
  const patch = Buffer.alloc(1000, 0x41);
  const at = CHUNK_SIZE + 500_000;
  t.equal(await new Promise<number>((resolve) => ops.write('/big.bin', fd!, patch, patch.length, at, resolve)), patch.length);
  const expected = Buffer.from(content);
  patch.copy(expected, at);
  t.same(await read(CHUNK_SIZE, CHUNK_SIZE), expected.subarray(CHUNK_SIZE, 2 * CHUNK_SIZE), 'the rewritten chunk, read back');
  t.same(await read(2 * CHUNK_SIZE, 1000), expected.subarray(2 * CHUNK_SIZE, 2 * CHUNK_SIZE + 1000), 'its neighbour untouched');
  t.equal((await call(ops.flush, '/big.bin', fd))[0], 0);
  t.equal((await call(ops.release, '/big.bin', fd))[0], 0);
  await backend.drain();
  t.ok(fs.read('/big.bin').content.equals(expected), 'the committed version is the stored file with the patch');
  t.ok(fs.getVersion('/big.bin', 1).equals(content), 'and the first version is unchanged');
});

t.test('a file open in the mount that another face deletes keeps what it reads: the delete holds its chunks until the last close', async (t) => {
  const { fs, backend, ops } = await journaledMount(t);
  const content = noise(3 * CHUNK_SIZE + 4321, 11);
  const rewritten = noise(2 * CHUNK_SIZE + 99, 12);
  await fs.write('/kept.bin', content);
  await fs.write('/rewritten.bin', content);
  const read = async (path: string, fd: number, pos: number, len: number) => {
    const buf = Buffer.alloc(len);
    const n = await new Promise<number>((resolve) => ops.read(path, fd, buf, len, pos, resolve));
    return n < 0 ? n : buf.subarray(0, n);
  };
  const [, kept] = await call<number>(ops.open, '/kept.bin', 0);
  const [, other] = await call<number>(ops.open, '/rewritten.bin', 0);
  t.same(await read('/kept.bin', kept!, 0, 1000), content.subarray(0, 1000), 'read a little first');
  const hashes = fs.file('/kept.bin').chunks;
  await fs.write('/rewritten.bin', rewritten); // another face's rewrite, not yet read through the descriptor
  const newHashes = fs.file('/rewritten.bin').chunks;
  await fs.delete('/kept.bin');
  await fs.delete('/rewritten.bin');
  t.notOk(fs.exists('/kept.bin'), 'the deletes stand');
  await backend.drain();
  await new Promise((r) => setImmediate(r));
  t.ok(hashes.every((h) => fs.pendingHolds(h) === 1), 'each chunk the open file reads is held for it');
  t.same(await read('/kept.bin', kept!, 0, content.length), content, 'every byte is read through the descriptor');
  t.same(await read('/rewritten.bin', other!, 0, rewritten.length + 10), rewritten, 'one rewritten meanwhile reads the rewrite, kept too');
  t.equal((await call(ops.release, '/kept.bin', kept))[0], 0);
  t.equal((await call(ops.release, '/rewritten.bin', other))[0], 0);
  await new Promise((r) => setTimeout(r, 50));
  t.ok([...hashes, ...newHashes].every((h) => fs.pendingHolds(h) === 0), 'the holds are given up at the last close');
  t.throws(() => fs.chunkRangeInto(hashes[1]!, 0, 10, Buffer.alloc(10), 0), 'and the chunks are freed');
  t.notOk(fs.exists('/kept.bin'), 'nothing comes back');
});
