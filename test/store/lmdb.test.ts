import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { isLmdbCommitFailure, LmdbStore } from '../../src/store/lmdb/index.js';
import { StoreWriteError } from '../../src/store/types.js';
import { smallDisk, smallDiskSkipReason } from '../helpers/small-disk.js';
import { metadataStoreSuite, type StoreFixture } from './metadata.suite.js';

function open(dir: string): StoreFixture {
  const store = new LmdbStore(dir);
  let closed = false;
  const close = async () => {
    if (!closed) await store.close();
    closed = true;
  };
  return {
    store,
    blobs: store.blobs,
    reopen: async () => (await close(), open(dir)),
    destroy: async () => {
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

metadataStoreSuite(t, async () => open(mkdtempSync(join(tmpdir(), 'svc-lmdb-'))));

t.test('lmdb: describe() reports the embedded store and its location', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lmdb-'));
  const fx = open(dir);
  t.teardown(() => fx.destroy());
  t.equal(fx.store.describe().type, 'lmdb');
  t.match(fx.store.describe().instance, dir);
  t.equal(fx.blobs.describe().type, 'lmdb-cas');
});

t.test('lmdb: a commit the full disk cannot take fails with ENOSPC; the store goes on', { skip: smallDiskSkipReason() }, async (t) => {
  const dir = join(smallDisk(t, 24), 'db');
  const store = new LmdbStore(dir);
  t.teardown(() => store.close().catch(() => undefined));
  const table = store.table<{ n: number }>('t');
  await store.transact(() => table.put('kept', { n: 1 }));
  let failure: unknown;
  for (let i = 0; i < 12 && !failure; i++) {
    const bytes = randomBytes(4 * 1024 * 1024);
    await store.transact(() => store.blobs.put(`chunk${i}`, bytes), { durable: i % 2 === 0 }).catch((err: unknown) => (failure = err));
  }
  t.ok(failure instanceof StoreWriteError, 'the failure is a StoreWriteError');
  t.match(failure, { code: 'ENOSPC', message: /disk .* is full/ });
  t.same(table.get('kept'), { n: 1 }, 'what was committed before is there');
  await store.transact(() => table.put('after', { n: 2 }));
  t.same(table.get('after'), { n: 2 }, 'a small commit still goes through');
  t.notOk(isLmdbCommitFailure(new Error('something else')));
});
