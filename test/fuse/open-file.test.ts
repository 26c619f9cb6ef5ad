/**
 * @module test/fuse/open-file
 * The open-file buffer against a plain Buffer model, in process (no kernel, runs everywhere):
 * random writes, reads, truncations and commits across chunk boundaries; each commit stores one
 * version equal to the model, reusing the stored chunks it did not change; a detached file
 * outlives the deletion of its stored content.
 */
import t from 'tap';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { makeFs, noise, sha256 } from '../fs/fixture.js';
import { EventBus } from '../../src/core/events.js';
import { CHUNK_SIZE } from '../../src/fs/service.js';
import { LocalBackend } from '../../src/transports/fuse/local.js';
import { HASHED_ON_MAIN_THREAD, OpenFile, RESIDENT_DIRTY_CHUNKS } from '../../src/transports/fuse/open-file.js';
import type { CommitPiece } from '../../src/transports/fuse/backend.js';
import { ChunkHasher } from '../../src/transports/fuse/hasher.js';
import { ChunkHolds } from '../../src/transports/fuse/chunk-holds.js';
import { Spool } from '../../src/fs/spool.js';
import { seededRandom } from '../helpers/random.js';

const combos = [[false, false, false], [true, false, false], [false, true, false], [true, true, false], [false, true, true], [true, true, true]] as const;
for (const [spooled, hashed, held] of combos) {
t.test(`random writes, reads, truncations and commits match a Buffer model${spooled ? ' (one chunk in memory, the rest spooled)' : ''}${hashed ? ' (chunks hashed while written)' : ''}${held ? ' (and stored while written)' : ''}`, async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const hasher = hashed ? new ChunkHasher() : undefined;
  t.teardown(() => hasher?.close());
  const holds = held ? new ChunkHolds(backend, (err) => t.error(err)) : undefined;
  const sorted = (m: Map<string, number>) => [...m].sort(([a], [b]) => (a < b ? -1 : 1));
  let maxHeld = 0;
  let etagsGiven = 0;
  const commit = (file: OpenFile) => file.commit(
    (path, pieces, attributes, modified, etag) => {
      if (etag !== undefined) etagsGiven++;
      return backend.commit(path, pieces, { attributes, modified, etag });
    },
    (path, version) => backend.versionContent(path, version),
  );
  await f.fs.write('/m', noise(2 * CHUNK_SIZE + 100, 5));
  let model = Buffer.from(noise(2 * CHUNK_SIZE + 100, 5));
  const spoolDir = mkdtempSync(join(tmpdir(), 'svc-spool-'));
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }));
  const file = new OpenFile('/m', await backend.content('/m'), { mtime: 1, hasher, holds, ...(spooled ? { spoolDir, residentChunks: 1 } : {}) });
  let spills = 0;
  const random = seededRandom(99);
  const int = (n: number) => Math.floor(random() * n);
  const offset = () => (random() < 0.5 ? CHUNK_SIZE - 2000 + int(4000) : int(3 * CHUNK_SIZE));
  let commits = 0;
  for (let step = 0; step < 600; step++) {
    const r = random();
    if (r < 0.45) {
      const pos = offset();
      const data = noise(1 + int(random() < 0.8 ? 5000 : 300_000), step + 1);
      await file.write(data, data.length, pos);
      if (pos + data.length > model.length) model = Buffer.concat([model, Buffer.alloc(pos + data.length - model.length)]);
      data.copy(model, pos);
    } else if (r < 0.7) {
      const pos = offset();
      const len = 1 + int(200_000);
      const buf = Buffer.alloc(len, 0xee);
      const n = await file.read(buf, len, pos, async () => undefined);
      const want = model.subarray(pos, pos + len);
      if (n !== want.length || !buf.subarray(0, n).equals(want)) {
        t.fail(`step ${step}: read @${pos} +${len} differs`);
        return;
      }
    } else if (r < 0.85) {
      const size = random() < 0.2 ? 0 : offset();
      await file.truncate(size);
      model = size <= model.length ? Buffer.from(model.subarray(0, size)) : Buffer.concat([model, Buffer.alloc(size - model.length)]);
    } else {
      const before = f.fs.file('/m').version;
      const result = await commit(file);
      if (result) commits++;
      const rec = f.fs.file('/m');
      t.equal(rec.version, before + (result ? 1 : 0), `step ${step}: one version per commit with changes`);
      if (!f.fs.read('/m').content.equals(model)) {
        t.fail(`step ${step}: the committed content differs from the model`);
        return;
      }
      // Hashes computed while writing must be those of the bytes committed.
      if (rec.etag !== sha256(model) || rec.chunks.some((h, i) => h !== sha256(model.subarray(i * CHUNK_SIZE, (i + 1) * CHUNK_SIZE)))) {
        t.fail(`step ${step}: a stored hash is not the hash of the committed bytes`);
        return;
      }
    }
    t.equal(file.size, model.length, `step ${step}: size`);
    if (held && step % 20 === 0) {
      await file.storesSettled();
      maxHeld = Math.max(maxHeld, file.heldChunks);
      const have = sorted(f.allRefs());
      const want = sorted(f.expectedRefs());
      if (JSON.stringify(have) !== JSON.stringify(want)) {
        t.same(have, want, `step ${step}: reference counts are the versions' references plus the pending holds`);
        return;
      }
    }
    if (spooled) {
      if (file.residentBytes > CHUNK_SIZE) t.fail(`step ${step}: ${file.residentBytes} bytes in memory`);
      spills = Math.max(spills, file.spilledChunks);
    }
  }
  if (spooled) t.ok(spills >= 2, `chunks were spooled (up to ${spills} at once)`);
  t.same(readdirSync(spoolDir), [], 'spool files are unlinked at once');
  await commit(file);
  t.ok(f.fs.read('/m').content.equals(model), 'final content');
  t.equal(f.fs.file('/m').etag, sha256(model));
  t.ok(commits > 10, `${commits} commits`);
  if (hashed) t.ok(etagsGiven > 0, `${etagsGiven} commits used the etag computed while writing`);
  else t.equal(etagsGiven, 0, 'no etag without a hasher');
  if (held) {
    t.ok(maxHeld > 0, `chunks were stored while written (up to ${maxHeld} held at once)`);
    t.same(f.pending(), new Map(), 'the last commit took every hold over');
    t.same(sorted(f.allRefs()), sorted(f.expectedRefs()), 'reference counts match the versions');
    // Written again and given up without a commit: the file's holds go too.
    const tail = noise(2 * CHUNK_SIZE, 777);
    await file.write(tail, tail.length, 0);
    await file.storesSettled();
    t.ok(file.heldChunks > 0, 'chunks held before the release');
    await file.dispose();
    await holds!.idle();
    t.same(f.pending(), new Map(), 'dispose gives every hold up');
    t.same(sorted(f.allRefs()), sorted(f.expectedRefs()), 'and frees what only they held');
  }
});
}

