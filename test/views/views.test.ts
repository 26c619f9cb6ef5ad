// Parsed views through the method table (spec §4.4 list(show_parsed), upstream-behaviour §2.5).
import t from 'tap';
import { fsMethods } from '../../src/fs/methods.js';
import { buildTable, parseParams } from '../../src/core/method.js';
import { anonymousContext, type OperationContext } from '../../src/core/context.js';
import { decodeValue, encodeValue } from '../../src/core/wire.js';
import { ParsedViews, type ParsedViewsOptions } from '../../src/views/views.js';
import { makeFs, sha256 } from '../fs/fixture.js';
import { open } from '../rebac/fixture.js';
import * as doc from './documents.js';

function caller(t: Parameters<typeof makeFs>[0], opts: ParsedViewsOptions = {}) {
  const fx = makeFs(t);
  const views = new ParsedViews(fx.fs, opts);
  t.teardown(() => views.close());
  const table = buildTable(fsMethods(fx.fs, undefined, views));
  const ctx = anonymousContext('test');
  const call = async (name: string, params: unknown): Promise<any> => {
    const m = table[name];
    if (!m) throw new Error(`no method ${name}`);
    return encodeValue(await m.handler(parseParams(m, params), ctx));
  };
  const put = (path: string, content: Buffer | string) => fx.fs.write(path, Buffer.from(content));
  const text = async (path: string) => Buffer.from((await call('read', { path })).data, 'base64').toString('utf8');
  return { fx, views, call, put, text };
}

t.test('list: a view after each document, sorted in, in both listing modes', async (t) => {
  const { call, put } = caller(t);
  await put('/docs/report.pdf', doc.pdf('Annual figures'));
  await put('/docs/notes.txt', 'plain');
  await put('/docs/sub/deck.pptx', await doc.pptx());
  await put('/docs/z.rtf', doc.rtf());
  t.same(await call('list', { path: '/docs', recursive: false }), [
    '/docs/notes.txt', '/docs/report.pdf', '/docs/report_parsed.pdf.md', '/docs/sub/', '/docs/z.rtf', '/docs/z_parsed.rtf.md',
  ]);
  t.same(await call('list', { path: '/docs', recursive: false, show_parsed: false }),
    ['/docs/notes.txt', '/docs/report.pdf', '/docs/sub/', '/docs/z.rtf'], 'show_parsed=false: only what is stored');
  t.same(await call('list', { path: '/docs' }), [
    '/docs/notes.txt', '/docs/report.pdf', '/docs/report_parsed.pdf.md', '/docs/sub/', '/docs/sub/deck.pptx',
    '/docs/sub/deck_parsed.pptx.md', '/docs/z.rtf', '/docs/z_parsed.rtf.md',
  ], 'recursive (the default) lists views too');
  t.same(await call('list', { path: '/docs', show_parsed: false }),
    ['/docs/notes.txt', '/docs/report.pdf', '/docs/sub/', '/docs/sub/deck.pptx', '/docs/z.rtf']);
  t.same(await call('list', { path: '/docs', prefix: '/docs/report_' }), ['/docs/report_parsed.pdf.md'],
    'a prefix that only the view matches');
  t.same(await call('list', { path: '/docs', prefix: 'docs/z' }), ['/docs/z.rtf', '/docs/z_parsed.rtf.md']);
  t.same(await call('list', { path: '/docs', prefix: 'z', recursive: false }), [], 'a prefix is on the full path');
  t.same(await call('glob', { pattern: '*.md', path: '/docs' }), [], 'glob matches stored files only');
});

t.test('list details: the view is the original entry with its path and content type changed', async (t) => {
  const { call, put } = caller(t);
  const w = await put('/d/a.docx', await doc.docx());
  const entries = await call('list', { path: '/d', recursive: false, details: true });
  t.equal(entries.length, 2);
  const [orig, view] = entries;
  t.equal(orig.path, '/d/a.docx');
  t.same(view, { ...orig, path: '/d/a_parsed.docx.md', content_type: 'text/markdown' });
  t.equal(view.etag, w.etag, 'etag and size are the original\'s (a listing converts nothing)');
});

