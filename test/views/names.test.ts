import t from 'tap';
import { originalPathOf, parseableExt, viewPathOf, PARSEABLE_EXTENSIONS } from '../../src/views/names.js';

t.test('view names: <base>_parsed<.ext>.md for the twelve parseable extensions', async (t) => {
  t.same([...PARSEABLE_EXTENSIONS].sort(), ['.doc', '.docx', '.epub', '.odp', '.ods', '.odt', '.pdf', '.ppt', '.pptx', '.rtf', '.xls', '.xlsx']);
  t.equal(viewPathOf('/docs/report.pdf'), '/docs/report_parsed.pdf.md');
  t.equal(viewPathOf('/a.b/c.d.docx'), '/a.b/c.d_parsed.docx.md');
  t.equal(viewPathOf('/x/Deck.PPTX'), '/x/Deck_parsed.PPTX.md', 'extensions match in any case and keep it');
  t.equal(viewPathOf('/x/notes.txt'), undefined);
  t.equal(viewPathOf('/x/.pdf'), undefined, 'a hidden name has no extension');
  t.equal(viewPathOf('/x/pdf'), undefined);
  t.equal(parseableExt('/x/Deck.PPTX'), '.pptx');
});

t.test('originals of view names: the exact inverse, nothing else', async (t) => {
  t.equal(originalPathOf('/docs/report_parsed.pdf.md'), '/docs/report.pdf');
  t.equal(originalPathOf('/a.b/c.d_parsed.docx.md'), '/a.b/c.d.docx');
  t.equal(originalPathOf('/x/Deck_parsed.PPTX.md'), '/x/Deck.PPTX');
  t.equal(originalPathOf('/r_parsed.rtf.md'), '/r.rtf');
  for (const p of ['/docs/report.pdf.md', '/docs/report_parsed.txt.md', '/docs/_parsed.pdf.md', '/docs/report_parsed.pdf',
    '/docs/report_parsed.pdf.MD', '/docs/report_parsed.pdf.md/x', '/', '/x_parsed.md']) {
    t.equal(originalPathOf(p), undefined, p);
  }
  for (const p of ['/d/a.pdf', '/d/a_parsed.pdf', '/d/b.c.xlsx', '/d/a_parsed_parsed.epub']) t.equal(originalPathOf(viewPathOf(p)!), p, `round trip ${p}`);
});