t.test('a commit reuses the stored chunks it did not change', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const data = noise(3 * CHUNK_SIZE, 11);
  await f.fs.write('/big', data);
  const [c0, c1, c2] = f.fs.file('/big').chunks;
  const file = new OpenFile('/big', await backend.content('/big'), { mtime: 1 });
  await file.write(Buffer.from('PATCH'), 5, CHUNK_SIZE + 10);
  await file.commit((p, pieces, a, m) => backend.commit(p, pieces, { attributes: a, modified: m }), (p, v) => backend.versionContent(p, v));
  const after = f.fs.file('/big').chunks;
  t.equal(after[0], c0, 'chunk 0 unchanged');
  t.not(after[1], c1, 'chunk 1 rewritten');
  t.equal(after[2], c2, 'chunk 2 unchanged');
  t.equal(f.refs(c0!), 2, 'shared by both versions');
});

t.test('a write over a whole chunk loads none of its stored bytes; partial writes still read zeros around them', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const hasher = new ChunkHasher();
  t.teardown(() => hasher.close());
  await f.fs.write('/w', noise(3 * CHUNK_SIZE, 13));
  const content = await backend.content('/w');
  const loaded: number[] = [];
  const counted = { ...content, load: (i: number) => (loaded.push(i), content.load(i)), loadRange: content.loadRange && ((i: number, from: number, to: number, target: Buffer, at: number) => (loaded.push(i), content.loadRange!(i, from, to, target, at))) };
  const file = new OpenFile('/w', counted, { mtime: 1, hasher });
  const whole = noise(CHUNK_SIZE, 14);
  await file.write(whole, CHUNK_SIZE, CHUNK_SIZE);
  t.same(loaded, [], 'chunk 1 written whole: its stored bytes were not loaded');
  await file.write(Buffer.from('xy'), 2, 2 * CHUNK_SIZE + 7);
  t.same(loaded, [2], 'chunk 2 written in part: loaded once');
  const back = Buffer.alloc(3 * CHUNK_SIZE);
  await file.read(back, back.length, 0, async () => undefined);
  const model = Buffer.from(noise(3 * CHUNK_SIZE, 13));
  whole.copy(model, CHUNK_SIZE);
  model.write('xy', 2 * CHUNK_SIZE + 7);
  t.ok(back.equals(model), 'the file reads as written');
  await file.dispose();
  // The pool now holds buffers full of earlier bytes: a new file's partial chunk still reads zeros.
  const fresh = new OpenFile('/n', undefined, { mtime: 1, hasher });
  await fresh.write(noise(CHUNK_SIZE, 15), CHUNK_SIZE, 0);
  await fresh.write(Buffer.from('z'), 1, CHUNK_SIZE + 100);
  const tail = Buffer.alloc(101, 0xee);
  await fresh.read(tail, 101, CHUNK_SIZE, async () => undefined);
  t.ok(tail.equals(Buffer.concat([Buffer.alloc(100), Buffer.from('z')])), 'zeros before the byte written');
  await fresh.dispose();
});