t.test('read converts each format to markdown', async (t) => {
  const { put, text } = caller(t);
  const cases: [string, Buffer, RegExp[]][] = [
    ['/f/r.pdf', doc.pdf('Hello PDF world'), [/^Hello PDF world\n$/]],
    ['/f/r.docx', await doc.docx(), [/^# Quarterly Report$/m, /Revenue grew by __twelve percent__/]],
    ['/f/r.xlsx', await doc.xlsx(), [/^## Sales$/m, /^\| Region \| Units \|$/m, /^\| --- \| --- \|$/m, /^\| North \| 42 \|$/m, /^\| South\\\|East \| 7 \|$/m, /^## Empty\n\n\(empty sheet\)$/m]],
    ['/f/r.pptx', await doc.pptx(), [/^## Slide 1\n\nRoadmap\n\nShip the daemon\n\n## Slide 2\n\nRisks\n\nParsers & hostile input\n\n## Slide 3\n\nAppendix/]],
    ['/f/r.odt', await doc.odt(), [/^## Meeting Notes\n\nDecided to {2}use LMDB\.\n$/]],
    ['/f/r.ods', await doc.ods(), [/^## Budget\n\n\| Item \| Cost \|\n\| --- \| --- \|\n\| Disks \| 300 \|\n$/]],
    ['/f/r.odp', await doc.odp(), [/^## Slide 1\n\nWelcome slide\n\n## Slide 2\n\nSecond slide words\n$/]],
    ['/f/r.epub', await doc.epub(), [/^# Chapter One\n\nIt was a dark and stormy night\.\n\n## Chapter Two\n\nThe storm\u00a0passed\.\n$/]],
    ['/f/r.rtf', doc.rtf(), [/^Hello RTF world\n\nCafé costs € 3\n\nBraces \{ok\}\n$/]],
  ];
  for (const [path, content, expected] of cases) await put(path, content);
  for (const [path, , expected] of cases) {
    const md = await text(path.replace(/(\.\w+)$/, '_parsed$1.md'));
    for (const re of expected) t.match(md, re, `${path}: ${re}`);
    t.notMatch(md, /svc could not convert/, `${path} converted`);
  }
});

t.test('read with metadata, get_metadata, exists and is_directory of a view', async (t) => {
  const { call, put, text } = caller(t);
  const w = await put('/m/x.rtf', doc.rtf());
  const md = await text('/m/x_parsed.rtf.md');
  const withMeta = await call('read', { path: '/m/x_parsed.rtf.md', return_metadata: true });
  t.equal(Buffer.from(withMeta.content, 'base64').toString(), md);
  t.same(withMeta.metadata, {
    size: Buffer.byteLength(md), etag: sha256(md), version: 1, modified_at: new Date(w.modified_at).toISOString(), content_type: 'text/markdown',
  });
  const meta = await call('get_metadata', { path: 'm/x_parsed.rtf.md' });
  t.match(meta, { path: '/m/x_parsed.rtf.md', size: Buffer.byteLength(md), etag: sha256(md), version: 1, content_type: 'text/markdown', is_directory: false });
  t.same(await call('exists', { path: '/m/x_parsed.rtf.md' }), { exists: true });
  t.same(await call('is_directory', { path: '/m/x_parsed.rtf.md' }), { is_directory: false });

  // The view follows its original: a new version converts again, a deleted original takes the view with it.
  await put('/m/x.rtf', '{\\rtf1 Second edition\\par}');
  t.equal(await text('/m/x_parsed.rtf.md'), 'Second edition\n');
  t.equal((await call('get_metadata', { path: '/m/x_parsed.rtf.md' })).version, 2);
  await call('delete', { path: '/m/x.rtf' });
  t.same(await call('exists', { path: '/m/x_parsed.rtf.md' }), { exists: false });
  t.equal(await call('get_metadata', { path: '/m/x_parsed.rtf.md' }), null);
  await t.rejects(call('read', { path: '/m/x_parsed.rtf.md' }), { code: -32000 });
  t.same(await call('list', { path: '/m', recursive: false }), []);
  t.same(await call('exists', { path: '/m/y_parsed.pdf.md' }), { exists: false }, 'no original, no view');
});

t.test('changes to a view are refused with -32004 (EROFS on a mount)', async (t) => {
  const { call, put, fx } = caller(t);
  await put('/v/a.pdf', doc.pdf('Keep me'));
  await put('/v/other.txt', 'o');
  const refused = { code: -32004, message: /Read-only parsed view/, data: { path: '/v/a_parsed.pdf.md', original: '/v/a.pdf', errno: 'EROFS' } };
  await t.rejects(call('write', { path: '/v/a_parsed.pdf.md', content: { __type__: 'bytes', data: 'eA==' } }), refused);
  await t.rejects(call('delete', { path: '/v/a_parsed.pdf.md' }), refused);
  await t.rejects(call('rename', { old_path: '/v/a_parsed.pdf.md', new_path: '/v/b.md' }), refused);
  await t.rejects(call('rename', { old_path: '/v/other.txt', new_path: '/v/a_parsed.pdf.md' }), refused);
  await t.rejects(call('mkdir', { path: '/v/a_parsed.pdf.md' }), refused);
  await t.rejects(call('rmdir', { path: '/v/a_parsed.pdf.md' }), refused);
  t.same(fx.fs.list('/v').map((e) => e.path), ['/v/a.pdf', '/v/other.txt'], 'nothing changed');
  // Without its original the name is an ordinary one.
  await call('write', { path: '/v/b_parsed.pdf.md', content: { __type__: 'bytes', data: 'eA==' } });
  t.ok(fx.fs.exists('/v/b_parsed.pdf.md'));
});

t.test('every face is refused: the POSIX methods and uploads pass the same guard', async (t) => {
  const f = open(t);
  t.teardown(() => f.s.views.close());
  await f.call('write', { path: '/g/a.epub', content: { __type__: 'bytes', data: (await doc.epub()).toString('base64') } });
  const refused = { code: -32004, data: { path: '/g/a_parsed.epub.md', errno: 'EROFS' } };
  await t.rejects(f.call('symlink', { path: '/g/a_parsed.epub.md', target: '/g/a.epub' }), refused);
  await t.rejects(f.call('upload_begin', { path: '/g/a_parsed.epub.md' }), refused);
  await t.rejects(f.s.fs.write('/g/a_parsed.epub.md', Buffer.from('x')), refused, 'the service itself (the FUSE mount writes here)');
  t.equal(f.s.fs.exists('/g/a_parsed.epub.md'), false);
});

t.test('a stored file of a view\'s name wins over the view', async (t) => {
  const { call, put, text } = caller(t);
  await put('/s/r_parsed.pdf.md', 'my own notes');
  await put('/s/r.pdf', doc.pdf('Converted text'));
  t.equal(await text('/s/r_parsed.pdf.md'), 'my own notes');
  t.same(await call('list', { path: '/s', recursive: false }), ['/s/r.pdf', '/s/r_parsed.pdf.md'], 'listed once');
  const details = await call('list', { path: '/s', recursive: false, details: true });
  t.equal(details[1].content_type, 'text/markdown');
  t.equal(details[1].size, Buffer.byteLength('my own notes'), 'the stored entry, not a copy of the pdf\'s');
  await call('write', { path: '/s/r_parsed.pdf.md', content: { __type__: 'bytes', data: Buffer.from('edited').toString('base64') } });
  t.equal(await text('/s/r_parsed.pdf.md'), 'edited', 'a stored file stays writable');
  await call('delete', { path: '/s/r_parsed.pdf.md' });
  t.equal(await text('/s/r_parsed.pdf.md'), 'Converted text\n', 'once it is gone the view is back');
});

t.test('fallbacks: a note saying why, never the raw bytes; the daemon goes on', async (t) => {
  const { put, text } = caller(t, { maxInputBytes: 4096 });
  await put('/b/broken.docx', 'this is not a zip file');
  t.match(await text('/b/broken_parsed.docx.md'), /^> svc could not convert `broken\.docx` to text: the parser failed \(.+\)\.\n> The original file is `\/b\/broken\.docx`\.\n$/);
  await put('/b/old.xls', Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 1, 2, 3]));
  t.match(await text('/b/old_parsed.xls.md'), /could not convert `old\.xls` to text: svc has no converter for \.xls files/);
  await put('/b/big.pdf', Buffer.alloc(5000, 0x20));
  t.match(await text('/b/big_parsed.pdf.md'), /it is 5000 bytes, over the 4096-byte limit for conversion/);
  await put('/b/old.doc', 'not an OLE file');
  t.match(await text('/b/old_parsed.doc.md'), /could not convert `old\.doc` to text: the parser failed/);
  await put('/b/ok.rtf', doc.rtf());
  t.match(await text('/b/ok_parsed.rtf.md'), /Hello RTF world/, 'later conversions still work');
});

t.test('a zip-based document that expands past the limit is refused before a library opens it', async (t) => {
  const { put, text } = caller(t, { maxExpandedBytes: 1024 * 1024 });
  const JSZip = (await import('jszip')).default;
  const bomb = new JSZip();
  bomb.file('word/document.xml', Buffer.alloc(2 * 1024 * 1024, 0x20));
  const packed = await bomb.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
  t.ok(packed.length < 64 * 1024, 'small on disk');
  await put('/z/bomb.docx', packed);
  t.match(await text('/z/bomb_parsed.docx.md'), /could not convert `bomb\.docx` to text: the parser failed \(it expands to more than 1048576 bytes\)/);
  await put('/z/ok.odt', await doc.odt());
  t.match(await text('/z/ok_parsed.odt.md'), /Meeting Notes/, 'a document within the limit converts');
});

t.test('a conversion over the time limit is stopped, and the next one runs in a new worker', async (t) => {
  // 1 ms is far less than loading a worker and the PDF library takes: the bound is reached every time.
  const slow = caller(t, { timeoutMs: 1 });
  await slow.put('/t/a.pdf', doc.pdf('Never in time'));
  t.match(await slow.text('/t/a_parsed.pdf.md'), /could not convert `a\.pdf` to text: it took longer than 1 ms/);
  const fast = caller(t);
  await fast.put('/t/a.pdf', doc.pdf('In time'));
  t.equal(await fast.text('/t/a_parsed.pdf.md'), 'In time\n');
});

t.test('conversions are cached by etag and shared by concurrent readers', async (t) => {
  const { views, put } = caller(t);
  await put('/c/a.rtf', doc.rtf());
  await put('/c/b.rtf', doc.rtf());
  const [x, y] = await Promise.all([views.read('/c/a.rtf'), views.read('/c/b.rtf')]);
  t.equal(x.view, y.view, 'same content, one conversion');
  t.equal((await views.read('/c/a.rtf')).view, x.view, 'a later read hits the cache');
  await put('/c/a.rtf', '{\\rtf1 changed}');
  t.not((await views.read('/c/a.rtf')).view, x.view, 'a new etag converts again');
});

t.test('permissions of a view are those of its original', async (t) => {
  const f = open(t, { enforcePermissions: true });
  t.teardown(() => f.s.views.close());
  const admin = anonymousContext('test');
  const as = (id: string): OperationContext => ({ ...anonymousContext('test', { type: 'user', id }), authenticated: true });
  const content = { __type__: 'bytes', data: doc.rtf().toString('base64') };
  await f.call('write', { path: '/p/secret.rtf', content }, admin);
  await f.call('write', { path: '/p/open.rtf', content }, admin);
  await f.call('rebac_create', { subject: ['user', 'alice'], relation: 'direct_viewer', object: ['file', '/p/open.rtf'] }, admin);
  const alice = as('alice');
  t.same(await f.call('list', { path: '/p', recursive: false }, alice), ['/p/open.rtf', '/p/open_parsed.rtf.md']);
  t.same(await f.call('exists', { path: '/p/open_parsed.rtf.md' }, alice), { exists: true });
  t.same(await f.call('exists', { path: '/p/secret_parsed.rtf.md' }, alice), { exists: false });
  t.match((decodeValue(await f.call('read', { path: '/p/open_parsed.rtf.md' }, alice)) as Buffer).toString(), /^Hello RTF world\n/);
  await t.rejects(f.call('read', { path: '/p/secret_parsed.rtf.md' }, alice), { code: -32004, message: /\/p\/secret\.rtf/ });
  await t.rejects(f.call('get_metadata', { path: '/p/secret_parsed.rtf.md' }, alice), { code: -32004 });
  await t.rejects(f.call('is_directory', { path: '/p/secret_parsed.rtf.md' }, alice), { code: -32004 });
  t.same(await f.call('list', { path: '/p', recursive: false }, admin),
    ['/p/open.rtf', '/p/open_parsed.rtf.md', '/p/secret.rtf', '/p/secret_parsed.rtf.md']);
});
