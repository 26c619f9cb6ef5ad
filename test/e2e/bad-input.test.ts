// Hostile paths (-32002) and malformed parameters (-32602) never reach the store (WIRE.md "Paths", "Envelope").
import t from 'tap';
import { startDaemon, bytes } from '../helpers/daemon.js';

const HOSTILE: [string, string][] = [
  ['.. segment', '/a/../etc/passwd'],
  ['leading ..', '../outside.txt'],
  ['. segment', '/a/./b.txt'],
  ['NUL', '/a\u0000b.txt'],
  ['newline', '/a\nb.txt'],
  ['tab', '/a\tb.txt'],
  ['escape', '/a\u001bb.txt'],
  ['DEL', '/a\u007fb.txt'],
  ['10,000-char name', '/' + 'x'.repeat(10_000)],
  ['leading space in a component', '/dir/ name.txt'],
  ['trailing space in a component', '/dir /name.txt'],
  ['empty', ''],
  ['whitespace only', '   '],
];

t.test('bad input', async (t) => {
  const d = await startDaemon({}, t);
  await d.call('write', { path: '/ok/file.txt', content: bytes('ok') });

  t.test('hostile paths are -32002 for every path-taking operation', async (t) => {
    for (const [label, path] of HOSTILE) {
      const calls: [string, Record<string, unknown>][] = [
        ['write', { path, content: bytes('x') }],
        ['read', { path }],
        ['delete', { path }],
        ['exists', { path }],
        ['is_directory', { path }],
        ['get_metadata', { path }],
        ['mkdir', { path, parents: true }],
        ['rmdir', { path }],
        ['list', { path }],
        ['rename', { old_path: '/ok/file.txt', new_path: path }],
        ['rename', { old_path: path, new_path: '/ok/other.txt' }],
        ['list_versions', { path }],
        ['glob', { pattern: '*', path }],
        ['grep', { pattern: 'x', path }],
      ];
      for (const [method, params] of calls) {
        const env = await d.rpc(method, params);
        t.equal(env.error?.code, -32002, `${method} ${label}: ${env.error?.message ?? 'no error'}`);
      }
    }
    t.same(await d.call('list', { path: '/' }), ['/ok/', '/ok/file.txt'], 'nothing was created');
  });

  t.test('names up to 255 bytes and paths up to 4096 bytes are fine; longer is -32002', async (t) => {
    const name255 = 'n'.repeat(255);
    t.equal((await d.call('write', { path: `/long/${name255}`, content: bytes('x') })).version, 1);
    t.equal((await d.rpc('write', { path: `/long/${name255}n`, content: bytes('x') })).error?.code, -32002);
    const twoByte = '\u00e9'.repeat(128); // 256 bytes in UTF-8, 128 characters
    t.equal((await d.rpc('write', { path: `/long/${twoByte}`, content: bytes('x') })).error?.code, -32002, 'bytes, not characters');
    const deep = '/long' + `/${'d'.repeat(200)}`.repeat(21); // 4205 bytes
    t.equal((await d.rpc('write', { path: deep, content: bytes('x') })).error?.code, -32002);
    await d.call('rmdir', { path: '/long', recursive: true });
  });

  t.test('the root is not a file', async (t) => {
    for (const [method, params] of [
      ['write', { path: '/', content: bytes('x') }],
      ['read', { path: '/' }],
      ['delete', { path: '/' }],
      ['rmdir', { path: '/' }],
    ] as const) {
      const env = await d.rpc(method, params);
      t.equal(env.error?.code, -32002, method);
    }
  });

  t.test('an unknown parameter is -32602 naming it', async (t) => {
    const env = await d.rpc('read', { path: '/ok/file.txt', bogus: 1 });
    t.equal(env.error?.code, -32602);
    t.match(env.error?.message, /bogus/);
    t.same(env.error?.data, { param: 'bogus' });
  });

  t.test('a missing required parameter is -32602 naming it', async (t) => {
    const env = await d.rpc('write', { path: '/ok/x.txt' });
    t.equal(env.error?.code, -32602);
    t.match(env.error?.message, /content/);
    t.same(env.error?.data, { param: 'content' });
  });

  t.test('a wrong type is -32602 naming the parameter', async (t) => {
    for (const [method, params, param] of [
      ['read', { path: 42 }, 'path'],
      ['read', { path: '/ok/file.txt', return_metadata: 'yes' }, 'return_metadata'],
      ['list', { recursive: 1 }, 'recursive'],
      ['grep', { pattern: 'x', max_results: 'ten' }, 'max_results'],
      ['grep', { pattern: 'x', max_results: 1.5 }, 'max_results'],
      ['get_version', { path: '/ok/file.txt', version: '1' }, 'version'],
      ['write', { path: '/ok/file.txt', content: bytes('x'), if_none_match: 'true' }, 'if_none_match'],
    ] as const) {
      const env = await d.rpc(method, params as Record<string, unknown>);
      t.equal(env.error?.code, -32602, `${method}.${param}`);
      t.same(env.error?.data, { param }, `${method} names ${param}`);
    }
  });

  t.test('a bare string for bytes is -32602 saying strings must be encoded', async (t) => {
    const env = await d.rpc('write', { path: '/ok/s.txt', content: 'aGVsbG8=' });
    t.equal(env.error?.code, -32602);
    t.match(env.error?.message, /encoded/i);
    t.match(env.error?.message, /__type__/, 'shows the bytes form');
    t.same(await d.call('exists', { path: '/ok/s.txt' }), { exists: false });
  });

  t.test('invalid base64 in a bytes object is -32602', async (t) => {
    for (const data of ['not base64!', 'abc', '====', 'YW Jj']) {
      const env = await d.rpc('write', { path: '/ok/b.txt', content: { __type__: 'bytes', data } });
      t.equal(env.error?.code, -32602, JSON.stringify(data));
    }
    for (const content of [{ __type__: 'bytes' }, { data: 'aGk=' }, 12, null, ['a']]) {
      const env = await d.rpc('write', { path: '/ok/b.txt', content });
      t.equal(env.error?.code, -32602, JSON.stringify(content));
    }
    t.same(await d.call('exists', { path: '/ok/b.txt' }), { exists: false });
  });

  t.test('an invalid regex is -32602', async (t) => {
    const env = await d.rpc('grep', { pattern: '(unclosed' });
    t.equal(env.error?.code, -32602);
    t.same(env.error?.data, { param: 'pattern' });
  });

  t.test('a regex that backtracks without end is stopped with -32602; the daemon keeps serving meanwhile', async (t) => {
    await d.call('write', { path: '/redos/a.txt', content: bytes('a'.repeat(40) + '!\n') });
    // Case-insensitive: V8's linear-time fallback does not take it, so only the worker's stall budget ends it.
    const grep = d.rpc('grep', { pattern: '(a+)+$', ignore_case: true, path: '/redos' });
    for (let i = 0; i < 3; i++) {
      t.same(await d.call('read', { path: '/ok/file.txt' }), bytes('ok'), 'reads are answered while the grep runs');
    }
    const env = await grep;
    t.equal(env.error?.code, -32602);
    t.same(env.error?.data, { param: 'pattern' });
    t.match(env.error?.message, /backtracks/);
    t.same(await d.call('grep', { pattern: '(a+)+$', path: '/redos' }), [], 'the case-sensitive form ends at once (linear engine)');
    t.same(await d.call('grep', { pattern: 'a!', path: '/redos' }), [{ file: '/redos/a.txt', line: 1, content: 'a'.repeat(40) + '!', match: 'a!' }]);
  });

  t.test('a bad diff mode is -32602', async (t) => {
    await d.call('write', { path: '/ok/file.txt', content: bytes('v2') });
    const env = await d.rpc('diff_versions', { path: '/ok/file.txt', v1: 1, v2: 2, mode: 'sideways' });
    t.equal(env.error?.code, -32602);
    t.match(env.error?.message, /sideways/);
    t.same(env.error?.data, { param: 'mode' });
  });

  t.test('version numbers must be positive integers', async (t) => {
    for (const version of [0, -1, 1.5]) {
      const env = await d.rpc('get_version', { path: '/ok/file.txt', version });
      t.equal(env.error?.code, -32602, String(version));
    }
  });

  t.test('hostile patterns and prefixes are answered, never -32603', async (t) => {
    // Patterns are not paths: what cannot name a stored path matches nothing.
    const long = 'x'.repeat(10_000);
    const cases: [string, string, Record<string, unknown>, unknown][] = [
      ['glob: a 10,000-char literal pattern', 'glob', { pattern: long }, []],
      ['glob: a 10,000-char pattern below a directory', 'glob', { pattern: `ok/${long}`, path: '/' }, []],
      ['glob: a literal base longer than a path may be', 'glob', { pattern: `${'d'.repeat(200)}/`.repeat(25) + '*' }, []],
      ['glob: a literal base with ..', 'glob', { pattern: 'ok/../ok/*' }, []],
      ['glob: a literal base with a control character', 'glob', { pattern: 'ok\u0001/*' }, []],
      ['glob: thousands of stars', 'glob', { pattern: '*'.repeat(5000) + 'x' }, []],
      ['glob: many alternatives', 'glob', { pattern: '{a,b}'.repeat(40) }, []],
      ['grep: a 10,000-char file_pattern', 'grep', { pattern: 'ok', file_pattern: long }, []],
      ['grep: a deep file_pattern', 'grep', { pattern: 'ok', file_pattern: 'a/'.repeat(3000) + '*' }, []],
      ['list: a 10,000-char prefix', 'list', { prefix: long }, []],
      ['list: a prefix with NUL', 'list', { prefix: '/ok\u0000' }, []],
    ];
    for (const [label, method, params, expected] of cases) {
      const env = await d.rpc(method, params);
      t.same(env.result, expected, `${label}: ${env.error ? `${env.error.code} ${env.error.message}` : 'answered'}`);
    }
    t.same(await d.call('glob', { pattern: 'ok/*' }), ['/ok/file.txt'], 'an ordinary pattern still matches');
  });

  t.test('the daemon still serves after all that', async (t) => {
    t.equal((await d.raw('/health')).status, 200);
    t.same(await d.call('exists', { path: '/ok/file.txt' }), { exists: true });
  });
});
