import t from 'tap';
import { CHUNK_SIZE, GREP_MAX_LINE } from '../../src/fs/service.js';
import { makeFs, b, type FsFixture } from './fixture.js';

async function tree(t: Parameters<typeof makeFs>[0]): Promise<FsFixture> {
  const fx = makeFs(t);
  const files: Record<string, string> = {
    '/top.ts': 'export const top = 1;\n',
    '/src/a.ts': 'import x from "y";\nconst hello = "world";\n',
    '/src/b.js': 'hello from js\n',
    '/src/lib/c.ts': 'nothing here\n',
    '/src/lib/deep/d.ts': 'Hello deep\nsecond line hello hello\n',
    '/src/.hidden.ts': 'hidden hello\n',
    '/docs/x.md': '# Title\n\nhello docs\n',
    '/docs/y.MD': 'upper case ext\n',
  };
  for (const [p, text] of Object.entries(files)) await fx.fs.write(p, b(text));
  await fx.fs.mkdir('/empty');
  return fx;
}

t.test('list: recursive by default, every file and directory, directories end with /, sorted', async (t) => {
  const { fs } = await tree(t);
  const all = fs.list('/').map((e) => e.path);
  t.same(all, [
    '/docs/', '/docs/x.md', '/docs/y.MD', '/empty/',
    '/src/', '/src/.hidden.ts', '/src/a.ts', '/src/b.js', '/src/lib/', '/src/lib/c.ts', '/src/lib/deep/', '/src/lib/deep/d.ts',
    '/top.ts',
  ]);
  t.same(all, [...all].sort());
  t.same(fs.list('/src/lib').map((e) => e.path), ['/src/lib/c.ts', '/src/lib/deep/', '/src/lib/deep/d.ts'], 'below path only, not path itself');
});

t.test('list: recursive=false gives only the direct children', async (t) => {
  const { fs } = await tree(t);
  t.same(fs.list('/', { recursive: false }).map((e) => e.path), ['/docs/', '/empty/', '/src/', '/top.ts']);
  t.same(fs.list('/src', { recursive: false }).map((e) => e.path), ['/src/.hidden.ts', '/src/a.ts', '/src/b.js', '/src/lib/']);
  t.same(fs.list('/empty', { recursive: false }), []);
  t.same(fs.list('/empty'), []);
});

t.test('list: prefix filters on the full path', async (t) => {
  const { fs } = await tree(t);
  t.same(fs.list('/', { prefix: '/src/l' }).map((e) => e.path), ['/src/lib/', '/src/lib/c.ts', '/src/lib/deep/', '/src/lib/deep/d.ts']);
  t.same(fs.list('/', { prefix: 'docs/x' }).map((e) => e.path), ['/docs/x.md'], 'a prefix without a leading / gets one');
  t.same(fs.list('/src', { prefix: '/docs' }), [], 'only entries under path');
  t.same(fs.list('/src', { recursive: false, prefix: '/src/a' }).map((e) => e.path), ['/src/a.ts']);
});

t.test('list: entries carry the details of spec §2.3', async (t) => {
  const { fs } = await tree(t);
  const dir = fs.list('/', { recursive: false })[0];
  const file = fs.list('/docs')[0];
  t.equal(dir!.path, '/docs/');
  t.equal(dir!.is_directory, true);
  t.equal(file!.path, '/docs/x.md');
  t.equal(file!.is_directory, false);
  t.equal(file!.size, Buffer.byteLength('# Title\n\nhello docs\n'));
  t.match(file!.etag, /^[0-9a-f]{64}$/);
  t.ok(file!.modified_at instanceof Date);
});

t.test('list: errors', async (t) => {
  const { fs } = await tree(t);
  t.throws(() => fs.list('/nope'), { code: -32000 });
  t.throws(() => fs.list('/top.ts'), { code: -32005, data: { errno: 'ENOTDIR' } });
  t.throws(() => fs.list('/a/../b'), { code: -32002 });
});

t.test('glob: * and ? stay inside one segment', async (t) => {
  const { fs } = await tree(t);
  t.same(fs.glob('*.ts'), ['/top.ts']);
  t.same(fs.glob('src/*.ts'), ['/src/.hidden.ts', '/src/a.ts']);
  t.same(fs.glob('src/?.ts'), ['/src/a.ts']);
  t.same(fs.glob('src/*'), ['/src/.hidden.ts', '/src/a.ts', '/src/b.js', '/src/lib/']);
});

