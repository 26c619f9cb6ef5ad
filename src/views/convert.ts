/**
 * @module views/convert
 * Document → markdown converters for the parsed views. Each library is imported on first use
 * only (never at daemon start-up), and this module runs inside the conversion worker
 * (views/worker), never on the daemon's main thread.
 *
 * - .pdf: unpdf (pdf.js's serverless build, no native parts, no canvas) extracts the text per page.
 * - .docx: mammoth, whose markdown writer keeps headings, lists, tables-as-text, bold/italic.
 * - .doc: word-extractor (pure JS reader of the old OLE Word format).
 * - .xlsx: exceljs; every sheet becomes a `## name` section with a markdown table.
 * - .pptx .odt .ods .odp .epub: jszip + fast-xml-parser, reading the parts that hold the text.
 * - .rtf: a small RTF reader of our own (below): control words dropped, destinations such as
 *   font tables and pictures skipped, \par / \line / \tab / \'hh / \uN honoured.
 * - .xls .ppt: no well-kept pure-JS reader exists; they raise {@link UnsupportedFormatError}.
 */

import { checkZipExpansion } from './zipcheck.js';

/** A format svc has no converter for; the caller shows a note instead. */
export class UnsupportedFormatError extends Error {}

/** Zip-based formats, whose expansion is checked before they are opened. */
const ZIPPED = new Set(['.docx', '.xlsx', '.pptx', '.odt', '.odp', '.ods', '.epub']);

/** What a zip-based document may expand to, all parts together (default 256 MiB). */
export const DEFAULT_MAX_EXPANDED = 256 * 1024 * 1024;

/**
 * Convert `data` (a file with extension `ext`, lower case with the dot) to markdown. A zipped
 * format whose parts expand to more than `maxExpanded` bytes is refused before it is opened.
 */
export async function convertToMarkdown(ext: string, data: Uint8Array, maxExpanded = DEFAULT_MAX_EXPANDED): Promise<string> {
  if (ZIPPED.has(ext)) checkZipExpansion(data, maxExpanded);
  switch (ext) {
    case '.pdf': return pdf(data);
    case '.docx': return docx(data);
    case '.doc': return doc(data);
    case '.xlsx': return xlsx(data);
    case '.pptx': return pptx(data);
    case '.odt': case '.odp': case '.ods': return odf(data, ext);
    case '.epub': return epub(data);
    case '.rtf': return rtfToText(Buffer.from(data).toString('latin1'));
    default: throw new UnsupportedFormatError(`no converter for ${ext} files`);
  }
}

// ---------------------------------------------------------------- pdf, doc, docx, xlsx

async function pdf(data: Uint8Array): Promise<string> {
  const { extractText, getDocumentProxy } = await import('unpdf');
  // pdf.js takes ownership of (detaches) the buffer it is given: hand it a copy.
  const doc = await getDocumentProxy(new Uint8Array(data), { isEvalSupported: false, useSystemFonts: false, verbosity: 0 });
  try {
    const { text } = await extractText(doc, { mergePages: false });
    return text.map((page) => page.trim()).filter((page) => page !== '').join('\n\n---\n\n') + '\n';
  } finally {
    await doc.destroy();
  }
}

async function docx(data: Uint8Array): Promise<string> {
  const mammoth = (await import('mammoth')).default as unknown as {
    convertToMarkdown(input: { buffer: Buffer }, options: object): Promise<{ value: string }>;
    images: { imgElement(f: () => Promise<{ src: string }>): unknown };
  };
  // Images would be inlined as data: URIs; a text view keeps only their alt text.
  const result = await mammoth.convertToMarkdown({ buffer: Buffer.from(data) }, {
    convertImage: mammoth.images.imgElement(() => Promise.resolve({ src: '' })),
  });
  return result.value.replace(/!\[([^\]]*)\]\(\)/g, '$1');
}

async function doc(data: Uint8Array): Promise<string> {
  const { default: WordExtractor } = await import('word-extractor');
  const document = await new WordExtractor().extract(Buffer.from(data));
  return document.getBody().replace(/\r\n?/g, '\n').trim() + '\n';
}

/** One markdown table from rows of cell strings (the first row is the header). */
export function markdownTable(rows: string[][]): string {
  const width = Math.max(1, ...rows.map((r) => r.length));
  const cell = (s: string | undefined) => (s ?? '').replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ').trim();
  const line = (r: string[]) => '| ' + Array.from({ length: width }, (_, i) => cell(r[i])).join(' | ') + ' |';
  const [head = [], ...body] = rows;
  return [line(head), '| ' + Array(width).fill('---').join(' | ') + ' |', ...body.map(line)].join('\n');
}

