/**
 * @module fs/records
 * What the fs service keeps in the metadata store, and how keys are laid out.
 *
 * Entries are keyed `parent + SEP + name` so the direct children of a directory are one
 * contiguous range and a whole subtree is two ranges (the directory's own children, then every
 * key whose parent starts with `dir/`).
 */
import { isAscii } from 'node:buffer';
import { parentOf, baseName } from '../core/paths.js';

// U+001F: never in a valid path (control characters are refused), below every character a path
// may hold, and — unlike NUL — encoded the same way at any key length by lmdb-js's ordered-binary
// codec, which reserves bytes 0–4 as type markers (with NUL, keys over 64 characters sorted apart).
export const SEP = '\u001f';
/** The character after {@link SEP}: `prefix + SEP` up to `prefix + SEP_END` is one contiguous range. */
export const SEP_END = '\u0020';

interface EntryBase {
  /** ms since epoch */
  created: number;
  modified: number;
  /**
   * The change time (POSIX ctime, ms): when the entry itself last changed — content, attributes,
   * name — which, unlike `modified`, nothing can set back. Kept only where it differs from
   * `modified` (read it with {@link changedOf}).
   */
  changed?: number;
  /** POSIX mode bits without the type (0o644 / 0o755 by default), for the FUSE face. */
  mode?: number;
  uid?: number;
  gid?: number;
}

/** An entry's change time (ctime). */
export function changedOf(rec: EntryBase): number {
  return rec.changed ?? rec.modified;
}

/** The `changed` field of a record whose mtime is `modified`, changed at `now`. */
export function changedField(modified: number, now: number): { changed?: number } {
  return modified === now ? {} : { changed: now };
}

/** The POSIX attributes an entry may carry (set through the FUSE face). */
export type EntryAttributes = Pick<EntryBase, 'mode' | 'uid' | 'gid'>;

export interface FileRecord extends EntryBase {
  kind: 'file';
  /** A symbolic link: the content is the link target (git's mode 120000 model). */
  symlink?: boolean;
  version: number;
  etag: string;
  size: number;
  /** Chunk hashes in order; their concatenation is the content. Empty when the content is inline. */
  chunks: string[];
  /**
   * The content itself, for a small file kept in its own entry row (no chunk row, no reference
   * count; FsService's module note): ASCII content as a string, anything else as base64. Strings,
   * not bytes: decoding a byte field allocates an ArrayBuffer per row, and listing 10,000 small
   * files then cost twice as long, mostly in the garbage collector. Read with {@link inlineOf}.
   */
  inline?: string;
  inline64?: string;
  contentType: string;
  /** How the current version came about when not a plain `write` (see {@link VersionRecord.source}). */
  source?: string;
  /** When the current version was committed, when that differs from `modified` (FUSE mtimes, utimes). */
  versionAt?: number;
}

export interface DirRecord extends EntryBase {
  kind: 'dir';
}

export type EntryRecord = FileRecord | DirRecord;

/**
 * One row per superseded version of a file. The current version lives in the file's entry itself
 * ({@link currentVersion}): a write of a new file then touches one metadata row, not two. Entries
 * and version rows each own one reference on every chunk they list (none when the content is inline).
 */
export interface VersionRecord {
  version: number;
  etag: string;
  size: number;
  chunks: string[];
  /** The content of a small version, kept in the row itself (as {@link FileRecord.inline}). */
  inline?: string;
  inline64?: string;
  modified: number;
  contentType: string;
  /** How the version came about: `write`, or `rollback` of version N. */
  source: string;
}

/** The current version of a file, as a version row would hold it. */
export function currentVersion(rec: FileRecord): VersionRecord {
  return {
    version: rec.version, etag: rec.etag, size: rec.size, chunks: rec.chunks, modified: rec.versionAt ?? rec.modified,
    contentType: rec.contentType, source: rec.source ?? 'write', ...inlineFields(rec),
  };
}

/** The fields of a record that hold inline content ({@link FileRecord.inline}), to copy it to another record. */
export function inlineFields(rec: InlineContent): InlineContent {
  return rec.inline !== undefined ? { inline: rec.inline } : rec.inline64 !== undefined ? { inline64: rec.inline64 } : {};
}

type InlineContent = Pick<FileRecord, 'inline' | 'inline64'>;

/** Whether the record keeps its content inline rather than in chunks. */
export function hasInline(rec: InlineContent): boolean {
  return rec.inline !== undefined || rec.inline64 !== undefined;
}

/** The content a record keeps inline (a new Buffer), or undefined when it lives in chunks. */
export function inlineOf(rec: InlineContent): Buffer | undefined {
  if (rec.inline !== undefined) return Buffer.from(rec.inline, 'latin1');
  if (rec.inline64 !== undefined) return Buffer.from(rec.inline64, 'base64');
  return undefined;
}

/**
 * The fields that keep `bytes` inline when they fit in `max` characters (ASCII as is, other
 * content as base64, a third larger), else undefined.
 */
export function encodeInline(bytes: Uint8Array, max: number): InlineContent | undefined {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length <= max && isAscii(buf)) return { inline: buf.toString('latin1') };
  if (Math.ceil(buf.length / 3) * 4 <= max) return { inline64: buf.toString('base64') };
  return undefined;
}

export function entryKey(path: string): string {
  return parentOf(path) + SEP + baseName(path);
}

/** Path of an entry key. */
export function keyPath(key: string): string {
  const i = key.indexOf(SEP);
  const parent = key.slice(0, i);
  return (parent === '/' ? '' : parent) + '/' + key.slice(i + 1);
}

/** Key range of the direct children of `dir`. */
export function childrenRange(dir: string): { start: string; end: string } {
  return { start: dir + SEP, end: dir + SEP_END };
}

/** Key ranges covering every entry below `dir` (children, grandchildren, …), in key order. */
export function subtreeRanges(dir: string): { start: string; end: string }[] {
  // Every key starts with its parent path; '/' + 1 === '0', so parents starting with `dir/` sort
  // in [dir/, dir0). For the root, that is every key.
  if (dir === '/') return [{ start: '/', end: '0' }];
  return [childrenRange(dir), { start: dir + '/', end: dir + '0' }];
}

const VERSION_DIGITS = 10;

export function versionKey(path: string, version: number): string {
  return path + SEP + String(version).padStart(VERSION_DIGITS, '0');
}

export function versionsRange(path: string): { start: string; end: string } {
  return { start: path + SEP, end: path + SEP_END };
}