t.test('glob: ** spans segments, zero included', async (t) => {
  const { fs } = await tree(t);
  t.same(fs.glob('**/*.ts'), ['/src/.hidden.ts', '/src/a.ts', '/src/lib/c.ts', '/src/lib/deep/d.ts', '/top.ts']);
  t.same(fs.glob('src/**/*.ts'), ['/src/.hidden.ts', '/src/a.ts', '/src/lib/c.ts', '/src/lib/deep/d.ts']);
  t.same(fs.glob('src/**/d.ts'), ['/src/lib/deep/d.ts']);
  t.same(fs.glob('**/deep/*'), ['/src/lib/deep/d.ts']);
});

t.test('glob: [...] and {a,b}', async (t) => {
  const { fs } = await tree(t);
  t.same(fs.glob('src/[ab].*'), ['/src/a.ts', '/src/b.js']);
  t.same(fs.glob('src/[!a].*'), ['/src/b.js']);
  t.same(fs.glob('**/*.{js,md}'), ['/docs/x.md', '/src/b.js']);
  t.same(fs.glob('{docs,src/lib}/*'), ['/docs/x.md', '/docs/y.MD', '/src/lib/c.ts', '/src/lib/deep/']);
});

t.test('glob: the pattern is relative to path; absolute patterns work inside it', async (t) => {
  const { fs } = await tree(t);
  t.same(fs.glob('*.ts', '/src'), ['/src/.hidden.ts', '/src/a.ts']);
  t.same(fs.glob('**/*.ts', '/src/lib'), ['/src/lib/c.ts', '/src/lib/deep/d.ts']);
  t.same(fs.glob('/src/*.js'), ['/src/b.js']);
  t.same(fs.glob('/src/lib/*.ts', '/src'), ['/src/lib/c.ts']);
  t.same(fs.glob('/docs/*', '/src'), [], 'an absolute pattern outside path matches nothing');
});

t.test('glob: literal names, case, no match', async (t) => {
  const { fs } = await tree(t);
  t.same(fs.glob('top.ts'), ['/top.ts']);
  t.same(fs.glob('src/lib'), ['/src/lib/']);
  t.same(fs.glob('docs/*.md'), ['/docs/x.md'], 'case-sensitive');
  t.same(fs.glob('nothing/**'), []);
  t.same(fs.glob('*.zzz'), []);
});

t.test('glob: errors', async (t) => {
  const { fs } = await tree(t);
  t.throws(() => fs.glob('*', '/nope'), { code: -32000 });
  t.throws(() => fs.glob('*', '/top.ts'), { code: -32005 });
});

t.test('grep: one hit per matching line, 1-based, whole line and first match', async (t) => {
  const { fs } = await tree(t);
  const hits = await fs.grep({ pattern: 'hello', path: '/src' });
  t.same(hits, [
    { file: '/src/.hidden.ts', line: 1, content: 'hidden hello', match: 'hello' },
    { file: '/src/a.ts', line: 2, content: 'const hello = "world";', match: 'hello' },
    { file: '/src/b.js', line: 1, content: 'hello from js', match: 'hello' },
    { file: '/src/lib/deep/d.ts', line: 2, content: 'second line hello hello', match: 'hello' },
  ]);
  t.same(await fs.grep({ pattern: 'no such text', path: '/src' }), [], 'no hit when nothing matches');
  t.same((await fs.grep({ pattern: 'hel+o \\w+', path: '/src' })).map((h) => h.match), ['hello from', 'hello hello']);
});

t.test('grep: ignore_case, anchors, path', async (t) => {
  const { fs } = await tree(t);
  t.same((await fs.grep({ pattern: '^hello', ignoreCase: true })).map((h) => [h.file, h.line]), [
    ['/docs/x.md', 3], ['/src/b.js', 1], ['/src/lib/deep/d.ts', 1],
  ]);
  t.same((await fs.grep({ pattern: '^#' })).map((h) => h.file), ['/docs/x.md']);
  t.same((await fs.grep({ pattern: '^$' })).map((h) => [h.file, h.line]), [['/docs/x.md', 2]], 'an empty line can match');
});

