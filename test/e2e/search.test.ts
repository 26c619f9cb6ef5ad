// glob and grep over HTTP (spec §4.4, WIRE.md "Results the spec leaves open": glob syntax, grep shape).
// Runs the daemon in process: nothing here needs a separate process.
import t from 'tap';
import { startDaemon, bytes } from '../helpers/daemon.js';

const MiB = 1024 * 1024;

t.test('search', async (t) => {
  const d = await startDaemon({ inProcess: true }, t);
  const files: Record<string, string> = {
    '/repo/README.md': '# Title\nSome text\n',
    '/repo/notes.txt': 'alpha\nbeta\n',
    '/repo/a.txt': 'a\n',
    '/repo/b.txt': 'b\n',
    '/repo/c.txt': 'c\n',
    '/repo/src/index.ts': 'export const TODO = 1;\n// todo: lower\nconst x = "TODO TODO";\n',
    '/repo/src/util.ts': 'function helper() {}\n// TODO: more\n',
    '/repo/src/lib/deep.ts': 'const deep = "TODO deep";\n',
    '/repo/src/lib/deep.js': 'var deep = "TODO js";\n',
    '/repo/test/index.test.ts': 'test("TODO")\n',
    '/repo/.hidden/secret.ts': 'TODO hidden\n',
    '/other/index.ts': 'TODO elsewhere\n',
    '/repo/crlf.txt': 'one\r\nTODO two\r\nthree\r\n',
  };
  for (const [path, content] of Object.entries(files)) await d.call('write', { path, content: bytes(content) });

  t.test('glob', async (t) => {
    t.test('* stays within one segment, relative to path', async (t) => {
      t.same(await d.call('glob', { pattern: '*.txt', path: '/repo' }), ['/repo/a.txt', '/repo/b.txt', '/repo/c.txt', '/repo/crlf.txt', '/repo/notes.txt']);
      t.same(await d.call('glob', { pattern: '*.ts', path: '/repo' }), [], 'no .ts directly in /repo');
      t.same(await d.call('glob', { pattern: 'src/*.ts', path: '/repo' }), ['/repo/src/index.ts', '/repo/src/util.ts']);
      t.same(await d.call('glob', { pattern: '*.ts', path: '/repo/src' }), ['/repo/src/index.ts', '/repo/src/util.ts']);
    });

    t.test('** spans segments', async (t) => {
      t.same(await d.call('glob', { pattern: '**/*.ts', path: '/repo' }), [
        '/repo/.hidden/secret.ts', '/repo/src/index.ts', '/repo/src/lib/deep.ts', '/repo/src/util.ts', '/repo/test/index.test.ts',
      ]);
      t.same(await d.call('glob', { pattern: 'src/**/*.ts', path: '/repo' }), ['/repo/src/index.ts', '/repo/src/lib/deep.ts', '/repo/src/util.ts']);
      t.same(await d.call('glob', { pattern: '**/index.ts' }), ['/other/index.ts', '/repo/src/index.ts'], 'path defaults to /');
    });

    t.test('{a,b}, [..] and ? work', async (t) => {
      t.same(await d.call('glob', { pattern: '{a,c}.txt', path: '/repo' }), ['/repo/a.txt', '/repo/c.txt']);
      t.same(await d.call('glob', { pattern: '[ab].txt', path: '/repo' }), ['/repo/a.txt', '/repo/b.txt']);
      t.same(await d.call('glob', { pattern: '[!ab].txt', path: '/repo' }), ['/repo/c.txt']);
      t.same(await d.call('glob', { pattern: '?.txt', path: '/repo' }), ['/repo/a.txt', '/repo/b.txt', '/repo/c.txt']);
      t.same(await d.call('glob', { pattern: 'src/lib/deep.{ts,js}', path: '/repo' }), ['/repo/src/lib/deep.js', '/repo/src/lib/deep.ts']);
    });

    t.test('an absolute pattern is taken relative to path when it lies inside it', async (t) => {
      t.same(await d.call('glob', { pattern: '/repo/src/*.ts' }), ['/repo/src/index.ts', '/repo/src/util.ts']);
      t.same(await d.call('glob', { pattern: '/repo/src/*.ts', path: '/repo' }), ['/repo/src/index.ts', '/repo/src/util.ts']);
      t.same(await d.call('glob', { pattern: '/other/*.ts', path: '/repo' }), [], 'nothing outside path');
    });

    t.test('directories match with a trailing /', async (t) => {
      t.same(await d.call('glob', { pattern: 's*', path: '/repo' }), ['/repo/src/']);
    });

    t.test('no match is an empty array; a missing path is -32000', async (t) => {
      t.same(await d.call('glob', { pattern: '*.rs', path: '/repo' }), []);
      t.same(await d.call('glob', { pattern: 'nothere/**', path: '/repo' }), []);
      await t.rejects(d.call('glob', { pattern: '*', path: '/nothere' }), { code: -32000 });
    });
  });

  t.test('grep', async (t) => {
    t.test('one {file, line, content, match} per matching line, 1-based, first match only', async (t) => {
      const r = await d.call('grep', { pattern: 'TODO', path: '/repo/src', file_pattern: 'index.ts' });
      t.same(r, [
        { file: '/repo/src/index.ts', line: 1, content: 'export const TODO = 1;', match: 'TODO' },
        { file: '/repo/src/index.ts', line: 3, content: 'const x = "TODO TODO";', match: 'TODO' },
      ]);
    });

    t.test('match is what the regex matched', async (t) => {
      const r = await d.call('grep', { pattern: 'TODO:? \\w+', path: '/repo/src/lib' });
      t.same(r.map((m: { match: string }) => m.match), ['TODO js', 'TODO deep']);
    });

    t.test('ignore_case', async (t) => {
      const sensitive = await d.call('grep', { pattern: 'todo', path: '/repo/src' });
      t.same(sensitive.map((m: { file: string; line: number }) => `${m.file}:${m.line}`), ['/repo/src/index.ts:2']);
      const insensitive = await d.call('grep', { pattern: 'todo', path: '/repo/src', ignore_case: true });
      t.equal(insensitive.length, 6);
      t.equal(insensitive[0].match, 'TODO');
    });

    t.test('file_pattern without / matches the base name at any depth', async (t) => {
      const r = await d.call('grep', { pattern: 'TODO', path: '/repo', file_pattern: '*.ts' });
      t.same([...new Set(r.map((m: { file: string }) => m.file))].sort(), [
        '/repo/.hidden/secret.ts', '/repo/src/index.ts', '/repo/src/lib/deep.ts', '/repo/src/util.ts', '/repo/test/index.test.ts',
      ]);
    });

    t.test('file_pattern with / matches the path relative to path', async (t) => {
      const r = await d.call('grep', { pattern: 'TODO', path: '/repo', file_pattern: 'src/*.ts' });
      t.same([...new Set(r.map((m: { file: string }) => m.file))].sort(), ['/repo/src/index.ts', '/repo/src/util.ts']);
      const deep = await d.call('grep', { pattern: 'TODO', path: '/repo', file_pattern: 'src/**/*.js' });
      t.same(deep.map((m: { file: string }) => m.file), ['/repo/src/lib/deep.js']);
    });

    t.test('path limits the search', async (t) => {
      const r = await d.call('grep', { pattern: 'elsewhere' });
      t.same(r.map((m: { file: string }) => m.file), ['/other/index.ts']);
      t.same(await d.call('grep', { pattern: 'elsewhere', path: '/repo' }), []);
    });

    t.test('max_results caps the answer', async (t) => {
      const all = await d.call('grep', { pattern: 'TODO' });
      t.ok(all.length > 3);
      const capped = await d.call('grep', { pattern: 'TODO', max_results: 3 });
      t.equal(capped.length, 3);
      t.same(capped, all.slice(0, 3), 'the first results, in the same order');
    });

    t.test('^ and $ anchor at each line, not at the whole file', async (t) => {
      t.same(await d.call('grep', { pattern: '^Some', path: '/repo' }), [
        { file: '/repo/README.md', line: 2, content: 'Some text', match: 'Some' },
      ]);
      t.same(await d.call('grep', { pattern: 'Title$', path: '/repo' }), [
        { file: '/repo/README.md', line: 1, content: '# Title', match: 'Title' },
      ]);
    });

    t.test('file_pattern brackets negate with !', async (t) => {
      const r = await d.call('grep', { pattern: '^[a-z]$', path: '/repo', file_pattern: '[!a].txt' });
      t.same(r.map((m: { file: string }) => m.file), ['/repo/b.txt', '/repo/c.txt']);
    });

    t.test('CRLF line ends are not part of content', async (t) => {
      t.same(await d.call('grep', { pattern: 'two$', path: '/repo', file_pattern: 'crlf.txt' }), [
        { file: '/repo/crlf.txt', line: 2, content: 'TODO two', match: 'two' },
      ]);
    });

    t.test('files that are not UTF-8 are skipped', async (t) => {
      await d.call('write', { path: '/bin/blob.dat', content: bytes(Buffer.from([0xff, 0xfe, 0x00, ...Buffer.from('\nneedle\n')])) });
      await d.call('write', { path: '/bin/text.txt', content: bytes('a needle here\n') });
      t.same(await d.call('grep', { pattern: 'needle', path: '/bin' }), [
        { file: '/bin/text.txt', line: 1, content: 'a needle here', match: 'needle' },
      ]);
    });

    t.test('files over 1 MiB: lines spanning the chunk boundary are found whole', async (t) => {
      // Fill to just before 1 MiB, then a line that straddles the boundary (split inside "NEEDLE"
      // and inside a two-byte character), then lines after it in the second chunk.
      const filler = 'filler line\n';
      const count = Math.floor((MiB - 8) / filler.length);
      const head = filler.repeat(count);
      const pad = 'x'.repeat(MiB - 3 - head.length); // "NEE" ends exactly at the boundary
      const straddle = `${pad}NEEDLE-é-across`;
      const content = Buffer.from(`${head}${straddle}\nafter the boundary\nlast NEEDLE line`);
      t.equal(content.subarray(MiB - 3, MiB).toString(), 'NEE', 'the match straddles the 1 MiB chunk boundary');
      t.ok(content.length > MiB);
      await d.call('write', { path: '/big/huge.log', content: bytes(content) });

      const r = await d.call('grep', { pattern: 'NEEDLE-.-across|NEEDLE line', path: '/big' });
      t.same(r, [
        { file: '/big/huge.log', line: count + 1, content: straddle, match: 'NEEDLE-é-across' },
        { file: '/big/huge.log', line: count + 3, content: 'last NEEDLE line', match: 'NEEDLE line' },
      ]);
      const after = await d.call('grep', { pattern: '^after', path: '/big' });
      t.same(after, [{ file: '/big/huge.log', line: count + 2, content: 'after the boundary', match: 'after' }]);
    });

    t.test('a multi-chunk file with a bad byte in its second chunk is skipped', async (t) => {
      const content = Buffer.concat([
        Buffer.from('needle\n'), Buffer.from('hay\n'.repeat(MiB / 4)), Buffer.from([0xc3, 0x28, 0x0a]), Buffer.from('needle\n'),
      ]);
      t.ok(content.length > MiB);
      await d.call('write', { path: '/big2/mixed.txt', content: bytes(content) });
      t.same(await d.call('grep', { pattern: 'needle', path: '/big2' }), []);
      const many = Buffer.concat([Buffer.from('needle\n'.repeat(Math.ceil(MiB / 7) + 10)), Buffer.from([0xc3, 0x28, 0x0a])]);
      await d.call('write', { path: '/big3/many.txt', content: bytes(many) });
      t.same(await d.call('grep', { pattern: 'needle', path: '/big3', max_results: 5 }), [],
        'even when max_results is reached in the first chunk');
    });

    t.test('a missing path is -32000', async (t) => {
      await t.rejects(d.call('grep', { pattern: 'x', path: '/nothere' }), { code: -32000 });
    });
  });
});
