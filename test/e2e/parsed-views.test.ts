// Parsed views over HTTP against the built daemon (dist/, as users run it): list(show_parsed), read
// of a view (the converter worker loads from dist/views), refusal of writes.
import t from 'tap';
import { startDaemon, bytes, unbytes } from '../helpers/daemon.js';
import * as doc from '../views/documents.js';

t.test('parsed views over HTTP', async (t) => {
  const d = await startDaemon({}, t);
  await d.call('write', { path: '/docs/report.docx', content: bytes(await doc.docx()) });
  await d.call('write', { path: '/docs/scan.pdf', content: bytes(doc.pdf('Scanned invoice 42')) });
  await d.call('write', { path: '/docs/readme.txt', content: bytes('plain') });

  t.same(await d.call('list', { path: '/docs', recursive: false }),
    ['/docs/readme.txt', '/docs/report.docx', '/docs/report_parsed.docx.md', '/docs/scan.pdf', '/docs/scan_parsed.pdf.md']);
  t.same(await d.call('list', { path: '/docs', recursive: false, show_parsed: false }),
    ['/docs/readme.txt', '/docs/report.docx', '/docs/scan.pdf']);
  const details = await d.call('list', { path: '/docs', recursive: false, details: true });
  t.match(details[2], { path: '/docs/report_parsed.docx.md', is_directory: false, content_type: 'text/markdown', etag: details[1].etag });

  t.match(unbytes(await d.call('read', { path: '/docs/report_parsed.docx.md' })).toString(), /^# Quarterly Report\n\nRevenue grew by __twelve percent__/);
  t.equal(unbytes(await d.call('read', { path: '/docs/scan_parsed.pdf.md' })).toString(), 'Scanned invoice 42\n');
  t.same(await d.call('exists', { path: '/docs/scan_parsed.pdf.md' }), { exists: true });
  t.match(await d.call('get_metadata', { path: '/docs/scan_parsed.pdf.md' }), { size: 19, content_type: 'text/markdown' });

  const w = await d.rpc('write', { path: '/docs/scan_parsed.pdf.md', content: bytes('x') });
  t.match(w.error, { code: -32004, data: { path: '/docs/scan_parsed.pdf.md', original: '/docs/scan.pdf' } });
  t.match((await d.rpc('delete', { path: '/docs/scan_parsed.pdf.md' })).error, { code: -32004 });
  t.same(await d.call('list', { path: '/docs', recursive: false, show_parsed: false }),
    ['/docs/readme.txt', '/docs/report.docx', '/docs/scan.pdf'], 'nothing was written');
});
