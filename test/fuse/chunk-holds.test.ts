/**
 * @module test/fuse/chunk-holds
 * Chunks stored while a file is written through the mount (in process, no kernel): they are in the
 * store, with a pending hold, before the close; the commit takes the holds over; a file released
 * without a commit, a chunk written or truncated again, and a crash (holds left in the store, then
 * the start-up cleanup) free them; a chunk already stored is not stored again and the counts stay
 * right. Reference counts are checked against the tree (versions + pending holds) throughout.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeFs, noise, sha256, type FsFixture } from '../fs/fixture.js';
import { EventBus } from '../../src/core/events.js';
import { CHUNK_SIZE, FsService } from '../../src/fs/service.js';
import { LmdbStore } from '../../src/store/lmdb/index.js';
import { LocalBackend } from '../../src/transports/fuse/local.js';
import { OpenFile } from '../../src/transports/fuse/open-file.js';
import type { CommitPiece } from '../../src/transports/fuse/backend.js';
import { ChunkHasher } from '../../src/transports/fuse/hasher.js';
import { ChunkHolds } from '../../src/transports/fuse/chunk-holds.js';

const CS = CHUNK_SIZE;

function setup(t: Test, opts: { residentChunks?: number; holdDelayMs?: number } = {}) {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const hasher = new ChunkHasher();
  t.teardown(() => hasher.close());
  // holdDelayMs: a store slower than the writer (each early-store transaction starts that much later).
  const hold = async (r: Parameters<LocalBackend['hold']>[0], rel: string[]) => {
    if (opts.holdDelayMs) await new Promise((ok) => setTimeout(ok, opts.holdDelayMs));
    return backend.hold(r, rel);
  };
  const holds = new ChunkHolds({ hold, chunk: (h) => backend.chunk(h), chunkRange: (h, from, to, target, at) => backend.chunkRange(h, from, to, target, at) }, (err) => t.error(err, 'an early store failed'));
  const spoolDir = mkdtempSync(join(tmpdir(), 'svc-spool-'));
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }));
  const open = async (path: string, opts2: { stored?: boolean } = {}) => new OpenFile(
    path, opts2.stored ? await backend.content(path) : undefined,
    { attributes: opts2.stored ? undefined : { mode: 0o644 }, mtime: 1, spoolDir, hasher, holds, residentChunks: opts.residentChunks },
  );
  let handed: CommitPiece[] = [];
  const commit = (file: OpenFile) => file.commit((path, pieces, attributes, modified, etag) => {
    handed = pieces;
    return backend.commit(path, pieces, { attributes, modified, etag });
  }, (path, version) => backend.versionContent(path, version));
  return { f, backend, holds, open, commit, handed: () => handed };
}

function consistent(t: Test, f: FsFixture, what: string): void {
  const sort = (m: Map<string, number>) => [...m].sort(([a], [b]) => (a < b ? -1 : 1));
  t.same(sort(f.allRefs()), sort(f.expectedRefs()), `${what}: every chunk's count is its versions' references plus its pending holds`);
}

async function writeAll(file: OpenFile, data: Buffer, block = CS / 4): Promise<void> {
  for (let off = 0; off < data.length; off += block) {
    const n = Math.min(block, data.length - off);
    await file.write(data.subarray(off, off + n), n, off);
  }
}

const hashesOf = (data: Buffer) => Array.from({ length: Math.ceil(data.length / CS) }, (_, i) => sha256(data.subarray(i * CS, (i + 1) * CS)));

t.test('full chunks are stored, held, before the close; the commit takes the holds over', async (t) => {
  const { f, open, commit, handed } = setup(t);
  const data = noise(5 * CS + 1234, 3);
  const file = await open('/new.bin');
  await writeAll(file, data);
  await file.storesSettled();
  const hashes = hashesOf(data);
  t.equal(f.fs.stat('/new.bin'), undefined, 'nothing committed yet');
  for (const [i, h] of hashes.slice(0, 5).entries()) {
    t.ok(f.store.blobs.has(h), `chunk ${i} is in the store before the close`);
    t.equal(f.fs.pendingHolds(h), 1, `chunk ${i} has one pending hold`);
  }
  t.notOk(f.store.blobs.has(hashes[5]!), 'the partial last chunk waits for the commit');
  t.equal(file.heldChunks, 5);
  t.ok(file.residentBytes <= CS, `only the last chunk stays in memory (${file.residentBytes} bytes)`);
  t.equal(file.spilledChunks, 0, 'nothing left in the spool');
  const buf = Buffer.alloc(3000);
  await file.read(buf, buf.length, 2 * CS - 1000, async () => undefined);
  t.ok(buf.equals(data.subarray(2 * CS - 1000, 2 * CS + 2000)), 'held chunks read back from the store');
  consistent(t, f, 'before the commit');
  const result = await commit(file);
  t.same(handed().map((p) => p.held === true), [true, true, true, true, true, false], 'the commit is handed the held chunks as held');
  t.equal(result?.etag, sha256(data));
  t.ok(f.fs.read('/new.bin').content.equals(data), 'committed content');
  t.same(f.pending(), new Map(), 'no hold left');
  t.equal(file.heldChunks, 0);
  consistent(t, f, 'after the commit');
  for (const h of hashes) t.equal(f.refs(h), 1, 'one reference each (the entry)');
});

t.test('a file released without a commit (unlinked while open, or never committed) frees its early chunks', async (t) => {
  for (const orphan of [false, true]) {
    const { f, holds, open, commit } = setup(t);
    const data = noise(3 * CS, orphan ? 8 : 7);
    const file = await open('/gone.bin');
    await writeAll(file, data);
    await file.storesSettled();
    t.equal(file.heldChunks, 3);
    t.ok(hashesOf(data).every((h) => f.store.blobs.has(h)), 'stored early');
    if (orphan) {
      file.orphan = true;
      t.equal(await commit(file), undefined, 'an unlinked file is not committed');
    }
    await file.dispose();
    await holds.idle();
    t.same(f.pending(), new Map(), 'no hold left');
    t.equal(f.allRefs().size, 0, 'every early chunk freed');
  }
});

t.test('a held chunk written again, or truncated, comes back and its hold is given up', async (t) => {
  const { f, open, commit } = setup(t);
  const data = noise(4 * CS, 21);
  const file = await open('/rw.bin');
  await writeAll(file, data);
  await file.storesSettled();
  t.equal(file.heldChunks, 4);
  const old = hashesOf(data);
  // Rewrite a few bytes of chunk 1 (not reaching its end: it is not stored again until the commit).
  const patch = Buffer.from('PATCHED');
  await file.write(patch, patch.length, CS + 100);
  patch.copy(data, CS + 100);
  // Truncate inside chunk 3: chunk 3 comes back cut, nothing of it held.
  await file.truncate(3 * CS + 10);
  const model = data.subarray(0, 3 * CS + 10);
  await file.storesSettled();
  t.equal(file.heldChunks, 2, 'chunks 0 and 2 still held');
  t.notOk(f.store.blobs.has(old[1]!), 'the rewritten chunk\'s early copy is freed');
  t.notOk(f.store.blobs.has(old[3]!), 'the truncated chunk\'s early copy is freed');
  consistent(t, f, 'after rewrite and truncation');
  const buf = Buffer.alloc(model.length);
  t.equal(await file.read(buf, buf.length, 0, async () => undefined), model.length);
  t.ok(buf.equals(model), 'content as written');
  await commit(file);
  t.ok(f.fs.read('/rw.bin').content.equals(model), 'committed content');
  t.same(f.pending(), new Map());
  consistent(t, f, 'after the commit');
});

t.test('a chunk already stored is held, not stored again; counts stay right with or without the commit', async (t) => {
  const { f, holds, open, commit } = setup(t);
  const shared = noise(CS, 31);
  await f.fs.write('/existing.bin', shared);
  const h = sha256(shared);
  t.equal(f.refs(h), 1);
  const a = await open('/a.bin');
  await writeAll(a, Buffer.concat([shared, shared]));
  await a.storesSettled();
  t.equal(f.fs.pendingHolds(h), 2, 'two holds (the chunk twice in the file)');
  t.equal(f.refs(h), 3, 'one reference per hold, one stored copy');
  consistent(t, f, 'held twice');
  await commit(a);
  t.equal(f.refs(h), 3, 'the commit turned both holds into the entry\'s references');
  t.same(f.pending(), new Map());
  const b = await open('/b.bin');
  await writeAll(b, shared);
  await b.storesSettled();
  t.equal(f.refs(h), 4);
  await b.dispose();
  await holds.idle();
  t.equal(f.refs(h), 3, 'the given-up hold leaves the chunk to its other users');
  consistent(t, f, 'after dispose');
  await f.fs.delete('/a.bin');
  await f.fs.delete('/existing.bin');
  t.equal(f.allRefs().size, 0, 'freed with its last user');
});

t.test('a crash leaves pending holds; the start-up cleanup frees their chunks and keeps shared ones', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-holds-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const kept = noise(CS, 41);
  const fresh = noise(CS, 42);
  {
    const store = new LmdbStore(dir);
    const fs = new FsService({ store, blobs: store.blobs, events: new EventBus() });
    await fs.write('/kept.bin', kept);
    const held = await fs.holdChunks([{ hash: sha256(kept), data: () => kept }, { hash: sha256(fresh), data: () => fresh }]);
    t.same(held, [true, true]);
    await fs.flushed();
    // The daemon dies here: no commit, no release.
    await fs.close();
    await store.close();
  }
  const store = new LmdbStore(dir);
  const fs = new FsService({ store, blobs: store.blobs, events: new EventBus() });
  t.teardown(async () => {
    await fs.close();
    await store.close();
  });
  t.equal(fs.pendingHolds(sha256(fresh)), 1, 'the hold survived the crash');
  t.ok(store.blobs.has(sha256(fresh)));
  t.equal(await fs.dropPendingHolds(), 2, 'start-up drops every hold left');
  t.notOk(store.blobs.has(sha256(fresh)), 'a chunk only the crashed file held is freed');
  t.ok(store.blobs.has(sha256(kept)), 'a chunk another file references stays');
  t.same([...store.table<number>('refs').range({})], [], 'and is back to one reference (no refs row)');
  t.ok(fs.read('/kept.bin').content.equals(kept));
  t.equal(await fs.dropPendingHolds(), 0, 'nothing left to drop');
});

t.test('holdChunks: bytes no longer wanted are not stored; giving up more holds than exist is refused with nothing written', async (t) => {
  const f = makeFs(t);
  const a = noise(CS, 51);
  t.same(await f.fs.holdChunks([{ hash: sha256(a), data: () => undefined }]), [false]);
  t.equal(f.allRefs().size, 0, 'nothing stored');
  await t.rejects(f.fs.holdChunks([{ hash: sha256(a), data: () => a }], [sha256(a)]), /fewer than 1 pending holds/);
  t.equal(f.allRefs().size, 0, 'the refused batch left no trace');
  await f.fs.holdChunks([{ hash: sha256(a), data: () => a }]);
  await f.fs.holdChunks([], [sha256(a)]);
  t.equal(f.allRefs().size, 0, 'a released hold frees its chunk');
  await t.rejects(f.fs.writeChunks('/x', [{ hash: sha256(a), data: a, held: true }]), /pending holds/, 'a commit cannot take a hold it does not have');
  t.equal(f.fs.stat('/x'), undefined);
});

t.test('early stores are batched: chunks completed while one transaction runs go in the next', async (t) => {
  const { f, holds, open, commit } = setup(t);
  const data = noise(24 * CS, 61);
  const file = await open('/batch.bin');
  await writeAll(file, data, CS);
  await file.storesSettled();
  t.equal(file.heldChunks, 24);
  t.ok(holds.batches >= 1 && holds.batches <= 24, `${holds.batches} transactions for 24 chunks`);
  await commit(file);
  t.ok(f.fs.read('/batch.bin').content.equals(data));
  consistent(t, f, 'after the commit');
});

t.test('with one chunk in memory, spooled chunks are stored early from the spool', async (t) => {
  const { f, open, commit } = setup(t, { residentChunks: 1 });
  const data = noise(12 * CS + 5, 71);
  const file = await open('/spooled.bin');
  let peak = 0;
  let spilled = 0;
  // Writes of a chunk's size, half a chunk off: each completes one chunk and starts the next, so the
  // completed one (its early store under way) goes to the spool, and is stored from there.
  for (let off = 0; off < data.length;) {
    const n = Math.min(off === 0 ? CS / 2 : CS, data.length - off);
    await file.write(data.subarray(off, off + n), n, off);
    off += n;
    peak = Math.max(peak, file.residentBytes);
    spilled = Math.max(spilled, file.spilledChunks);
  }
  t.ok(peak <= CS, `at most one chunk in memory between writes (peak ${peak / CS})`);
  t.ok(spilled > 0, `chunks went to the spool (up to ${spilled})`);
  await file.storesSettled();
  t.equal(file.heldChunks, 12, 'every full chunk stored, including those that went to the spool first');
  t.equal(file.spilledChunks, 0, 'nothing waits in the spool');
  await commit(file);
  t.ok(f.fs.read('/spooled.bin').content.equals(data));
  t.equal(f.fs.file('/spooled.bin').etag, sha256(data));
  consistent(t, f, 'after the commit');
});

t.test('a file written faster than its chunks reach the store waits for them instead of spooling them', async (t) => {
  const { f, open, commit } = setup(t, { residentChunks: 2, holdDelayMs: 30 });
  const data = noise(10 * CS, 17);
  const file = await open('/fast.bin');
  let spilled = 0;
  let peak = 0;
  for (let off = 0; off < data.length; off += CS) {
    await file.write(data.subarray(off, off + CS), CS, off);
    spilled = Math.max(spilled, file.spilledChunks);
    peak = Math.max(peak, file.residentBytes);
  }
  t.equal(spilled, 0, 'no chunk on its way into the store went to the spool');
  t.ok(peak <= 2 * CS, `at most two chunks in memory (peak ${peak / CS})`);
  await file.storesSettled();
  t.equal(file.heldChunks, 10, 'every chunk stored early');
  await commit(file);
  t.ok(f.fs.read('/fast.bin').content.equals(data));
  consistent(t, f, 'after the commit');
});

t.test('holdChunks by reference: a stored chunk is held without its bytes; one no longer stored is not', async (t) => {
  const f = makeFs(t);
  const a = noise(CS, 61);
  await f.fs.write('/a.bin', a);
  t.same(await f.fs.holdChunks([{ hash: sha256(a) }, { hash: sha256(noise(CS, 62)) }]), [true, false]);
  t.equal(f.refs(sha256(a)), 2, 'the entry and the hold');
  consistent(t, f, 'held by reference');
  await f.fs.delete('/a.bin');
  t.ok(f.store.blobs.has(sha256(a)), 'the hold keeps the chunk after its file went');
  await f.fs.holdChunks([], [sha256(a)]);
  t.equal(f.allRefs().size, 0, 'and the last hold frees it');
});

/** Open `from` (stored) and clone all of it into a new file at `to`, as `cp` asks: calls of `step` bytes. */
async function cloneAll(open: Awaited<ReturnType<typeof setup>>['open'], from: string, to: string, step: number) {
  const src = await open(from, { stored: true });
  const dst = await open(to);
  const source = await src.storedContent();
  let pos = 0;
  const calls: number[] = [];
  for (;;) {
    const n = source ? await dst.cloneFrom(source, pos, step) : 0;
    if (n === 0) break;
    calls.push(n);
    pos += n;
  }
  return { src, dst, source, calls, size: pos };
}