t.test('grep: file_pattern without / matches base names, with / the path relative to path', async (t) => {
  const { fs } = await tree(t);
  t.same([...new Set((await fs.grep({ pattern: 'hello', filePattern: '*.ts' })).map((h) => h.file))],
    ['/src/.hidden.ts', '/src/a.ts', '/src/lib/deep/d.ts']);
  t.same([...new Set((await fs.grep({ pattern: 'hello', filePattern: 'src/*.ts' })).map((h) => h.file))], ['/src/.hidden.ts', '/src/a.ts']);
  t.same([...new Set((await fs.grep({ pattern: 'hello', filePattern: 'lib/**', path: '/src' })).map((h) => h.file))], ['/src/lib/deep/d.ts']);
  t.same(await fs.grep({ pattern: 'hello', filePattern: '*.md', path: '/src' }), []);
});

t.test('grep: max_results caps the hits', async (t) => {
  const { fs } = await tree(t);
  t.equal((await fs.grep({ pattern: 'hello', ignoreCase: true })).length, 6);
  t.same((await fs.grep({ pattern: 'hello', ignoreCase: true, maxResults: 2 })).map((h) => h.file), ['/docs/x.md', '/src/.hidden.ts']);
  t.equal((await fs.grep({ pattern: 'hello', ignoreCase: true, maxResults: 1 })).length, 1);
  await fs.write('/many.txt', b('x\n'.repeat(50)));
  t.equal((await fs.grep({ pattern: 'x', path: '/', filePattern: 'many.txt', maxResults: 7 })).length, 7, 'within one file too');
});

t.test('grep: an invalid regex is -32602 naming the pattern', async (t) => {
  const { fs } = await tree(t);
  await t.rejects(fs.grep({ pattern: '(' }), { code: -32602, data: { param: 'pattern' }, message: /regular expression/ });
});

t.test('grep: CRLF, no final newline, a lone newline', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/crlf.txt', b('one\r\ntwo match\r\nthree\r\n'));
  await fs.write('/nofinal.txt', b('a\nb match'));
  await fs.write('/nl.txt', b('\n'));
  t.same(await fs.grep({ pattern: 'match' }), [
    { file: '/crlf.txt', line: 2, content: 'two match', match: 'match' },
    { file: '/nofinal.txt', line: 2, content: 'b match', match: 'match' },
  ]);
  t.same(await fs.grep({ pattern: '^$', filePattern: 'nl.txt' }), [{ file: '/nl.txt', line: 1, content: '', match: '' }]);
});

t.test('grep: files that are not UTF-8 are skipped', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/bin.dat', Buffer.concat([b('needle here\n'), Buffer.from([0xff, 0xfe, 0x00]), b('\nneedle again\n')]));
  await fs.write('/text.txt', b('needle in text\n'));
  t.same((await fs.grep({ pattern: 'needle' })).map((h) => h.file), ['/text.txt']);
});

t.test('grep: a multi-chunk file whose later chunk is not UTF-8 contributes nothing', async (t) => {
  const { fs } = makeFs(t);
  const first = b('needle on the first line\n' + 'x'.repeat(99) + '\n');
  const fill = Buffer.alloc(CHUNK_SIZE + 10, 'y'.charCodeAt(0));
  await fs.write('/mixed.bin', Buffer.concat([first, fill, Buffer.from([0xc0, 0x80])]));
  t.same(await fs.grep({ pattern: 'needle' }), []);
  t.same(await fs.grep({ pattern: 'needle', maxResults: 1 }), [], 'not even when max_results is reached in the first chunk');
  await fs.write('/ok.txt', b('needle\n'));
  t.same((await fs.grep({ pattern: 'needle', maxResults: 1 })).map((h) => h.file), ['/ok.txt']);
});

