/**
 * @module test/native/sha256
 * svc's SHA-256 addon (native/sha256/svc_sha256.c) against node:crypto: any length, any split into
 * updates, two states fed at once whether or not they stand at a block boundary, bytes on a
 * SharedArrayBuffer or in any typed array; states copied and digested without being consumed; bad
 * arguments refused. Then EtagAndChunks, with the addon and without it, and `SVC_SHA256=node`.
 */
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { EtagAndChunks, loadSha256Addon, sha256Addon } from '../../src/native/sha256.js';
import { CHUNK_SIZE } from '../../src/fs/service.js';
import { noise, sha256 } from '../fs/fixture.js';

/** Whether this machine can run the addon: x86-64 Linux whose CPU has the SHA extensions. */
const cpuHasSha = process.platform === 'linux' && process.arch === 'x64'
  && /^flags\s*:.*\bsha_ni\b/m.test(readFileSync('/proc/cpuinfo', 'utf8'));

const addon = sha256Addon();

t.test('the addon is built and used wherever the CPU has the SHA extensions', async (t) => {
  if (!cpuHasSha) {
    t.equal(addon, null, 'no SHA extensions here: node:crypto');
    return;
  }
  t.ok(addon, 'npm run build built native/build/svc_sha256.node and it loads');
  t.equal(loadSha256Addon({ SVC_SHA256: 'node' }), null, 'SVC_SHA256=node rules it out');
  t.ok(loadSha256Addon({}), 'and only that');
});

t.test('the addon against node:crypto', { skip: addon ? false : 'svc_sha256 is not available here (see the test above)' }, async (t) => {
  const a = addon!;
  // Every length up to five blocks, then random ones; fed in random pieces, sometimes pairwise.
  let mismatches = 0;
  const random = (n: number) => Math.floor(Math.random() * n);
  for (let round = 0; round < 1500; round++) {
    const length = round < 330 ? round : random(200_000);
    const data = randomBytes(length);
    const one = a.init();
    const two = a.init();
    for (let off = 0; off < length;) {
      const n = Math.min(length - off, random(round % 3 === 0 ? 200 : 9000));
      const piece = data.subarray(off, off + n);
      if (random(3) === 0) {
        a.update(one, null, piece);
        a.update(two, null, piece);
      } else {
        a.update(one, two, piece);
      }
      off += n;
    }
    const want = sha256(data);
    if (a.digest(one) !== want || a.digest(two) !== want) mismatches++;
  }
  t.equal(mismatches, 0, 'every length and split hashes as node:crypto does');

  // A chunk's own hash and the running etag, fed together (the FUSE hasher's use).
  const content = noise(3 * CHUNK_SIZE + 12345, 9);
  const etag = a.init();
  for (let off = 0; off < content.length; off += CHUNK_SIZE) {
    const chunk = content.subarray(off, off + CHUNK_SIZE);
    const own = a.init();
    a.update(own, etag, chunk);
    t.equal(a.digest(own), sha256(chunk), `chunk at ${off}`);
  }
  t.equal(a.digest(etag), sha256(content), 'the etag');
  t.equal(a.digest(etag), sha256(content), 'digest does not consume the state');

  // Two states fed together where one is in mid-block.
  const ahead = a.init();
  a.update(ahead, null, Buffer.from('x'));
  const fresh = a.init();
  a.update(fresh, ahead, content);
  t.equal(a.digest(fresh), sha256(content));
  t.equal(a.digest(ahead), sha256(Buffer.concat([Buffer.from('x'), content])));

  // A copy is a hash of its own.
  const copy = Buffer.from(etag);
  a.update(copy, null, Buffer.from('more'));
  t.equal(a.digest(copy), sha256(Buffer.concat([content, Buffer.from('more')])));
  t.equal(a.digest(etag), sha256(content), 'the original is untouched');

  // Bytes on a SharedArrayBuffer, and typed arrays of wider elements (their bytes).
  const shared = new Uint8Array(new SharedArrayBuffer(CHUNK_SIZE));
  shared.set(content.subarray(0, CHUNK_SIZE));
  const s = a.init();
  a.update(s, null, shared);
  t.equal(a.digest(s), sha256(content.subarray(0, CHUNK_SIZE)), 'a SharedArrayBuffer');
  const wide = new Float64Array([1.5, -2, 3e300]);
  const w = a.init();
  a.update(w, null, wide);
  t.equal(a.digest(w), sha256(new Uint8Array(wide.buffer)), 'a Float64Array, as its bytes');

  const detached = new ArrayBuffer(16);
  const view = new Uint8Array(detached);
  structuredClone(detached, { transfer: [detached] });
  const e = a.init();
  a.update(e, a.init(), view);
  a.update(e, null, new Uint8Array(0));
  t.equal(a.digest(e), sha256(Buffer.alloc(0)), 'empty and detached arrays add nothing');

  t.throws(() => a.update(Buffer.alloc(112), null, content), /not a state/, 'a buffer that is not a state');
  t.throws(() => a.update(etag, etag, content), /same buffer/, 'one state twice');
  t.throws(() => a.update(etag, null, 'text' as unknown as Uint8Array), /Buffer or a TypedArray/, 'a string');
  t.throws(() => a.digest(Buffer.alloc(3)), /not a state/, 'a digest of anything else');
  // A state's bytes are JS's to write: one whose buffered length is out of range is refused (it
  // made the addon copy past its buffers, found in a review).
  for (const buffered of [64, 0x1000, 0xfffffff0]) {
    const bad = a.init();
    bad.writeUInt32LE(buffered, 40);
    t.throws(() => a.update(bad, null, content), /not a state/, `update: ${buffered} bytes buffered`);
    t.throws(() => a.digest(bad), /not a state/, `digest: ${buffered} bytes buffered`);
  }
  t.equal(a.digest(etag), sha256(content), 'a refused update changes nothing');
});

t.test('EtagAndChunks: the etag and each piece\'s own hash, the same with and without the addon', async (t) => {
  const content = noise(2 * CHUNK_SIZE + 777, 4);
  const pieces = [content.subarray(0, CHUNK_SIZE), content.subarray(CHUNK_SIZE, 2 * CHUNK_SIZE), content.subarray(2 * CHUNK_SIZE)];
  // The addon seen through a counter of its paired updates (one pass for the etag and a piece).
  let paired = 0;
  const counted = addon && { ...addon, update: (a: Buffer, b: Buffer | null, bytes: NodeJS.TypedArray) => {
    if (b) paired++;
    addon.update(a, b, bytes);
  } };
  const engines: [string, typeof addon][] = [['node:crypto', null]];
  if (counted) engines.push(['svc_sha256', counted]);
  for (const [name, engine] of engines) {
    const hashes = new EtagAndChunks(engine);
    t.equal(hashes.add(pieces[0]!, true), sha256(pieces[0]!), `${name}: a piece's own hash`);
    t.equal(hashes.add(pieces[1]!), undefined, `${name}: none asked`);
    t.equal(hashes.add(pieces[2]!, true), sha256(pieces[2]!), `${name}: the short last piece`);
    t.equal(hashes.etag(), createHash('sha256').update(content).digest('hex'), `${name}: the etag of them all`);
    t.equal(new EtagAndChunks(engine).etag(), sha256(Buffer.alloc(0)), `${name}: nothing added`);
  }
  if (counted) t.equal(paired, 2, 'svc_sha256: each piece asked for its own hash took one pass with the etag');
});