t.test('copy_file_range of a stored file into a new one shares its chunks: nothing read, hashed or stored', async (t) => {
  const { f, open, commit, handed } = setup(t);
  const data = noise(5 * CS + 777, 71);
  const written = await f.fs.write('/src.bin', data);
  const { dst, calls, size } = await cloneAll(open, '/src.bin', '/copy.bin', 2 * CS + 5);
  t.same(calls, [2 * CS, 2 * CS, CS + 777], 'whole chunks a call, the partial one only at the end');
  t.equal(size, data.length);
  t.equal(dst.size, data.length);
  for (const h of hashesOf(data)) t.equal(f.fs.pendingHolds(h), 1, 'each chunk held once for the copy');
  consistent(t, f, 'cloned, not committed');
  const buf = Buffer.alloc(4000);
  await dst.read(buf, buf.length, 3 * CS - 2000, async () => undefined);
  t.ok(buf.equals(data.subarray(3 * CS - 2000, 3 * CS + 2000)), 'the copy reads the source\'s bytes before its commit');
  const blobs = f.allRefs().size;
  const result = await commit(dst);
  t.ok(handed().every((p) => p.held === true && p.hash !== undefined), 'the commit is handed every chunk as held');
  t.equal(result?.etag, written.etag, 'the copy\'s etag is the source\'s, not computed again');
  t.ok(f.fs.read('/copy.bin').content.equals(data));
  t.equal(f.allRefs().size, blobs, 'no new chunk stored');
  for (const h of hashesOf(data)) t.equal(f.refs(h), 2, 'each chunk referenced by both files');
  t.same(f.pending(), new Map());
  consistent(t, f, 'after the commit');
  await f.fs.delete('/src.bin');
  t.ok(f.fs.read('/copy.bin').content.equals(data), 'the copy outlives its source');
  consistent(t, f, 'after the source went');
});

