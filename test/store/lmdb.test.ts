import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb/index.js';
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