/** Rows without trailing empty cells, and without trailing empty rows. */
function trimRows(rows: string[][]): string[][] {
  const out = rows.map((r) => {
    let n = r.length;
    while (n > 0 && (r[n - 1] ?? '').trim() === '') n--;
    return r.slice(0, n);
  });
  while (out.length > 0 && out[out.length - 1]!.length === 0) out.pop();
  return out;
}

async function xlsx(data: Uint8Array): Promise<string> {
  const { default: ExcelJS } = await import('exceljs');
  const book = new ExcelJS.Workbook();
  await book.xlsx.load(Buffer.from(data) as unknown as ArrayBuffer);
  const parts: string[] = [];
  book.eachSheet((sheet) => {
    const rows: string[][] = [];
    sheet.eachRow({ includeEmpty: true }, (row, n) => {
      const cells: string[] = [];
      row.eachCell({ includeEmpty: true }, (c, col) => { cells[col - 1] = c.text ?? ''; });
      rows[n - 1] = Array.from(cells, (c) => c ?? '');
    });
    const table = trimRows(Array.from(rows, (r) => r ?? []));
    parts.push(`## ${sheet.name}\n\n` + (table.length > 0 ? markdownTable(table) : '(empty sheet)'));
  });
  return parts.join('\n\n') + '\n';
}

// ---------------------------------------------------------------- zip + XML formats

type XmlNode = Record<string, unknown> & { '#text'?: string; ':@'?: Record<string, string> };

async function xmlParser() {
  const { XMLParser } = await import('fast-xml-parser');
  return new XMLParser({
    preserveOrder: true, ignoreAttributes: false, attributeNamePrefix: '', trimValues: false,
    processEntities: true, htmlEntities: true, parseTagValue: false, parseAttributeValue: false,
  });
}

async function openZip(data: Uint8Array) {
  const { default: JSZip } = await import('jszip');
  return JSZip.loadAsync(data);
}

const tagOf = (n: XmlNode): string | undefined => Object.keys(n).find((k) => k !== ':@' && k !== '#text');
const childrenOf = (n: XmlNode, tag: string): XmlNode[] => (n[tag] as XmlNode[] | undefined) ?? [];
const localName = (tag: string) => tag.slice(tag.indexOf(':') + 1);

/** Inline text of a subtree: tabs, line breaks and ODF's repeated spaces honoured. */
function textOf(nodes: XmlNode[]): string {
  let out = '';
  for (const n of nodes) {
    if (n['#text'] !== undefined) { out += String(n['#text']); continue; }
    const tag = tagOf(n);
    if (tag === undefined) continue;
    const local = localName(tag);
    if (tag === 'text:s') out += ' '.repeat(Math.min(1000, Number(n[':@']?.['text:c'] ?? 1) || 1));
    else if (local === 'tab') out += '\t';
    else if (local === 'br' || tag === 'text:line-break') out += '\n';
    else if (tag === 'text:note' || tag === 'script' || tag === 'style') continue;
    else out += textOf(childrenOf(n, tag));
  }
  return out;
}

/**
 * Block-level text of a subtree: `block(tag, node)` says whether a tag is a paragraph (a string
 * prefix such as '' or '## ') or not (undefined: look inside it).
 */
function blocksOf(nodes: XmlNode[], block: (tag: string, node: XmlNode) => string | undefined, out: string[] = []): string[] {
  for (const n of nodes) {
    const tag = tagOf(n);
    if (tag === undefined) continue;
    const prefix = block(tag, n);
    if (prefix === undefined) { blocksOf(childrenOf(n, tag), block, out); continue; }
    const text = textOf(childrenOf(n, tag)).replace(/[ \t]+\n/g, '\n').trim();
    if (text !== '') out.push(prefix + text);
  }
  return out;
}

const naturalOrder = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });

async function pptx(data: Uint8Array): Promise<string> {
  const zip = await openZip(data);
  const parser = await xmlParser();
  const slides = Object.keys(zip.files).filter((f) => /^ppt\/slides\/slide\d+\.xml$/.test(f)).sort(naturalOrder);
  const parts: string[] = [];
  for (const [i, name] of slides.entries()) {
    const xml = parser.parse(await zip.file(name)!.async('string')) as XmlNode[];
    const paras = blocksOf(xml, (tag) => (tag === 'a:p' ? '' : undefined));
    parts.push(`## Slide ${i + 1}\n\n` + paras.join('\n\n'));
  }
  return parts.join('\n\n') + '\n';
}