t.test('a clone holds its chunks: the source deleted before the copy is committed takes nothing with it', async (t) => {
  const { f, open, commit } = setup(t);
  const data = noise(3 * CS, 72);
  await f.fs.write('/src.bin', data);
  const { dst } = await cloneAll(open, '/src.bin', '/copy.bin', 8 * CS);
  await f.fs.delete('/src.bin');
  for (const h of hashesOf(data)) t.ok(f.store.blobs.has(h), 'every chunk still stored');
  await commit(dst);
  t.ok(f.fs.read('/copy.bin').content.equals(data));
  consistent(t, f, 'after the commit');
});

t.test('a clone written afterwards, or not whole, commits the right bytes with an etag of its own', async (t) => {
  const { f, open, commit } = setup(t);
  const data = noise(4 * CS + 10, 73);
  await f.fs.write('/src.bin', data);
  // Written after the clone: the etag is computed for the bytes as they are.
  const { dst } = await cloneAll(open, '/src.bin', '/patched.bin', 8 * CS);
  const patch = Buffer.from('patched');
  await dst.write(patch, patch.length, CS + 5);
  const patched = Buffer.from(data);
  patch.copy(patched, CS + 5);
  const r1 = await commit(dst);
  t.equal(r1?.etag, sha256(patched));
  t.ok(f.fs.read('/patched.bin').content.equals(patched));
  // Only the first chunks cloned, the rest written: the etag is the whole content's.
  const src = await open('/src.bin', { stored: true });
  const part = await open('/part.bin');
  t.equal(await part.cloneFrom((await src.storedContent())!, 0, 2 * CS), 2 * CS);
  const rest = data.subarray(2 * CS);
  await part.write(rest, rest.length, 2 * CS);
  const r2 = await commit(part);
  t.equal(r2?.etag, sha256(data));
  t.ok(f.fs.read('/part.bin').content.equals(data));
  consistent(t, f, 'after both commits');
});

t.test('cloneFrom refuses what it cannot share: the caller copies bytes instead', async (t) => {
  const { f, open } = setup(t);
  const data = noise(3 * CS, 74);
  await f.fs.write('/src.bin', data);
  await f.fs.write('/small.txt', Buffer.from('inline content'));
  const src = await open('/src.bin', { stored: true });
  const source = (await src.storedContent())!;
  const dst = await open('/dst.bin');
  t.equal(await dst.cloneFrom(source, CS, CS), 0, 'not where the file ends');
  await dst.write(Buffer.from('x'), 1, 0);
  t.equal(await dst.cloneFrom(source, 1, CS), 0, 'not at a chunk boundary');
  t.equal(await dst.cloneFrom(source, 0, CS), 0, 'not where the file ends (it has a byte)');
  const small = await open('/small.txt', { stored: true });
  const fresh = await open('/fresh.txt');
  t.equal(await fresh.cloneFrom((await small.storedContent())!, 0, CS), 0, 'inline content has no chunk to share');
  await src.write(Buffer.from('y'), 1, 10);
  t.equal(await src.storedContent(), undefined, 'a source written since it was opened is not a stored version');
  t.same(f.pending(), new Map(), 'nothing held by the refusals');
});
