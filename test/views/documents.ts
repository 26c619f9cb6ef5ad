/**
 * @module test/views/documents
 * Small real documents made in the test, one per format the parsed views convert: zip parts of
 * minimal XML (docx, pptx, odt, ods, odp, epub), a workbook written by exceljs, a hand-laid PDF
 * with a correct xref table, and RTF text. Each carries distinctive words the tests look for.
 */
import JSZip from 'jszip';
import ExcelJS from 'exceljs';

async function zip(files: Record<string, string>): Promise<Buffer> {
  const z = new JSZip();
  for (const [name, text] of Object.entries(files)) z.file(name, text);
  return z.generateAsync({ type: 'nodebuffer' });
}

const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

export function docx(): Promise<Buffer> {
  return zip({
    '[Content_Types].xml': XML + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
      + '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
      + '<Default Extension="xml" ContentType="application/xml"/>'
      + '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
      + '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>'
      + '</Types>',
    '_rels/.rels': XML + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
      + '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
      + '</Relationships>',
    'word/_rels/document.xml.rels': XML + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
      + '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>'
      + '</Relationships>',
    'word/styles.xml': XML + `<w:styles xmlns:w="${W}"><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style></w:styles>`,
    'word/document.xml': XML + `<w:document xmlns:w="${W}"><w:body>`
      + '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Quarterly Report</w:t></w:r></w:p>'
      + '<w:p><w:r><w:t xml:space="preserve">Revenue grew by </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>twelve percent</w:t></w:r></w:p>'
      + '</w:body></w:document>',
  });
}

export function pptx(): Promise<Buffer> {
  const slide = (title: string, body: string) => XML
    + '<p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">'
    + `<p:cSld><p:spTree><p:sp><p:txBody><a:p><a:r><a:t>${title}</a:t></a:r></a:p></p:txBody></p:sp>`
    + `<p:sp><p:txBody><a:p><a:r><a:t>${body}</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:sld>`;
  return zip({
    '[Content_Types].xml': XML + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
    'ppt/slides/slide1.xml': slide('Roadmap', 'Ship the daemon'),
    'ppt/slides/slide2.xml': slide('Risks', 'Parsers &amp; hostile input'),
    'ppt/slides/slide10.xml': slide('Appendix', 'Tenth slide last'),
  });
}

const ODF_NS = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
  + 'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"';

function odf(mime: string, body: string): Promise<Buffer> {
  return zip({
    mimetype: mime,
    'content.xml': XML + `<office:document-content ${ODF_NS}><office:body>${body}</office:body></office:document-content>`,
  });
}

export const odt = () => odf('application/vnd.oasis.opendocument.text',
  '<office:text><text:h text:outline-level="2">Meeting Notes</text:h><text:p>Decided to<text:s text:c="2"/>use LMDB.</text:p></office:text>');

export const ods = () => odf('application/vnd.oasis.opendocument.spreadsheet',
  '<office:spreadsheet><table:table table:name="Budget">'
  + '<table:table-row><table:table-cell><text:p>Item</text:p></table:table-cell><table:table-cell><text:p>Cost</text:p></table:table-cell></table:table-row>'
  + '<table:table-row><table:table-cell><text:p>Disks</text:p></table:table-cell><table:table-cell><text:p>300</text:p></table:table-cell>'
  + '<table:table-cell table:number-columns-repeated="1000"/></table:table-row>'
  + '<table:table-row table:number-rows-repeated="1048000"><table:table-cell table:number-columns-repeated="1024"/></table:table-row>'
  + '</table:table></office:spreadsheet>');

export const odp = () => odf('application/vnd.oasis.opendocument.presentation',
  '<office:presentation><draw:page><draw:frame><draw:text-box><text:p>Welcome slide</text:p></draw:text-box></draw:frame></draw:page>'
  + '<draw:page><draw:frame><draw:text-box><text:p>Second slide words</text:p></draw:text-box></draw:frame></draw:page></office:presentation>');

export function epub(): Promise<Buffer> {
  return zip({
    mimetype: 'application/epub+zip',
    'META-INF/container.xml': XML + '<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
      + '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
    'OEBPS/content.opf': XML + '<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><manifest>'
      + '<item id="c2" href="ch2.xhtml" media-type="application/xhtml+xml"/><item id="c1" href="ch1.xhtml" media-type="application/xhtml+xml"/>'
      + '</manifest><spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>',
    'OEBPS/ch1.xhtml': XML + '<html xmlns="http://www.w3.org/1999/xhtml"><body><h1>Chapter One</h1><p>It was a dark and stormy night.</p></body></html>',
    'OEBPS/ch2.xhtml': XML + '<html xmlns="http://www.w3.org/1999/xhtml"><body><h2>Chapter Two</h2><p>The storm&#160;passed.</p></body></html>',
  });
}

export async function xlsx(): Promise<Buffer> {
  const book = new ExcelJS.Workbook();
  const sheet = book.addWorksheet('Sales');
  sheet.addRow(['Region', 'Units']);
  sheet.addRow(['North', 42]);
  sheet.addRow(['South|East', 7]);
  book.addWorksheet('Empty');
  return Buffer.from(await book.xlsx.writeBuffer());
}

/** A one-page PDF showing `text` in Helvetica (ASCII without parentheses or backslashes). */
export function pdf(text: string): Buffer {
  const stream = `BT /F1 18 Tf 72 720 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const off of offsets) out += `${String(off).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

export const rtf = (): Buffer => Buffer.from(
  '{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Helvetica;}}{\\colortbl;\\red255\\green0\\blue0;}{\\*\\generator Hand;}'
  + '\\f0\\fs24 Hello \\b RTF\\b0  world\\par Caf\\\'e9 costs \\u8364? 3\\par {\\*\\unknowndest hidden words}Braces \\{ok\\}}',
  'latin1');
