/**
 * @module views/names
 * Names of the virtual parsed views (upstream-behaviour §2.5): `/d/report.pdf` has the view
 * `/d/report_parsed.pdf.md`, its text as markdown. Pure string functions, cheap enough for every
 * listing; the converters themselves live elsewhere and are loaded only when a view is read.
 */

/** Extensions (lower case, with the dot) whose files have a parsed view. */
export const PARSEABLE_EXTENSIONS: ReadonlySet<string> = new Set([
  '.pdf', '.docx', '.doc', '.xlsx', '.xls', '.pptx', '.ppt', '.odt', '.ods', '.odp', '.rtf', '.epub',
]);

const MARK = '_parsed';
const SUFFIX = '.md';

/**
 * The extension of a file name as upstream's `os.path.splitext` sees it (`.pdf` of `a.b.pdf`;
 * none for `.pdf` alone, a hidden file without extension), or undefined.
 */
function splitExt(name: string): { base: string; ext: string } | undefined {
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return undefined;
  // Leading dots belong to the base: `..pdf` has no extension either.
  let lead = 0;
  while (lead < name.length && name[lead] === '.') lead++;
  if (dot < lead) return undefined;
  return { base: name.slice(0, dot), ext: name.slice(dot) };
}

/** The parseable extension of a path (lower case), or undefined. */
export function parseableExt(path: string): string | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const split = splitExt(name);
  if (!split) return undefined;
  const ext = split.ext.toLowerCase();
  return PARSEABLE_EXTENSIONS.has(ext) ? ext : undefined;
}

/** The view path of a file path (`/d/a.pdf` → `/d/a_parsed.pdf.md`), or undefined if it is not parseable. */
export function viewPathOf(path: string): string | undefined {
  const slash = path.lastIndexOf('/');
  const split = splitExt(path.slice(slash + 1));
  if (!split || !PARSEABLE_EXTENSIONS.has(split.ext.toLowerCase())) return undefined;
  return path.slice(0, slash + 1) + split.base + MARK + split.ext + SUFFIX;
}

/**
 * The original a view path names (`/d/a_parsed.pdf.md` → `/d/a.pdf`), or undefined when the
 * path is not shaped like a view of a parseable file. Whether that original exists is the
 * caller's question.
 */
export function originalPathOf(path: string): string | undefined {
  if (!path.endsWith(SUFFIX)) return undefined;
  const slash = path.lastIndexOf('/');
  const name = path.slice(slash + 1, -SUFFIX.length);
  const split = splitExt(name);
  if (!split || !PARSEABLE_EXTENSIONS.has(split.ext.toLowerCase()) || !split.base.endsWith(MARK)) return undefined;
  const base = split.base.slice(0, -MARK.length);
  if (base === '' || base.endsWith('/')) return undefined;
  const original = path.slice(0, slash + 1) + base + split.ext;
  // Round trip: only names this module would have made are views.
  return viewPathOf(original) === path ? original : undefined;
}
