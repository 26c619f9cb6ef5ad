import t from 'tap';
import { startDaemon, svc } from './harness.js';

const { url, client } = await startDaemon(t);
const run = (args: string[]) => svc(args, { url });
const put = (path: string, content: string | Uint8Array) => client.call('write', { path, content: Buffer.from(content) });

await put('/g/src/a.ts', 'const x = 1;\n// TODO: fix\n');
await put('/g/src/b.ts', 'todo lower\nnothing\n');
await put('/g/notes.md', 'TODO in markdown\n');
await put('/g/bin.dat', Buffer.from([0xff, 0xfe, 0x54, 0x4f, 0x44, 0x4f]));

t.test('glob prints one path per line; --path sets the base; --json the array', async (t) => {
  const [glob, globPath, globJson, none] = await Promise.all([
    run(['glob', '**/*.ts']),
    run(['glob', '*.ts', '--path', '/g/src']),
    run(['glob', '/g/*', '--json']),
    run(['glob', '*.nothing']),
  ]);
  t.equal(glob.code, 0, glob.stderr);
  t.equal(glob.out, '/g/src/a.ts\n/g/src/b.ts\n');
  t.equal(globPath.out, '/g/src/a.ts\n/g/src/b.ts\n');
  t.same(JSON.parse(globJson.out), ['/g/bin.dat', '/g/notes.md', '/g/src/']);
  t.equal(none.code, 0, none.stderr);
  t.equal(none.out, '');
});

t.test('grep prints file:line:content', async (t) => {
  const [grep, grepI, grepFp, grepMax, grepJson, none] = await Promise.all([
    run(['grep', 'TODO', '/g']),
    run(['grep', 'todo', '/g', '-i']),
    run(['grep', 'TODO', '--file-pattern', '*.md']),
    run(['grep', 'o', '/g', '--max-results', '2']),
    run(['grep', 'TODO', '/g/src', '--json']),
    run(['grep', 'no-such-text', '/g']),
  ]);
  t.equal(grep.code, 0, grep.stderr);
  t.equal(grep.out, '/g/notes.md:1:TODO in markdown\n/g/src/a.ts:2:// TODO: fix\n', 'binary files are skipped');
  t.equal(grepI.out, '/g/notes.md:1:TODO in markdown\n/g/src/a.ts:2:// TODO: fix\n/g/src/b.ts:1:todo lower\n');
  t.equal(grepFp.out, '/g/notes.md:1:TODO in markdown\n');
  t.equal(grepMax.out.trimEnd().split('\n').length, 2);
  t.same(JSON.parse(grepJson.out), [{ file: '/g/src/a.ts', line: 2, content: '// TODO: fix', match: 'TODO' }]);
  t.equal(none.code, 0, 'no match is not an error');
  t.equal(none.out, '');
});

t.test('grep errors: a bad regex is -32602, a bad --max-results a usage error', async (t) => {
  const [badRegex, badMax] = await Promise.all([run(['grep', '(unclosed']), run(['grep', 'x', '--max-results', '0'])]);
  t.equal(badRegex.code, 1, badRegex.stderr);
  t.match(badRegex.stderr, /^svc: error -32602: .*regular expression[^\n]*\n$/);
  t.equal(badMax.code, 2, badMax.stderr);
  t.equal(badMax.stderr, 'svc: --max-results must be a positive integer, got 0\n');
});