t.test('a detached file keeps its content after the stored file is deleted', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const data = noise(CHUNK_SIZE + 500, 13);
  await f.fs.write('/gone', data);
  const file = new OpenFile('/gone', await backend.content('/gone'), { mtime: 1 });
  await file.detach();
  await f.fs.delete('/gone');
  t.equal(f.allRefs().size, 0, 'every chunk freed');
  const buf = Buffer.alloc(data.length);
  t.equal(await file.read(buf, buf.length, 0, async () => undefined), data.length);
  t.ok(buf.equals(data), 'still readable through the open file');
});

t.test('a large file streams: bounded memory while writing, chunks read one at a time by the commit', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const spoolDir = mkdtempSync(join(tmpdir(), 'svc-spool-'));
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }));
  const chunks = 40;
  const file = new OpenFile('/large', undefined, { attributes: { mode: 0o644 }, mtime: 1, spoolDir });
  const whole = createHash('sha256');
  let peak = 0;
  for (let i = 0; i < chunks * 8; i++) {
    const block = noise(CHUNK_SIZE / 8, i + 1);
    whole.update(block);
    await file.write(block, block.length, i * block.length);
    peak = Math.max(peak, file.residentBytes);
  }
  t.ok(peak <= RESIDENT_DIRTY_CHUNKS * CHUNK_SIZE, `at most ${RESIDENT_DIRTY_CHUNKS} chunks in memory (peak ${peak / CHUNK_SIZE})`);
  t.equal(file.spilledChunks, chunks - RESIDENT_DIRTY_CHUNKS, 'the rest waits in the spool');
  // Reads of spooled chunks come from the spool file.
  const probe = Buffer.alloc(1000);
  await file.read(probe, 1000, 3 * CHUNK_SIZE + 7, async () => undefined);
  t.ok(probe.equals(noise(CHUNK_SIZE / 8, 3 * 8 + 1).subarray(7, 1007)), 'read back from the spool');
  let handed: CommitPiece[] = [];
  const result = await file.commit(async (path, pieces, attributes, modified) => {
    handed = pieces;
    t.ok(pieces.every((p) => p.readSync), 'every piece can be read synchronously (streamed inside the store commit)');
    return backend.commit(path, pieces, { attributes, modified });
  }, (path, version) => backend.versionContent(path, version));
  t.equal(handed.length, chunks, 'one piece per chunk');
  t.equal(result?.size, chunks * CHUNK_SIZE);
  t.equal(result?.etag, whole.digest('hex'), 'the stored content is what was written');
  t.equal(file.spilledChunks, 0, 'nothing spooled after the commit');
  t.equal(file.residentBytes, 0, 'nothing dirty in memory after the commit');
  t.equal(f.fs.file('/large').version, 1, 'one version');
});

