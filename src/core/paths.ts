/**
 * @module core/paths
 * The one place virtual paths are validated and normalised (WIRE.md "Paths").
 * Every face calls {@link normalizePath} before a path reaches a service.
 */
import { InvalidPathError } from './errors.js';

/** Longest component in UTF-8 bytes, as on common local file systems (NAME_MAX). */
export const MAX_NAME_BYTES = 255;
/**
 * Longest whole path in UTF-8 bytes. Not PATH_MAX (4096): the store keys every entry by its path,
 * and every version by its path and 11 bytes more, and LMDB takes keys of at most 1,978 bytes. A
 * longer path would be refused only when its key is written (a mount's queued mkdir or close was
 * then answered and lost at its commit), so it is refused here, by every face alike.
 */
export const MAX_PATH_BYTES = 1900;

// C0 controls, DEL and C1 controls: NUL, newline, tab… are never part of a name.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Normalise a path: trim, add a leading `/`, collapse `//`, drop a trailing `/`.
 * Rejects (-32002) empty paths, control characters, `.`/`..` segments, components with leading or
 * trailing spaces, and over-long names. Returns `/` for the root; callers that need a file path use
 * {@link normalizeFilePath}.
 */
export function normalizePath(input: string): string {
  if (typeof input !== 'string') throw new InvalidPathError('Path must be a string');
  const trimmed = input.trim();
  if (trimmed === '') throw new InvalidPathError('Path cannot be empty or whitespace-only', input);
  if (CONTROL.test(trimmed)) throw new InvalidPathError('Path contains control characters', input);
  const parts = trimmed.split('/').filter((p) => p !== '');
  for (const part of parts) {
    if (part === '.' || part === '..') throw new InvalidPathError(`Path contains '${part}' segment: ${trimmed}`, input);
    if (part.trim() !== part) throw new InvalidPathError(`Path component has leading or trailing spaces: '${part}'`, input);
    if (Buffer.byteLength(part) > MAX_NAME_BYTES) {
      throw new InvalidPathErrorWithErrno(`Path component longer than ${MAX_NAME_BYTES} bytes`, input, 'ENAMETOOLONG');
    }
  }
  const out = '/' + parts.join('/');
  if (Buffer.byteLength(out) > MAX_PATH_BYTES) {
    throw new InvalidPathErrorWithErrno(`Path longer than ${MAX_PATH_BYTES} bytes`, input, 'ENAMETOOLONG');
  }
  return out;
}

/** Like {@link normalizePath} but `/` is refused: files (and named directories) are never the root. */
export function normalizeFilePath(input: string): string {
  const p = normalizePath(input);
  if (p === '/') throw new InvalidPathError('The root directory is not a valid path here', input);
  return p;
}

class InvalidPathErrorWithErrno extends InvalidPathError {
  constructor(message: string, path: string, errno: string) {
    super(message, path);
    (this.data as Record<string, unknown>).errno = errno;
  }
}

/** Parent directory of a normalised path (`/` for top-level entries and for `/` itself). */
export function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

/** Last component of a normalised path (`''` for `/`). */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** Every ancestor directory of a normalised path, outermost first, excluding `/`. */
export function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  let i = path.indexOf('/', 1);
  while (i !== -1) {
    out.push(path.slice(0, i));
    i = path.indexOf('/', i + 1);
  }
  return out;
}

/** True when `path` is `dir` itself or lies below it. */
export function isWithin(path: string, dir: string): boolean {
  if (dir === '/') return true;
  return path === dir || path.startsWith(dir + '/');
}

/** `path` relative to `dir` (no leading slash); `dir` must contain `path`. */
export function relativeTo(path: string, dir: string): string {
  if (dir === '/') return path.slice(1);
  return path === dir ? '' : path.slice(dir.length + 1);
}