/** ODF text, presentation and spreadsheet documents: their content.xml. */
async function odf(data: Uint8Array, ext: string): Promise<string> {
  const zip = await openZip(data);
  const content = zip.file('content.xml');
  if (!content) throw new Error('not an OpenDocument file: content.xml is missing');
  const xml = (await xmlParser()).parse(await content.async('string')) as XmlNode[];
  if (ext === '.ods') return odsTables(xml).join('\n\n') + '\n';
  if (ext === '.odp') {
    const parts: string[] = [];
    let slide = 0;
    blocksOf(xml, (tag, node) => {
      if (tag !== 'draw:page') return undefined;
      const paras = blocksOf(childrenOf(node, tag), (t) => (t === 'text:p' || t === 'text:h' ? '' : undefined));
      parts.push(`## Slide ${++slide}\n\n` + paras.join('\n\n'));
      return undefined;
    }, []);
    // blocksOf above walks into each page after visiting it: only the pages' own collection counts.
    return parts.join('\n\n') + '\n';
  }
  return blocksOf(xml, (tag, node) => {
    if (tag === 'text:h') return '#'.repeat(Math.min(6, Math.max(1, Number(node[':@']?.['text:outline-level'] ?? 1) || 1))) + ' ';
    if (tag === 'text:p') return '';
    return undefined;
  }).join('\n\n') + '\n';
}

/** ODF spreadsheet tables as markdown tables (repeated rows and cells expanded, up to a bound). */
function odsTables(xml: XmlNode[]): string[] {
  const out: string[] = [];
  const MAX_REPEAT = 1000;
  const visit = (nodes: XmlNode[]) => {
    for (const n of nodes) {
      const tag = tagOf(n);
      if (tag === undefined) continue;
      if (tag !== 'table:table') { visit(childrenOf(n, tag)); continue; }
      const rows: string[][] = [];
      const rowsOf = (ns: XmlNode[]) => {
        for (const r of ns) {
          const rt = tagOf(r);
          if (rt === 'table:table-row') {
            const cells: string[] = [];
            for (const c of childrenOf(r, rt)) {
              const ct = tagOf(c);
              if (ct !== 'table:table-cell' && ct !== 'table:covered-table-cell') continue;
              const text = blocksOf(childrenOf(c, ct), (t) => (t === 'text:p' ? '' : undefined)).join(' ');
              const times = Math.min(MAX_REPEAT, Number(c[':@']?.['table:number-columns-repeated'] ?? 1) || 1);
              for (let i = 0; i < times; i++) cells.push(text);
            }
            const times = Math.min(MAX_REPEAT, Number(r[':@']?.['table:number-rows-repeated'] ?? 1) || 1);
            for (let i = 0; i < times; i++) rows.push(cells);
          } else if (rt !== undefined) rowsOf(childrenOf(r, rt));
        }
      };
      rowsOf(childrenOf(n, tag));
      const table = trimRows(rows);
      out.push(`## ${n[':@']?.['table:name'] ?? 'Sheet'}\n\n` + (table.length > 0 ? markdownTable(table) : '(empty sheet)'));
    }
  };
  visit(xml);
  return out;
}

/** An EPUB: the chapters of its spine, in order, as markdown paragraphs and headings. */
async function epub(data: Uint8Array): Promise<string> {
  const zip = await openZip(data);
  const parser = await xmlParser();
  const find = (nodes: XmlNode[], name: string, out: XmlNode[] = []): XmlNode[] => {
    for (const n of nodes) {
      const tag = tagOf(n);
      if (tag === undefined) continue;
      if (localName(tag) === name) out.push(n);
      find(childrenOf(n, tag), name, out);
    }
    return out;
  };
  const container = zip.file('META-INF/container.xml');
  if (!container) throw new Error('not an EPUB: META-INF/container.xml is missing');
  const rootPath = find(parser.parse(await container.async('string')) as XmlNode[], 'rootfile')[0]?.[':@']?.['full-path'];
  const opfFile = rootPath === undefined ? null : zip.file(rootPath);
  if (!rootPath || !opfFile) throw new Error('EPUB package document not found');
  const opf = parser.parse(await opfFile.async('string')) as XmlNode[];
  const dir = rootPath.includes('/') ? rootPath.slice(0, rootPath.lastIndexOf('/') + 1) : '';
  const hrefs = new Map(find(opf, 'item').map((n) => [n[':@']?.['id'], n[':@']?.['href']] as const));
  const parts: string[] = [];
  for (const ref of find(opf, 'itemref')) {
    const href = hrefs.get(ref[':@']?.['idref']);
    const file = href === undefined ? null : zip.file(dir + decodeURIComponent(href));
    if (!file) continue;
    const html = parser.parse(await file.async('string')) as XmlNode[];
    parts.push(...blocksOf(html, (tag) => {
      const m = /^h([1-6])$/.exec(tag);
      if (m) return '#'.repeat(Number(m[1])) + ' ';
      return tag === 'p' || tag === 'li' || tag === 'pre' || tag === 'blockquote' ? '' : undefined;
    }));
  }
  return parts.join('\n\n') + '\n';
}