t.test('writeChunks reads lazy pieces without keeping them', async (t) => {
  const f = makeFs(t);
  const data = noise(3 * CHUNK_SIZE + 5, 21);
  let loads = 0;
  const pieces = [0, 1, 2, 3].map((i) => ({
    data: () => {
      loads++;
      return data.subarray(i * CHUNK_SIZE, Math.min(data.length, (i + 1) * CHUNK_SIZE));
    },
  }));
  const r = await f.fs.writeChunks('/lazy', pieces);
  t.equal(r.etag, sha256(data));
  t.ok(f.fs.read('/lazy').content.equals(data));
  t.equal(loads, 8, 'each new chunk loaded twice: to hash it and to store it');
  const again = await f.fs.writeChunks('/lazy2', pieces.map((p, i) => ({ ...p, hash: f.fs.file('/lazy').chunks[i] })));
  t.equal(again.etag, r.etag);
  t.equal(loads, 12, 'chunks already stored are loaded only to hash the whole');
});

/** Commits `file`, recording what the committer was handed. */
async function commitSpy(file: OpenFile, backend: LocalBackend): Promise<{ pieces: CommitPiece[]; etag: string | undefined }> {
  const seen: { pieces: CommitPiece[]; etag: string | undefined } = { pieces: [], etag: undefined };
  await file.commit((path, pieces, attributes, modified, etag) => {
    seen.pieces = pieces;
    seen.etag = etag;
    return backend.commit(path, pieces, { attributes, modified, etag });
  }, (path, version) => backend.versionContent(path, version));
  return seen;
}

t.test('a sequential write is hashed while written: the commit gets every chunk hash and the etag', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const hasher = new ChunkHasher();
  t.teardown(() => hasher.close());
  const spoolDir = mkdtempSync(join(tmpdir(), 'svc-spool-'));
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }));
  const data = noise(5 * CHUNK_SIZE + 12345, 31);
  const file = new OpenFile('/seq', undefined, { attributes: { mode: 0o644 }, mtime: 1, spoolDir, residentChunks: 2, hasher });
  const block = 128 * 1024;
  for (let pos = 0; pos < data.length; pos += block) {
    const piece = data.subarray(pos, Math.min(data.length, pos + block));
    await file.write(piece, piece.length, pos);
  }
  t.equal(file.hashedChunks, 5, 'each full chunk handed to the hasher when its end was written');
  t.equal(file.etagCoverage, 5, 'the running etag covers the full chunks');
  const seen = await commitSpy(file, backend);
  t.equal(seen.etag, sha256(data), 'the etag computed while writing is the content hash');
  t.same(seen.pieces.map((p) => p.hash), [0, 1, 2, 3, 4, 5].map((i) => sha256(data.subarray(i * CHUNK_SIZE, (i + 1) * CHUNK_SIZE))),
    'every piece carries its hash, the partial last one included');
  const rec = f.fs.file('/seq');
  t.equal(rec.etag, sha256(data));
  t.ok(f.fs.read('/seq').content.equals(data), 'stored as written');
  t.equal(file.hashedChunks, 0, 'nothing pending after the commit');
  t.ok(hasher.pooled >= 2, `chunk buffers evicted or committed go back to the pool (${hasher.pooled})`);
});