t.test('grep: a match straddling a chunk boundary is found, with the right line number', async (t) => {
  const { fs } = makeFs(t);
  const line = 'filler line\n';
  const lines = Math.floor((CHUNK_SIZE - 100) / line.length);
  let head = line.repeat(lines);
  head += 'z'.repeat(CHUNK_SIZE - 3 - Buffer.byteLength(head)); // NEEDLE starts 3 bytes before the boundary
  const content = b(head + 'NEEDLE tail\nlast line\n');
  t.ok(content.length > CHUNK_SIZE);
  t.equal(content.subarray(CHUNK_SIZE - 3, CHUNK_SIZE + 3).toString(), 'NEEDLE');
  await fs.write('/straddle.txt', content);
  t.same(await fs.grep({ pattern: 'NEEDLE' }), [{
    file: '/straddle.txt', line: lines + 1, content: 'z'.repeat(CHUNK_SIZE - 3 - lines * line.length) + 'NEEDLE tail', match: 'NEEDLE',
  }]);
  t.same((await fs.grep({ pattern: '^last' })).map((h) => h.line), [lines + 2]);
});

t.test('grep: a line longer than GREP_MAX_LINE is searched in its head only; memory stays bounded', async (t) => {
  const { fs } = makeFs(t);
  // One line longer than GREP_MAX_LINE (no newline for several chunks), then two ordinary lines.
  const long = 'needle at the start ' + 'w'.repeat(GREP_MAX_LINE) + ' needle far away ' + 'v'.repeat(CHUNK_SIZE / 2);
  await fs.write('/long.txt', b(long + '\nsecond line needle\nthird\n'));
  const hits = await fs.grep({ pattern: 'needle' });
  t.same(hits.map((h) => [h.line, h.match]), [[1, 'needle'], [2, 'needle']], 'line numbers still count the long line once');
  t.equal(hits[0]?.content.length, GREP_MAX_LINE, 'content is the searched head, not the whole line');
  t.ok(long.startsWith(hits[0]!.content));
  t.equal(hits[1]?.content, 'second line needle');
  t.same(await fs.grep({ pattern: 'far away' }), [], 'beyond the head is not searched (documented)');
  t.same((await fs.grep({ pattern: '^third$' })).map((h) => h.line), [3]);
  // A long line that ends inside the last chunk, without a final newline.
  await fs.write('/tail.txt', b('x'.repeat(GREP_MAX_LINE + CHUNK_SIZE / 2) + '\nend needle'));
  t.same((await fs.grep({ pattern: 'needle', path: '/', filePattern: 'tail.txt' })).map((h) => [h.line, h.content]), [[2, 'end needle']]);
  t.same((await fs.grep({ pattern: '^x', filePattern: 'tail.txt' })).map((h) => [h.line, h.content.length]), [[1, GREP_MAX_LINE]]);
});

t.test('grep: a multi-byte character split by the chunk boundary is still text', async (t) => {
  const { fs } = makeFs(t);
  // 'é' is two bytes (C3 A9): place it so that C3 is the last byte of chunk 1.
  const prefix = 'a'.repeat(CHUNK_SIZE - 1);
  const content = b(prefix + 'é marker\n');
  t.equal(content[CHUNK_SIZE - 1], 0xc3);
  t.equal(content[CHUNK_SIZE], 0xa9);
  await fs.write('/split.txt', content);
  const hits = await fs.grep({ pattern: 'é marker' });
  t.equal(hits.length, 1);
  t.equal(hits[0]?.line, 1);
  t.equal(hits[0]?.match, 'é marker');
});

t.test('grep: errors on path', async (t) => {
  const { fs } = await tree(t);
  await t.rejects(fs.grep({ pattern: 'x', path: '/nope' }), { code: -32000 });
  await t.rejects(fs.grep({ pattern: 'x', path: '/top.ts' }), { code: -32005 });
});

t.test('grep: the whole-file fast path never hides a per-line match (anchors, CRLF, lookarounds)', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/crlf.txt', b('ax\r\nfoo bar\r\nbx\n'));
  t.same((await fs.grep({ pattern: 'x$' })).map((h) => h.line), [1, 3], '$ matches before \\r\\n line ends');
  t.same((await fs.grep({ pattern: '^foo' })).map((h) => h.line), [2], '^ anchors at every line');
  t.same((await fs.grep({ pattern: 'x(?![\\s\\S])' })).map((h) => h.line), [1, 3], 'a lookahead sees only its own line');
  t.same(await fs.grep({ pattern: 'zzz' }), []);
});
