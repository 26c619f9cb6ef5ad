// File versions over HTTP (spec §4.12, §9; WIRE.md "Versions").
import t from 'tap';
import { createHash } from 'node:crypto';
import { startDaemon, bytes, unbytes } from '../helpers/daemon.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('versions', async (t) => {
  const d = await startDaemon({}, t);
  const P = '/v/doc.txt';
  await d.call('write', { path: P, content: bytes('line one\nline two\n') });
  await d.call('write', { path: P, content: bytes('line one\nline 2\nline three\n') });
  await d.call('write', { path: P, content: bytes('line one\nline 2\nline three\n') }); // identical content

  t.test('every write is a new version, identical content included; list is newest first', async (t) => {
    const list = await d.call('list_versions', { path: P });
    t.same(list.map((v: { version: number }) => v.version), [3, 2, 1]);
    for (const v of list) t.match(v, { version: Number, etag: /^[0-9a-f]{64}$/, size: Number, modified_at: ISO });
    t.equal(list[0].etag, list[1].etag, 'identical content, identical etag');
    t.equal(list[2].etag, sha('line one\nline two\n'));
    t.equal(list[2].size, 18);
  });

  t.test('get_version answers the bytes of that version', async (t) => {
    const v1 = await d.call('get_version', { path: P, version: 1 });
    t.same(Object.keys(v1).sort(), ['__type__', 'data']);
    t.equal(unbytes(v1).toString(), 'line one\nline two\n');
    t.equal(unbytes(await d.call('get_version', { path: P, version: 3 })).toString(), 'line one\nline 2\nline three\n');
  });

  t.test('a missing version or file is -32000', async (t) => {
    const env = await d.rpc('get_version', { path: P, version: 99 });
    t.equal(env.error?.code, -32000);
    t.match(env.error?.data, { path: P });
    await t.rejects(d.call('get_version', { path: '/v/none.txt', version: 1 }), { code: -32000 });
    await t.rejects(d.call('rollback', { path: P, version: 99 }), { code: -32000 });
    await t.rejects(d.call('diff_versions', { path: P, v1: 1, v2: 99 }), { code: -32000 });
  });

  t.test('diff_versions metadata mode (the default)', async (t) => {
    const m = await d.call('diff_versions', { path: P, v1: 1, v2: 2 });
    t.same(m, {
      path: P, v1: 1, v2: 2, etag_v1: sha('line one\nline two\n'), etag_v2: sha('line one\nline 2\nline three\n'),
      size_v1: 18, size_v2: 27, content_changed: true,
    });
    const same = await d.call('diff_versions', { path: P, v1: 2, v2: 3, mode: 'metadata' });
    t.equal(same.content_changed, false);
  });

  t.test('diff_versions content mode is a unified diff string', async (t) => {
    const diff = await d.call('diff_versions', { path: P, v1: 1, v2: 2, mode: 'content' });
    t.type(diff, 'string');
    t.match(diff, /^--- .*\n\+\+\+ .*\n/m);
    t.match(diff, /^@@ -1,2 \+1,3 @@$/m);
    t.match(diff, /^-line two$/m);
    t.match(diff, /^\+line 2$/m);
    t.match(diff, /^\+line three$/m);
    t.match(diff, /^ line one$/m);
  });

  t.test('rollback writes a new version with the old content; history is kept', async (t) => {
    const r = await d.call('rollback', { path: P, version: 1 });
    t.same(r, { success: true, version: 4, etag: sha('line one\nline two\n') });
    t.equal(unbytes(await d.call('read', { path: P })).toString(), 'line one\nline two\n');
    const list = await d.call('list_versions', { path: P });
    t.same(list.map((v: { version: number }) => v.version), [4, 3, 2, 1]);
    t.equal(list[0].etag, list[3].etag);
    t.equal(unbytes(await d.call('get_version', { path: P, version: 2 })).toString(), 'line one\nline 2\nline three\n', 'v2 untouched');
    const meta = await d.call('get_metadata', { path: P });
    t.match(meta, { version: 4, etag: sha('line one\nline two\n'), size: 18 });
    const next = await d.call('write', { path: P, content: bytes('after rollback') });
    t.equal(next.version, 5);
  });

  t.test('if_match works against the rolled-back etag', async (t) => {
    await d.call('rollback', { path: P, version: 2 });
    const env = await d.rpc('write', { path: P, content: bytes('x'), if_match: sha('after rollback') });
    t.equal(env.error?.code, -32006);
    t.equal(env.error?.data?.current_etag, sha('line one\nline 2\nline three\n'));
  });

  t.test('versions of a renamed file follow it', async (t) => {
    await d.call('rename', { old_path: P, new_path: '/v/moved.txt' });
    const list = await d.call('list_versions', { path: '/v/moved.txt' });
    t.same(list.map((v: { version: number }) => v.version), [6, 5, 4, 3, 2, 1]);
    t.equal(unbytes(await d.call('get_version', { path: '/v/moved.txt', version: 1 })).toString(), 'line one\nline two\n');
    await t.rejects(d.call('get_version', { path: P, version: 1 }), { code: -32000 });
  });

  t.test('versions of a large (multi-chunk) file', async (t) => {
    const big1 = Buffer.alloc(2.5 * 1024 * 1024, 'a');
    const big2 = Buffer.concat([big1, Buffer.from('tail')]);
    await d.call('write', { path: '/v/big.bin', content: bytes(big1) });
    await d.call('write', { path: '/v/big.bin', content: bytes(big2) });
    t.same(unbytes(await d.call('get_version', { path: '/v/big.bin', version: 1 })), big1);
    t.same(unbytes(await d.call('read', { path: '/v/big.bin' })), big2);
    await d.call('rollback', { path: '/v/big.bin', version: 1 });
    t.same(unbytes(await d.call('read', { path: '/v/big.bin' })), big1);
    await d.call('delete', { path: '/v/big.bin' });
    await t.rejects(d.call('list_versions', { path: '/v/big.bin' }), { code: -32000 });
  });
});