// ---------------------------------------------------------------- rtf

/** Destinations whose content is not document text. */
const RTF_SKIP = new Set([
  'fonttbl', 'colortbl', 'stylesheet', 'info', 'pict', 'object', 'header', 'footer', 'headerl', 'headerr',
  'footerl', 'footerr', 'footnote', 'listtable', 'listoverridetable', 'rsidtbl', 'generator', 'xmlnstbl', 'themedata',
  'colorschememapping', 'latentstyles', 'datastore', 'filetbl', 'revtbl', 'pntext', 'pntxta', 'pntxtb',
]);

/** The text of an RTF document (code page 1252 assumed for \'hh escapes). */
export function rtfToText(rtf: string): string {
  if (!rtf.startsWith('{\\rtf')) throw new Error('not an RTF document');
  const decoder = new TextDecoder('windows-1252');
  let out = '';
  // Per group: whether its content is skipped, and how many characters follow a \uN (\ucN).
  const stack: { skip: boolean; uc: number }[] = [];
  let state = { skip: false, uc: 1 };
  let pendingSkip = 0;
  const emit = (s: string) => {
    if (state.skip) return;
    if (pendingSkip > 0) { const n = Math.min(pendingSkip, s.length); pendingSkip -= n; s = s.slice(n); }
    out += s;
  };
  for (let i = 0; i < rtf.length;) {
    const ch = rtf[i]!;
    if (ch === '{') { stack.push(state); state = { ...state }; i++; continue; }
    if (ch === '}') { state = stack.pop() ?? state; pendingSkip = 0; i++; continue; }
    if (ch === '\r' || ch === '\n') { i++; continue; }
    if (ch !== '\\') { emit(ch); i++; continue; }
    const next = rtf[i + 1];
    if (next === undefined) break;
    if (next === '\'') {
      const byte = Number.parseInt(rtf.slice(i + 2, i + 4), 16);
      if (!Number.isNaN(byte)) emit(decoder.decode(Uint8Array.of(byte)));
      i += 4;
      continue;
    }
    if (next === '*') { state.skip = true; i += 2; continue; }
    if (!/[a-zA-Z]/.test(next)) {
      // Control symbols: escaped braces and backslash, ~ (non-breaking space), - and _ (hyphens).
      if (next === '\\' || next === '{' || next === '}') emit(next);
      else if (next === '~') emit('\u00a0');
      else if (next === '_') emit('-');
      else if (next === '\n' || next === '\r') emit('\n');
      i += 2;
      continue;
    }
    const m = /^([a-zA-Z]{1,32})(-?\d{1,10})? ?/.exec(rtf.slice(i + 1, i + 50))!;
    i += 1 + m[0].length;
    const word = m[1]!;
    const arg = m[2] === undefined ? undefined : Number(m[2]);
    if (RTF_SKIP.has(word)) state.skip = true;
    else if (word === 'par' || word === 'sect' || word === 'page') emit('\n\n');
    else if (word === 'line') emit('\n');
    else if (word === 'tab') emit('\t');
    else if (word === 'cell') emit(' | ');
    else if (word === 'row') emit('\n');
    else if (word === 'uc' && arg !== undefined) state.uc = arg;
    else if (word === 'u' && arg !== undefined) {
      emit(String.fromCharCode(arg < 0 ? arg + 65536 : arg));
      pendingSkip = state.uc;
    } else if (word === 'emdash') emit('\u2014');
    else if (word === 'endash') emit('\u2013');
    else if (word === 'bullet') emit('\u2022');
    else if (word === 'lquote') emit('\u2018');
    else if (word === 'rquote') emit('\u2019');
    else if (word === 'ldblquote') emit('\u201c');
    else if (word === 'rdblquote') emit('\u201d');
  }
  return out.replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim() + '\n';
}
