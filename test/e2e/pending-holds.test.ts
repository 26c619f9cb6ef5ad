// Chunks stored ahead of a commit that never came (the FUSE mount stores a large file's chunks as
// they are written; the daemon then died) are freed when the daemon starts again, and a chunk a
// stored file also uses stays with one reference.
import t from 'tap';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startDaemon, tempDir, unbytes } from '../helpers/daemon.js';
import { LmdbStore } from '../../src/store/lmdb/index.js';
import { EventBus } from '../../src/core/events.js';
import { FsService } from '../../src/fs/service.js';

const h = (b: Buffer) => createHash('sha256').update(b).digest('hex');

t.test('a daemon starting drops the chunk holds a crash left', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Above the size kept inline in an entry: the stored file references the chunk.
  const kept = Buffer.from('stored and held. '.repeat(200));
  const lost = Buffer.from('held only, never committed');
  {
    const store = new LmdbStore(dir);
    const fs = new FsService({ store, blobs: store.blobs, events: new EventBus() });
    await fs.write('/kept.txt', kept);
    await fs.holdChunks([{ hash: h(kept), data: () => kept }, { hash: h(lost), data: () => lost }], [], { durable: true });
    await fs.close();
    await store.close();
  }
  const d = await startDaemon({ dataDir: dir }, t);
  t.equal(unbytes(await d.call('read', { path: '/kept.txt' })).toString(), kept.toString());
  await d.stop();

  const store = new LmdbStore(dir);
  t.teardown(() => store.close());
  t.same([...store.blobs.hashes()], [h(kept)], 'the chunk only the interrupted file held is freed');
  t.same([...store.table('refs').range({})], [], 'the shared one is back to one reference');
  t.same([...store.table('pending_chunks').range({})], [], 'no hold left');
});
