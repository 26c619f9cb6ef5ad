/**
 * @module test/fuse/hasher
 * The FUSE mount's hashing thread, in process: chunk hashes and running etags equal SHA-256 of the
 * bytes; chunk buffers are reused zeroed, and never while the worker may still read them. The
 * hashing tests run with each engine the worker can use: svc's SHA-256 addon (where it is built
 * and the CPU has the SHA extensions) and node:crypto.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { CHUNK_SIZE } from '../../src/fs/service.js';
import { ChunkHasher, KEPT_STATES, POOLED_CHUNKS, type HashEngine } from '../../src/transports/fuse/hasher.js';
import { sha256AddonPath } from '../../src/native/sha256.js';
import { noise, sha256 } from '../fs/fixture.js';

const addon = sha256AddonPath();
const ENGINES: [HashEngine, string | undefined][] = [['node:crypto', undefined]];
if (addon) ENGINES.unshift(['svc_sha256', addon]);

for (const [engine, sha256Addon] of ENGINES) {
  const newHasher = () => new ChunkHasher({ sha256: sha256Addon });

  t.test(`${engine}: the worker hashes with it`, async (t) => {
    const hasher = newHasher();
    t.teardown(() => hasher.close());
    t.equal(await hasher.engine(), engine);
  });

  t.test(`${engine}: chunk hashes and a running etag are SHA-256 of the bytes handed over`, async (t) => {
    const hasher = newHasher();
    t.teardown(() => hasher.close());
    const a = hasher.acquire();
    noise(CHUNK_SIZE, 1).copy(a);
    const b = Buffer.from(noise(CHUNK_SIZE, 2)); // not shared: copied to the worker
    const tail = noise(1000, 3);
    const stream = hasher.openStream();
    t.equal(await hasher.chunk(a, stream), sha256(a));
    t.equal(await hasher.chunk(b, stream), sha256(b));
    const done = await hasher.finish(stream, tail);
    t.equal(done?.etag, createHash('sha256').update(a).update(b).update(tail).digest('hex'));
    t.equal(done?.tail, sha256(tail));
    const empty = hasher.openStream();
    t.same(await hasher.finish(empty), { etag: sha256(Buffer.alloc(0)), tail: undefined }, 'an empty stream');
  });

  t.test(`${engine}: feed extends a running etag without hashing the bytes on their own`, async (t) => {
    const hasher = newHasher();
    t.teardown(() => hasher.close());
    const a = noise(CHUNK_SIZE, 4);
    const b = Buffer.alloc(CHUNK_SIZE);
    const stream = hasher.openStream();
    t.equal(await hasher.feed(a, stream), true);
    t.equal(await hasher.chunk(b, stream), sha256(b), 'fed and hashed pieces mix in one stream');
    const done = await hasher.finish(stream, Buffer.from('end'));
    t.equal(done?.etag, sha256(Buffer.concat([a, b, Buffer.from('end')])));
    await hasher.close();
    t.equal(await hasher.feed(a, hasher.openStream()), false, 'a closed hasher says so');
  });

  t.test(`${engine}: resume continues a finished etag: appended bytes hash to the etag of the whole`, async (t) => {
    const hasher = newHasher();
    t.teardown(() => hasher.close());
    const first = noise(CHUNK_SIZE + 100, 5);
    const stream = hasher.openStream();
    const done = await hasher.finish(stream, first);
    t.equal(done?.etag, sha256(first));
    const resumed = await hasher.resume(done!.etag);
    t.not(resumed, undefined, 'the state of a finished etag is kept');
    const more = noise(5000, 6);
    t.equal(await hasher.feed(more, resumed!), true);
    // The resumed etag stands 100 + 5000 bytes into a 64-byte block: a chunk fed with it cannot
    // share its pass (the addon then hashes the two one after the other).
    const chunk = noise(CHUNK_SIZE, 7);
    t.equal(await hasher.chunk(chunk, resumed!), sha256(chunk), 'a chunk hashed beside an etag in mid-block');
    const whole = await hasher.finish(resumed!);
    t.equal(whole?.etag, sha256(Buffer.concat([first, more, chunk])), 'the etag of the whole content');
    t.not(await hasher.resume(whole!.etag), undefined, 'and that one is kept in turn');
    t.equal(await hasher.resume(sha256(Buffer.from('never finished here'))), undefined, 'an etag it did not finish: no state');
    // Only the last KEPT_STATES etags are kept.
    for (let i = 0; i <= KEPT_STATES; i++) await hasher.finish(hasher.openStream(), Buffer.from(`filler ${i}`));
    t.equal(await hasher.resume(done!.etag), undefined, 'the oldest states are let go');
  });
}

t.test('a reused chunk buffer is zero-filled; one still being read is not reused until its hash lands', async (t) => {
  const hasher = new ChunkHasher();
  t.teardown(() => hasher.close());
  const first = hasher.acquire();
  first.fill(7);
  hasher.release(first);
  t.equal(hasher.pooled, 1);
  const again = hasher.acquire();
  t.equal(again.buffer, first.buffer, 'the same memory, reused');
  t.ok(again.equals(Buffer.alloc(CHUNK_SIZE)), 'zero-filled');
  again.fill(9);
  const hash = hasher.chunk(again);
  hasher.release(again);
  t.equal(hasher.pooled, 0, 'not pooled while the worker may read it');
  t.not(hasher.acquire().buffer, again.buffer, 'a fresh buffer meanwhile');
  t.equal(await hash, sha256(Buffer.alloc(CHUNK_SIZE, 9)));
  await new Promise((r) => setImmediate(r));
  t.equal(hasher.pooled, 1, 'pooled once its hash is in');
  for (let i = 0; i < POOLED_CHUNKS + 4; i++) hasher.release(Buffer.from(new SharedArrayBuffer(CHUNK_SIZE)));
  t.equal(hasher.pooled, POOLED_CHUNKS, 'the pool is bounded');
  hasher.release(Buffer.alloc(CHUNK_SIZE));
  t.equal(hasher.pooled, POOLED_CHUNKS, 'ordinary buffers are not pooled');
});

t.test('a closed hasher answers undefined and hashing falls back to the caller', async (t) => {
  const hasher = new ChunkHasher();
  await hasher.close();
  t.equal(await hasher.chunk(Buffer.alloc(10)), undefined);
  t.equal(await hasher.finish(hasher.openStream()), undefined);
});