t.test('rewriting a hashed chunk drops its hash and the running etag, even before the hash arrives', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const hasher = new ChunkHasher();
  t.teardown(() => hasher.close());
  const data = Buffer.from(noise(2 * CHUNK_SIZE + 10, 41));
  const file = new OpenFile('/rw', undefined, { attributes: { mode: 0o644 }, mtime: 1, hasher });
  await file.write(data, data.length, 0);
  t.equal(file.etagCoverage, 2);
  // Chunk 0 changes right after it was handed over (the hasher may read either version of it).
  const patch = Buffer.from('changed after hashing');
  await file.write(patch, patch.length, 100);
  patch.copy(data, 100);
  t.equal(file.etagCoverage, 0, 'the running etag no longer matches the content');
  t.equal(file.hashedChunks, 1, 'only chunk 1 keeps its hash');
  const seen = await commitSpy(file, backend);
  t.equal(seen.etag, undefined, 'no etag handed over: the store hashes the content');
  t.equal(seen.pieces[0]!.hash, undefined, 'chunk 0 is hashed by the store');
  t.equal(seen.pieces[1]!.hash, sha256(data.subarray(CHUNK_SIZE, 2 * CHUNK_SIZE)), 'chunk 1 keeps the hash computed while written');
  t.equal(f.fs.file('/rw').etag, sha256(data));
  t.equal(f.fs.file('/rw').chunks[0], sha256(data.subarray(0, CHUNK_SIZE)));
  t.ok(f.fs.read('/rw').content.equals(data));
});

t.test('truncation below hashed chunks drops them; truncation to zero starts a new running etag', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const hasher = new ChunkHasher();
  t.teardown(() => hasher.close());
  const first = noise(3 * CHUNK_SIZE, 51);
  const file = new OpenFile('/tr', undefined, { attributes: { mode: 0o644 }, mtime: 1, hasher });
  await file.write(first, first.length, 0);
  await file.truncate(CHUNK_SIZE + 7);
  t.equal(file.hashedChunks, 1, 'chunks cut or dropped lose their hash');
  t.equal(file.etagCoverage, 0, 'the running etag covered bytes that are gone');
  let seen = await commitSpy(file, backend);
  t.equal(seen.etag, undefined);
  t.equal(f.fs.file('/tr').etag, sha256(first.subarray(0, CHUNK_SIZE + 7)));
  // open(O_TRUNC) then a new sequential write: hashed while written again.
  const second = noise(2 * CHUNK_SIZE + 3, 52);
  await file.truncate(0);
  await file.write(second, second.length, 0);
  t.equal(file.etagCoverage, 2);
  seen = await commitSpy(file, backend);
  t.equal(seen.etag, sha256(second));
  t.equal(f.fs.file('/tr').etag, sha256(second));
  t.ok(f.fs.read('/tr').content.equals(second));
});

t.test('a hasher that has stopped leaves the hashing to the commit', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const hasher = new ChunkHasher();
  const data = noise(2 * CHUNK_SIZE + 99, 61);
  const file = new OpenFile('/stop', undefined, { attributes: { mode: 0o644 }, mtime: 1, hasher });
  await file.write(data, data.length, 0);
  await hasher.close();
  const seen = await commitSpy(file, backend);
  t.equal(seen.etag, undefined, 'no etag from a stopped hasher');
  t.equal(f.fs.file('/stop').etag, sha256(data));
  t.same(f.fs.file('/stop').chunks, [0, 1, 2].map((i) => sha256(data.subarray(i * CHUNK_SIZE, (i + 1) * CHUNK_SIZE))));
});

t.test('writeChunks with every hash, size and the etag known loads only the chunks new to the store', async (t) => {
  const f = makeFs(t);
  const data = noise(2 * CHUNK_SIZE + 5, 71);
  let loads = 0;
  const pieces = [0, 1, 2].map((i) => {
    const bytes = data.subarray(i * CHUNK_SIZE, Math.min(data.length, (i + 1) * CHUNK_SIZE));
    return { size: bytes.length, hash: sha256(bytes), data: () => (loads++, bytes) };
  });
  const r = await f.fs.writeChunks('/known', pieces, { etag: sha256(data) });
  t.equal(r.etag, sha256(data));
  t.equal(r.size, data.length);
  t.equal(loads, 3, 'each new chunk loaded once, to store it');
  t.ok(f.fs.read('/known').content.equals(data));
  await t.rejects(f.fs.writeChunks('/bad', [{ size: 10, hash: 'x', data: Buffer.alloc(10) }, pieces[0]!], { etag: 'y' }),
    /piece 0 of 2 has 10 bytes/, 'piece sizes are still checked');
  const partial = await f.fs.writeChunks('/partial', [{ data: data.subarray(0, 5) }], { etag: 'not used without every hash' });
  t.equal(partial.etag, sha256(data.subarray(0, 5)), 'an etag is ignored unless every piece has its hash and size');
});

