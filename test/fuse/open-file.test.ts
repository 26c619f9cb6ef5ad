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
import { OpenFile, RESIDENT_DIRTY_CHUNKS } from '../../src/transports/fuse/open-file.js';
import type { CommitPiece } from '../../src/transports/fuse/backend.js';

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), a | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

for (const spooled of [false, true]) {
t.test(`random writes, reads, truncations and commits match a Buffer model${spooled ? ' (one chunk in memory, the rest spooled)' : ''}`, async (t) => {
  const f = makeFs(t);
  const backend = new LocalBackend({ fs: f.fs, events: new EventBus(), dataDir: '/tmp' });
  const commit = (file: OpenFile) => file.commit(
    (path, pieces, attributes, modified) => backend.commit(path, pieces, { attributes, modified }),
    (path, version) => backend.versionContent(path, version),
  );
  await f.fs.write('/m', noise(2 * CHUNK_SIZE + 100, 5));
  let model = Buffer.from(noise(2 * CHUNK_SIZE + 100, 5));
  const spoolDir = mkdtempSync(join(tmpdir(), 'svc-spool-'));
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }));
  const file = new OpenFile('/m', await backend.content('/m'), { mtime: 1, ...(spooled ? { spoolDir, residentChunks: 1 } : {}) });
  let spills = 0;
  const random = rng(99);
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
    }
    t.equal(file.size, model.length, `step ${step}: size`);
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
