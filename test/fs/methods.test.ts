import t from 'tap';
import { fsMethods } from '../../src/fs/methods.js';
import { buildTable, parseParams } from '../../src/core/method.js';
import { anonymousContext } from '../../src/core/context.js';
import { encodeValue } from '../../src/core/wire.js';
import { makeFs, sha256 } from './fixture.js';
import { bytes } from '../helpers/daemon.js';

/** Call a method the way a transport does: validate raw params, run, encode the result. */
function caller(t: Parameters<typeof makeFs>[0]) {
  const fx = makeFs(t);
  const table = buildTable(fsMethods(fx.fs));
  const ctx = anonymousContext('test');
  const call = async (name: string, params: unknown) => {
    const m = table[name];
    if (!m) throw new Error(`no method ${name}`);
    return encodeValue(await m.handler(parseParams(m, params), ctx));
  };
  return { fx, table, call };
}


t.test('the fs table has the spec §4.3 / §4.4 / §4.12 methods', async (t) => {
  const { table } = caller(t);
  t.same(Object.keys(table).sort(), [
    'delete', 'diff_versions', 'exists', 'get_metadata', 'get_version', 'glob', 'grep', 'is_directory', 'list',
    'list_versions', 'mkdir', 'read', 'rename', 'rmdir', 'rollback', 'write',
  ]);
});

t.test('write and read shapes on the wire', async (t) => {
  const { call } = caller(t);
  const w = await call('write', { path: '/w/a.txt', content: bytes('hello') }) as Record<string, unknown>;
  t.same(Object.keys(w).sort(), ['etag', 'modified_at', 'size', 'version']);
  t.equal(w.etag, sha256('hello'));
  t.match(w.modified_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.same(await call('read', { path: '/w/a.txt' }), bytes('hello'), 'read without metadata is a bytes object');
  const withMeta = await call('read', { path: '/w/a.txt', return_metadata: true }) as Record<string, unknown>;
  t.same(withMeta, {
    content: Buffer.from('hello').toString('base64'), encoding: 'base64',
    metadata: { size: 5, etag: sha256('hello'), version: 1, modified_at: w.modified_at, content_type: 'text/plain' },
  });
});

t.test('write refuses a bare string with the spec text', async (t) => {
  const { call } = caller(t);
  await t.rejects(call('write', { path: '/x', content: 'aGVsbG8=' }), { code: -32602, message: /encoded before hashing/ });
  await t.rejects(call('write', { path: '/x' }), { code: -32602, data: { param: 'content' } });
});

t.test('methods that return nothing answer {success:true}; lookups never fail on absence', async (t) => {
  const { call } = caller(t);
  await call('write', { path: '/s/f.txt', content: bytes('x') });
  t.same(await call('mkdir', { path: '/s/d' }), { success: true });
  t.same(await call('rename', { old_path: '/s/f.txt', new_path: '/s/g.txt' }), { success: true });
  t.same(await call('delete', { path: '/s/g.txt' }), { success: true });
  t.same(await call('rmdir', { path: '/s', recursive: true }), { success: true });
  t.same(await call('exists', { path: '/s' }), { exists: false });
  t.same(await call('is_directory', { path: '/s' }), { is_directory: false });
  t.equal(await call('get_metadata', { path: '/s' }), null);
});

t.test('list: strings by default, entries with details', async (t) => {
  const { call } = caller(t);
  await call('write', { path: '/l/a.txt', content: bytes('a') });
  t.same(await call('list', {}), ['/l/', '/l/a.txt']);
  t.same(await call('list', { path: '/', recursive: false }), ['/l/']);
  const details = await call('list', { path: '/l', details: true }) as Record<string, unknown>[];
  t.match(details, [{ path: '/l/a.txt', is_directory: false, size: 1, etag: sha256('a') }]);
  t.type(details[0]!.modified_at, 'string', 'datetimes as ISO strings');
});

t.test('grep defaults and glob', async (t) => {
  const { call } = caller(t);
  await call('write', { path: '/g/a.txt', content: bytes('find me\n') });
  t.same(await call('grep', { pattern: 'find' }), [{ file: '/g/a.txt', line: 1, content: 'find me', match: 'find' }]);
  t.same(await call('glob', { pattern: '**/*.txt' }), ['/g/a.txt']);
  await t.rejects(call('grep', { pattern: '[' }), { code: -32602, data: { param: 'pattern' } });
  await t.rejects(call('grep', { pattern: 'x', max_results: 0 }), { code: -32602, data: { param: 'max_results' } });
});

t.test('versions on the wire', async (t) => {
  const { call } = caller(t);
  await call('write', { path: '/v.txt', content: bytes('one\n') });
  await call('write', { path: '/v.txt', content: bytes('two\n') });
  t.same(await call('get_version', { path: '/v.txt', version: 1 }), bytes('one\n'));
  t.match(await call('list_versions', { path: '/v.txt' }), [{ version: 2 }, { version: 1 }]);
  t.same(await call('rollback', { path: '/v.txt', version: 1 }), { success: true, version: 3, etag: sha256('one\n') });
  t.match(await call('diff_versions', { path: '/v.txt', v1: 1, v2: 2 }), { content_changed: true });
  t.match(await call('diff_versions', { path: '/v.txt', v1: 1, v2: 2, mode: 'content' }), /\+two/);
  await t.rejects(call('diff_versions', { path: '/v.txt', v1: 1, v2: 2, mode: 'words' }), {
    code: -32602, message: /Invalid mode: words\. Must be 'metadata' or 'content'/, data: { param: 'mode' },
  });
  await t.rejects(call('get_version', { path: '/v.txt', version: 0 }), { code: -32602, data: { param: 'version' } });
});

t.test('write with if_match / if_none_match / force through params', async (t) => {
  const { call } = caller(t);
  const w = await call('write', { path: '/o.txt', content: bytes('1'), if_none_match: true }) as { etag: string };
  await t.rejects(call('write', { path: '/o.txt', content: bytes('2'), if_none_match: true }), { code: -32001 });
  await t.rejects(call('write', { path: '/o.txt', content: bytes('2'), if_match: 'stale' }), {
    code: -32006, data: { path: '/o.txt', expected_etag: 'stale', current_etag: w.etag },
  });
  t.match(await call('write', { path: '/o.txt', content: bytes('2'), if_match: 'stale', force: true }), { version: 2 });
});