t.test('the chunk store takes bytes backed by a SharedArrayBuffer', async (t) => {
  const f = makeFs(t);
  const shared = Buffer.from(new SharedArrayBuffer(CHUNK_SIZE));
  noise(CHUNK_SIZE, 81).copy(shared);
  await f.fs.writeChunks('/shared', [{ data: shared }]);
  t.ok(f.fs.read('/shared').content.equals(shared));
  // Several in one transaction (each copied through the store's one reused buffer) stay distinct.
  const parts = [82, 83, 84].map((seed) => {
    const buf = Buffer.from(new SharedArrayBuffer(CHUNK_SIZE));
    noise(CHUNK_SIZE, seed).copy(buf);
    return buf;
  });
  await f.fs.writeChunks('/shared3', parts.map((data) => ({ data })));
  t.ok(f.fs.read('/shared3').content.equals(Buffer.concat(parts)), 'every chunk stored as it was');
});

t.test('the spool reads a chunk into a reused buffer, zero-filling what was never written', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-spool-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const spool = new Spool(dir);
  t.teardown(() => spool.close());
  const a = noise(CHUNK_SIZE, 91);
  const b = noise(1000, 92);
  await spool.write(0, a);
  await spool.write(1, b);
  const scratch = Buffer.alloc(CHUNK_SIZE, 0xff);
  const first = spool.readSync(0, CHUNK_SIZE, scratch);
  t.equal(first.buffer, scratch.buffer, 'read into the given buffer');
  t.ok(first.equals(a));
  const second = spool.readSync(1, 2000, scratch);
  t.ok(second.subarray(0, 1000).equals(b), 'the bytes written');
  t.ok(second.subarray(1000).equals(Buffer.alloc(1000)), 'zeros past the end of the file, not the previous chunk');
  t.ok(spool.readSync(0, 10).equals(a.subarray(0, 10)), 'without a buffer: a new one');
});

t.test('SEEK_DATA and SEEK_HOLE: holes are whole chunks of zeros, stored or left by a sparse extension, until written', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const CS = CHUNK_SIZE;
  const commit = (file: OpenFile) => file.commit((p, pieces, a, m, etag) => backend.commit(p, pieces, { attributes: a, modified: m, etag }), (p, v) => backend.versionContent(p, v));
  const noReload = async () => undefined;
  // Stored: data, zeros, zeros, data (a partial last chunk).
  const stored = Buffer.concat([noise(CS, 41), Buffer.alloc(2 * CS), noise(1000, 42)]);
  await f.fs.write('/s', stored);
  const file = new OpenFile('/s', await backend.content('/s'), { mtime: 1 });
  const seek = (off: number, hole: boolean) => file.seek(off, hole, noReload);
  t.equal(await seek(0, false), 0, 'data at 0');
  t.equal(await seek(10, true), CS, 'the first hole: chunk 1');
  t.equal(await seek(CS + 5, false), 3 * CS, 'data again at chunk 3');
  t.equal(await seek(3 * CS + 1, true), stored.length, 'past the last data: the end of the file');
  t.equal(await seek(stored.length, false), undefined, 'at the end: ENXIO');
  t.equal(await seek(stored.length + 5, true), undefined, 'past the end: ENXIO');
  // Written into the hole: that chunk is data now, whatever its bytes.
  await file.write(Buffer.alloc(10), 10, 2 * CS + 7);
  t.equal(await seek(CS, false), 2 * CS, 'a chunk written since is data');
  // Extended far by truncation: whole chunks past the old end are holes, the partial one is data.
  await file.truncate(10 * CS + 3);
  t.equal(await seek(3 * CS + 999, true), 4 * CS, 'the extension is a hole from the next whole chunk');
  t.equal(await seek(4 * CS, false), undefined, 'no data after it');
  const done = await commit(file);
  t.equal(done?.size, 10 * CS + 3);
  const expected = Buffer.concat([stored, Buffer.alloc(10 * CS + 3 - stored.length)]);
  t.equal(done?.etag, sha256(expected), 'the commit stores the holes as zeros');
  t.equal(await seek(5 * CS, true), 5 * CS, 'committed: a hole is a stored chunk of zeros');
  t.equal(await seek(0, true), CS);
  // Another face rewrote the file: the seek reads the stored file again first.
  await f.fs.write('/s', noise(2 * CS, 43));
  file.stale = true;
  t.equal(await file.seek(CS, true, () => backend.content('/s')), 2 * CS, 'no hole in the new content');
});

