// File operations over HTTP (spec §4.3, WIRE.md "Results the spec leaves open").
import t from 'tap';
import { createHash } from 'node:crypto';
import { startDaemon, bytes, unbytes } from '../helpers/daemon.js';

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('file operations', async (t) => {
  const d = await startDaemon({}, t);

  t.test('write answers {etag, version, size, modified_at}; etag is the SHA-256 of the content', async (t) => {
    const r = await d.call('write', { path: '/docs/hello.txt', content: bytes('hello world') });
    t.same(Object.keys(r).sort(), ['etag', 'modified_at', 'size', 'version']);
    t.equal(r.etag, sha('hello world'));
    t.match(r.etag, /^[0-9a-f]{64}$/);
    t.equal(r.version, 1);
    t.equal(r.size, 11);
    t.match(r.modified_at, ISO);
  });

  t.test('read without metadata is a bytes object with the content', async (t) => {
    const r = await d.call('read', { path: '/docs/hello.txt' });
    t.same(Object.keys(r).sort(), ['__type__', 'data']);
    t.equal(unbytes(r).toString(), 'hello world');
  });

  t.test('read with return_metadata is {content, encoding, metadata}', async (t) => {
    const r = await d.call('read', { path: '/docs/hello.txt', return_metadata: true });
    t.same(Object.keys(r).sort(), ['content', 'encoding', 'metadata']);
    t.equal(r.encoding, 'base64');
    t.equal(Buffer.from(r.content, 'base64').toString(), 'hello world');
    t.match(r.metadata, { size: 11, etag: sha('hello world'), version: 1, modified_at: ISO, content_type: 'text/plain' });
  });

  t.test('binary content round-trips byte for byte', async (t) => {
    const data = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const w = await d.call('write', { path: '/bin/all-bytes.dat', content: bytes(data) });
    t.equal(w.etag, sha(data));
    t.same(unbytes(await d.call('read', { path: '/bin/all-bytes.dat' })), data);
  });

  t.test('an empty file is a file of size 0', async (t) => {
    const w = await d.call('write', { path: '/empty.txt', content: bytes('') });
    t.equal(w.size, 0);
    t.equal(w.etag, sha(''));
    t.equal(unbytes(await d.call('read', { path: '/empty.txt' })).length, 0);
  });

  t.test('paths are normalised: trimmed, leading slash added, // collapsed, trailing / dropped', async (t) => {
    await d.call('write', { path: ' norm//a.txt/ ', content: bytes('n') });
    t.same(await d.call('exists', { path: '/norm/a.txt' }), { exists: true });
    t.equal(unbytes(await d.call('read', { path: 'norm/a.txt' })).toString(), 'n');
  });

  t.test('unicode names are kept as given', async (t) => {
    const nfd = '/uni/cafe\u0301.txt';
    const nfc = '/uni/caf\u00e9.txt';
    await d.call('write', { path: nfd, content: bytes('decomposed') });
    t.same(await d.call('exists', { path: nfd }), { exists: true });
    t.same(await d.call('exists', { path: nfc }), { exists: false });
    t.same(await d.call('list', { path: '/uni' }), [nfd]);
  });

  t.test('every write is a new version, even with identical content; created_at is kept', async (t) => {
    const before = await d.call('get_metadata', { path: '/docs/hello.txt' });
    const w = await d.call('write', { path: '/docs/hello.txt', content: bytes('hello world') });
    t.equal(w.version, 2);
    t.equal(w.etag, sha('hello world'));
    const after = await d.call('get_metadata', { path: '/docs/hello.txt' });
    t.equal(after.created_at, before.created_at);
    t.equal(after.version, 2);
  });

  t.test('write creates missing parent directories', async (t) => {
    await d.call('write', { path: '/deep/a/b/c/file.txt', content: bytes('x') });
    for (const dir of ['/deep', '/deep/a', '/deep/a/b', '/deep/a/b/c']) {
      t.same(await d.call('is_directory', { path: dir }), { is_directory: true }, dir);
    }
    t.same(await d.call('is_directory', { path: '/deep/a/b/c/file.txt' }), { is_directory: false });
  });

  t.test('if_none_match is create-only: -32001 on an existing file', async (t) => {
    const created = await d.call('write', { path: '/once.txt', content: bytes('1'), if_none_match: true });
    t.equal(created.version, 1);
    await t.rejects(d.call('write', { path: '/once.txt', content: bytes('2'), if_none_match: true }), { code: -32001 });
    t.equal(unbytes(await d.call('read', { path: '/once.txt' })).toString(), '1');
  });

  t.test('if_match: the current etag wins, another is -32006 with {path, expected_etag, current_etag}', async (t) => {
    const v1 = await d.call('write', { path: '/cas.txt', content: bytes('one') });
    const v2 = await d.call('write', { path: '/cas.txt', content: bytes('two'), if_match: v1.etag });
    t.equal(v2.version, 2);
    const env = await d.rpc('write', { path: '/cas.txt', content: bytes('three'), if_match: v1.etag });
    t.equal(env.error?.code, -32006);
    t.same(env.error?.data, { path: '/cas.txt', expected_etag: v1.etag, current_etag: v2.etag });
    t.equal(unbytes(await d.call('read', { path: '/cas.txt' })).toString(), 'two');
  });

  t.test('if_match on a missing file is -32006 with current_etag null', async (t) => {
    const env = await d.rpc('write', { path: '/nope/cas.txt', content: bytes('x'), if_match: sha('x') });
    t.equal(env.error?.code, -32006);
    t.same(env.error?.data, { path: '/nope/cas.txt', expected_etag: sha('x'), current_etag: null });
    t.same(await d.call('exists', { path: '/nope/cas.txt' }), { exists: false });
    t.same(await d.call('exists', { path: '/nope' }), { exists: false }, 'a refused write creates no parents');
  });

  t.test('force skips the version checks', async (t) => {
    const w = await d.call('write', { path: '/cas.txt', content: bytes('forced'), if_match: 'stale', force: true });
    t.equal(w.version, 3);
    const w2 = await d.call('write', { path: '/cas.txt', content: bytes('forced2'), if_none_match: true, force: true });
    t.equal(w2.version, 4);
  });

  t.test('exists and is_directory never fail on a missing path', async (t) => {
    t.same(await d.call('exists', { path: '/missing/thing' }), { exists: false });
    t.same(await d.call('is_directory', { path: '/missing/thing' }), { is_directory: false });
    t.same(await d.call('exists', { path: '/docs' }), { exists: true });
    t.same(await d.call('exists', { path: '/' }), { exists: true });
    t.same(await d.call('is_directory', { path: '/' }), { is_directory: true });
  });

  t.test('get_metadata is the file record, or null when absent', async (t) => {
    const m = await d.call('get_metadata', { path: '/docs/hello.txt' });
    t.match(m, {
      path: '/docs/hello.txt', size: 11, etag: sha('hello world'), version: 2,
      created_at: ISO, modified_at: ISO, content_type: 'text/plain',
    });
    t.equal(await d.call('get_metadata', { path: '/docs/missing.txt' }), null);
    const dir = await d.call('get_metadata', { path: '/docs' });
    t.match(dir, { path: '/docs', is_directory: true });
  });

  t.test('delete answers {success:true} and removes the file', async (t) => {
    await d.call('write', { path: '/del/me.txt', content: bytes('bye') });
    t.same(await d.call('delete', { path: '/del/me.txt' }), { success: true });
    t.same(await d.call('exists', { path: '/del/me.txt' }), { exists: false });
    t.same(await d.call('is_directory', { path: '/del' }), { is_directory: true }, 'the parent stays');
    await t.rejects(d.call('read', { path: '/del/me.txt' }), { code: -32000 });
  });

  t.test('a file written again after delete starts a fresh history', async (t) => {
    await d.call('write', { path: '/del/again.txt', content: bytes('1') });
    await d.call('write', { path: '/del/again.txt', content: bytes('2') });
    await d.call('delete', { path: '/del/again.txt' });
    const w = await d.call('write', { path: '/del/again.txt', content: bytes('3') });
    t.equal(w.version, 1);
    t.equal((await d.call('list_versions', { path: '/del/again.txt' })).length, 1);
  });

  t.test('rename answers {success:true} and moves the file with its content', async (t) => {
    const w = await d.call('write', { path: '/mv/src.txt', content: bytes('moving') });
    t.same(await d.call('rename', { old_path: '/mv/src.txt', new_path: '/mv/sub/dst.txt' }), { success: true });
    t.same(await d.call('exists', { path: '/mv/src.txt' }), { exists: false });
    const r = await d.call('read', { path: '/mv/sub/dst.txt', return_metadata: true });
    t.equal(Buffer.from(r.content, 'base64').toString(), 'moving');
    t.equal(r.metadata.etag, w.etag);
  });

  t.test('missing things are -32000', async (t) => {
    for (const [method, params] of [
      ['read', { path: '/missing.txt' }],
      ['delete', { path: '/missing.txt' }],
      ['rename', { old_path: '/missing.txt', new_path: '/elsewhere.txt' }],
      ['list_versions', { path: '/missing.txt' }],
    ] as const) {
      const env = await d.rpc(method, params);
      t.equal(env.error?.code, -32000, method);
      t.match(env.error?.data, { path: '/missing.txt' }, `${method} names the path`);
    }
  });

  t.test('rename onto an existing path is -32001 and changes nothing', async (t) => {
    await d.call('write', { path: '/clash/a.txt', content: bytes('a') });
    await d.call('write', { path: '/clash/b.txt', content: bytes('b') });
    await t.rejects(d.call('rename', { old_path: '/clash/a.txt', new_path: '/clash/b.txt' }), { code: -32001 });
    t.equal(unbytes(await d.call('read', { path: '/clash/a.txt' })).toString(), 'a');
    t.equal(unbytes(await d.call('read', { path: '/clash/b.txt' })).toString(), 'b');
  });

  t.test('writing onto a directory is -32005', async (t) => {
    await d.call('mkdir', { path: '/adir' });
    await t.rejects(d.call('write', { path: '/adir', content: bytes('x') }), { code: -32005 });
    t.same(await d.call('is_directory', { path: '/adir' }), { is_directory: true });
  });

  t.test('reading a directory is -32005', async (t) => {
    await t.rejects(d.call('read', { path: '/docs' }), { code: -32005 });
  });

  t.test('renaming a file onto itself is a no-op', async (t) => {
    t.same(await d.call('rename', { old_path: '/docs/hello.txt', new_path: '/docs//hello.txt/' }), { success: true });
    t.equal(unbytes(await d.call('read', { path: '/docs/hello.txt' })).toString(), 'hello world');
  });

  t.test('writing below a file is refused and leaves no trace', async (t) => {
    await d.call('write', { path: '/plain.txt', content: bytes('x') });
    const env = await d.rpc('write', { path: '/plain.txt/child.txt', content: bytes('y') });
    t.ok(env.error, 'refused');
    t.not(env.error?.code, -32603, 'not an internal error');
    t.equal(unbytes(await d.call('read', { path: '/plain.txt' })).toString(), 'x');
  });
});
