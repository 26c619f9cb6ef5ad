// A data directory written in the layout used until 2026-11-24 (a version row for every version, the
// current one included, and a reference-count row for every chunk) is upgraded when the daemon starts,
// and then reads, versions, writes and deletes through RPC exactly as a new one does.
import t from 'tap';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startDaemon, tempDir, bytes, unbytes } from '../helpers/daemon.js';
import { LmdbStore } from '../../src/store/lmdb/index.js';
import { entryKey, versionKey, type EntryRecord, type VersionRecord } from '../../src/fs/records.js';

const h = (s: string) => createHash('sha256').update(s).digest('hex');

async function writeOldLayout(dir: string): Promise<void> {
  const store = new LmdbStore(dir);
  const entries = store.table<EntryRecord>('entries');
  const versions = store.table<VersionRecord>('versions');
  const refs = store.table<number>('refs');
  const row = (version: number, text: string, modified: number, source = 'write'): VersionRecord => ({
    version, etag: h(text), size: text.length, chunks: [h(text)], modified, contentType: 'text/plain', source,
  });
  await store.transact(() => {
    entries.put(entryKey('/docs'), { kind: 'dir', created: 1000, modified: 1000 } as EntryRecord);
    entries.put(entryKey('/docs/a.txt'), {
      kind: 'file', version: 2, etag: h('two'), size: 3, chunks: [h('two')], contentType: 'text/plain', created: 1000, modified: 4000,
    });
    versions.put(versionKey('/docs/a.txt', 1), row(1, 'one', 1000));
    versions.put(versionKey('/docs/a.txt', 2), row(2, 'two', 4000));
    entries.put(entryKey('/docs/b.txt'), {
      kind: 'file', version: 1, etag: h('one'), size: 3, chunks: [h('one')], contentType: 'text/plain', created: 2000, modified: 2000,
    });
    versions.put(versionKey('/docs/b.txt', 1), row(1, 'one', 2000));
    store.blobs.put(h('one'), Buffer.from('one'));
    store.blobs.put(h('two'), Buffer.from('two'));
    refs.put(h('one'), 2);
    refs.put(h('two'), 1);
  });
  await store.close();
}

t.test('a daemon started on an earlier-layout data directory upgrades it and serves it', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await writeOldLayout(dir);
  const d = await startDaemon({ dataDir: dir }, t);

  t.same(await d.call('list', { path: '/docs' }), ['/docs/a.txt', '/docs/b.txt']);
  t.equal(unbytes(await d.call('read', { path: '/docs/a.txt' })).toString(), 'two');
  t.same((await d.call('list_versions', { path: '/docs/a.txt' })).map((v: { version: number }) => v.version), [2, 1]);
  t.equal(unbytes(await d.call('get_version', { path: '/docs/a.txt', version: 1 })).toString(), 'one');
  t.same((await d.call('list_versions', { path: '/docs/b.txt' })).map((v: { version: number }) => v.version), [1]);

  await d.call('write', { path: '/docs/a.txt', content: bytes('three') });
  t.same((await d.call('list_versions', { path: '/docs/a.txt' })).map((v: { version: number }) => v.version), [3, 2, 1]);
  await d.call('rollback', { path: '/docs/a.txt', version: 1 });
  t.equal(unbytes(await d.call('read', { path: '/docs/a.txt' })).toString(), 'one');

  // The shared chunk 'one' (b.txt v1, a.txt v1 and now v4) outlives b.txt's deletion; everything goes with a.txt.
  await d.call('delete', { path: '/docs/b.txt' });
  t.equal(unbytes(await d.call('get_version', { path: '/docs/a.txt', version: 1 })).toString(), 'one');
  await d.call('delete', { path: '/docs/a.txt' });
  await d.stop();

  const store = new LmdbStore(dir);
  t.teardown(() => store.close());
  t.same([...store.blobs.hashes()], [], 'every chunk freed once its last user is gone');
  t.same([...store.table('refs').range({})], [], 'no reference rows left');
  t.equal(store.table<number>('fs_meta').get('layout'), 4, 'marked as upgraded (layout 4: small content may be inline, chunks in pieces)');
});