t.test('a large content without a running etag is hashed on the hasher\'s thread before the commit', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const hasher = new ChunkHasher();
  t.teardown(() => hasher.close());
  const chunks = HASHED_ON_MAIN_THREAD + 4;
  const data = noise(chunks * CHUNK_SIZE + 777, 51);
  await f.fs.write('/big', data);
  const given: { etag: string | undefined; hashes: number }[] = [];
  const commit = (file: OpenFile) => file.commit((p, pieces, a, m, etag) => {
    given.push({ etag, hashes: pieces.filter((x) => x.hash !== undefined).length });
    return backend.commit(p, pieces, { attributes: a, modified: m, etag });
  }, (p, v) => backend.versionContent(p, v));
  // Edited in place (no running etag: nothing was written from the start), and grown by a hole.
  const file = new OpenFile('/big', await backend.content('/big'), { mtime: 1, hasher });
  await file.write(Buffer.from('edit'), 4, 3 * CHUNK_SIZE + 5);
  await file.truncate(data.length + 2 * CHUNK_SIZE);
  const model = Buffer.concat([data, Buffer.alloc(2 * CHUNK_SIZE)]);
  Buffer.from('edit').copy(model, 3 * CHUNK_SIZE + 5);
  const result = await commit(file);
  t.equal(result?.etag, sha256(model));
  t.same(given, [{ etag: sha256(model), hashes: chunks + 3 }], 'the store is handed the etag and every piece\'s hash');
  t.ok(f.fs.read('/big').content.equals(model));
  // A small content is left to the commit, as before.
  const small = new OpenFile('/big', await backend.content('/big'), { mtime: 1, hasher });
  await small.truncate(3 * CHUNK_SIZE);
  await small.write(Buffer.from('x'), 1, 10);
  await commit(small);
  t.equal(given[1]?.etag, undefined, `${HASHED_ON_MAIN_THREAD} chunks or fewer: hashed by the commit`);
  const stopped = new ChunkHasher();
  await stopped.close();
  const fallback = new OpenFile('/big', await backend.content('/big'), { mtime: 1, hasher: stopped });
  await fallback.truncate(chunks * CHUNK_SIZE);
  await fallback.write(Buffer.from('y'), 1, 20);
  const r = await commit(fallback);
  t.equal(given[2]?.etag, undefined, 'a stopped hasher leaves the hashing to the commit');
  t.equal(r?.size, chunks * CHUNK_SIZE);
});

t.test('an append to a large stored file hashes only what it appends, resuming the stored etag', async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const hasher = new ChunkHasher();
  t.teardown(() => hasher.close());
  const CS = CHUNK_SIZE;
  const commit = (file: OpenFile) => file.commit((p, pieces, a, m, etag) => backend.commit(p, pieces, { attributes: a, modified: m, etag }),
    (p, v) => backend.versionContent(p, v));
  // Written sequentially through the mount: its etag comes from the hasher, which keeps its state.
  let model = noise((HASHED_ON_MAIN_THREAD + 2) * CS + 300, 61);
  const writer = new OpenFile('/log', undefined, { mtime: 1, hasher, attributes: { mode: 0o644 } });
  for (let at = 0; at < model.length; at += CS / 2) await writer.write(model.subarray(at, at + CS / 2), Math.min(CS / 2, model.length - at), at);
  t.equal((await commit(writer))?.etag, sha256(model));
  for (const [round, size] of [[1, 5000], [2, CS + 7], [3, 10]] as const) {
    const more = noise(size, 70 + round);
    const file = new OpenFile('/log', await backend.content('/log'), { mtime: 1, hasher });
    const before = hasher.bytesSent;
    await file.write(more, more.length, model.length);
    model = Buffer.concat([model, more]);
    t.equal((await commit(file))?.etag, sha256(model), `append ${round}: the etag of the whole content`);
    const sent = hasher.bytesSent - before;
    t.ok(sent < more.length + 3 * CS, `append ${round}: ${sent} bytes hashed for ${more.length} appended, not the ${model.length} of the file`);
    t.ok(f.fs.read('/log').content.equals(model), `append ${round}: content`);
  }
  // Written over before its end: the whole content is hashed again (no resume).
  const file = new OpenFile('/log', await backend.content('/log'), { mtime: 1, hasher });
  const before = hasher.bytesSent;
  await file.write(Buffer.from('over'), 4, 10);
  Buffer.from('over').copy(model, 10);
  t.equal((await commit(file))?.etag, sha256(model), 'a write inside the stored content: its etag computed anew');
  t.ok(hasher.bytesSent - before >= model.length, 'every byte hashed');
  // A hasher that does not know the base's etag (a new one): hashed in full, still right.
  const fresh = new ChunkHasher();
  t.teardown(() => fresh.close());
  const more = noise(2000, 80);
  const other = new OpenFile('/log', await backend.content('/log'), { mtime: 1, hasher: fresh });
  await other.write(more, more.length, model.length);
  model = Buffer.concat([model, more]);
  t.equal((await commit(other))?.etag, sha256(model), 'an unknown base etag: hashed in full');
  t.ok(fresh.bytesSent >= model.length);
});

t.test('a store without ranges (a remote one): sequential reads load each chunk once, other reads fetch only their bytes', async (t) => {
  const data = noise(3 * CHUNK_SIZE + 999, 21);
  const loads: number[] = [];
  const fetches: [number, number, number][] = [];
  const content = {
    size: data.length, version: 1, etag: sha256(data), hash: () => undefined,
    load: async (i: number) => (loads.push(i), data.subarray(i * CHUNK_SIZE, (i + 1) * CHUNK_SIZE)),
    fetchRange: async (i: number, from: number, to: number) => (fetches.push([i, from, to]), data.subarray(i * CHUNK_SIZE + from, i * CHUNK_SIZE + to)),
  };
  const file = new OpenFile('/r', content, { mtime: 1 });
  const reload = async () => undefined;
  const read = async (pos: number, len: number) => {
    const buf = Buffer.alloc(len);
    const n = await file.read(buf, len, pos, reload);
    return buf.subarray(0, n);
  };
  for (let pos = 0; pos < data.length; pos += 128 * 1024) {
    if (!(await read(pos, 128 * 1024)).equals(data.subarray(pos, pos + 128 * 1024))) t.fail(`sequential read at ${pos}`);
  }
  t.same(loads, [0, 1, 2, 3], 'read through in order: each chunk loaded once');
  t.same(fetches, [], 'and nothing fetched by range');
  loads.length = 0;
  const random = seededRandom(5);
  for (let k = 0; k < 50; k++) {
    const pos = Math.floor(random() * data.length);
    const len = 1 + Math.floor(random() * 8192);
    if (!(await read(pos, len)).equals(data.subarray(pos, pos + len))) t.fail(`random read of ${len} at ${pos}`);
  }
  t.equal(loads.length, 0, 'random reads load no whole chunk');
  t.ok(fetches.length >= 50 && fetches.every(([, from, to]) => to - from <= 8192), `they fetch only their bytes (${fetches.length} fetches)`);
  await file.dispose();
});
