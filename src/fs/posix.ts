/**
 * @module fs/posix
 * Methods a POSIX client of the file tree needs beyond the spec's: attributes (mode, owner, times,
 * symbolic links), directory entries with those attributes, byte ranges of a file or version, and
 * creating a symbolic link, and uploads in chunk-sized parts committed as one version (a file of
 * any size, never held whole in memory). `svc mount --remote-url` uses them to mount a daemon over
 * RPC; any client may.
 */
import { z } from 'zod';
import { defineMethod, type ApiOf } from '../core/method.js';
import { bytesParam, datetimeParam } from '../core/wire.js';
import { normalizeFilePath, normalizePath } from '../core/paths.js';
import { changedOf, hasInline, type EntryRecord } from './records.js';
import { CHUNK_SIZE, type FsService } from './service.js';
import { outermostMissing, type Permissions } from '../auth/permissions.js';
import type { OperationContext } from '../core/context.js';
import { ValidationError } from '../core/errors.js';
import type { Uploads } from './uploads.js';

/** One entry with its POSIX attributes (mode, uid and gid are null when never set). */
export interface PosixEntry {
  path: string;
  kind: 'file' | 'dir' | 'symlink';
  size: number;
  mode: number | null;
  uid: number | null;
  gid: number | null;
  version: number | null;
  etag: string | null;
  created_at: Date;
  modified_at: Date;
  /** The change time (POSIX ctime): the last change of the entry itself, which nothing sets back. */
  changed_at: Date;
}

export function posixEntry(path: string, rec: EntryRecord): PosixEntry {
  const attrs = { mode: rec.mode ?? null, uid: rec.uid ?? null, gid: rec.gid ?? null };
  const times = { created_at: new Date(rec.created), modified_at: new Date(rec.modified), changed_at: new Date(changedOf(rec)) };
  return rec.kind === 'dir'
    ? { path, kind: 'dir', size: 0, ...attrs, version: null, etag: null, ...times }
    : { path, kind: rec.symlink ? 'symlink' : 'file', size: rec.size, ...attrs, version: rec.version, etag: rec.etag, ...times };
}

/**
 * Bytes [offset, offset + length) of a file's current content or of one version, copied out of the
 * store's chunks (only the pieces they lie in: a small range of a large file copies little).
 */
export function readRange(fs: FsService, path: string, offset: number, length: number, version?: number): Buffer {
  const rec = version === undefined ? fs.file(normalizeFilePath(path)) : fs.versionRecord(path, version);
  const end = Math.min(rec.size, offset + length);
  if (offset >= end) return Buffer.alloc(0);
  if (hasInline(rec)) return fs.content(rec).subarray(offset, end);
  const out = Buffer.allocUnsafe(end - offset);
  for (let i = Math.floor(offset / CHUNK_SIZE), at = 0; at < out.length; i++) {
    const start = i * CHUNK_SIZE;
    const from = Math.max(offset - start, 0);
    const n = fs.chunkRangeInto(rec.chunks[i]!, from, Math.min(end - start, CHUNK_SIZE), out, at);
    // Every chunk but the last is CHUNK_SIZE bytes: a shorter one is a damaged store (-32603).
    if (n !== Math.min(end - start, CHUNK_SIZE) - from) throw new Error(`chunk ${i} of ${path} is shorter than its place in the file`);
    at += n;
  }
  return out;
}

const uint32 = z.number().int().min(0).max(0xffffffff);

/**
 * The POSIX methods bound to a service instance. With `perms`, the same rules as the fs methods:
 * stat and read_range need read, readdir shows only what the caller may see, set_attributes
 * needs write, symlink is a create (write on the parent; the creator owns it).
 */
export function posixMethods(fs: FsService, perms?: Permissions, uploads?: Uploads) {
  const below = (dir: string) => fs.list(dir, { recursive: true }).map((e) => e.path);
  /** The checks of `write` (read-only mounts, write on the file or its parent); the path a create makes. */
  const writable = (ctx: OperationContext, p: string): string | undefined => {
    fs.checkChange('write', p);
    const created = perms?.enforcing ? outermostMissing(p, (q) => fs.exists(q)) : undefined;
    perms?.requireCreate(ctx, p, created === undefined);
    return created;
  };
  const uploadMethods = uploads === undefined ? [] : [
    defineMethod({
      name: 'upload_begin', access: 'user',
      description: 'Start writing a file in parts (upload_part, then upload_commit: one new version). Checked as write is.',
      params: z.strictObject({ path: z.string() }),
      handler: ({ path }, ctx) => {
        const p = normalizeFilePath(path);
        writable(ctx, p);
        // Refused now rather than after every part has been sent.
        if (fs.isDirectory(p)) throw new ValidationError(`Is a directory: ${p}`, { path: p, errno: 'EISDIR' });
        return { upload_id: uploads.begin(p, ctx) };
      },
    }),
    defineMethod({
      name: 'upload_part', access: 'user',
      description: `Part \`index\` of an upload: bytes [index * ${CHUNK_SIZE}, ...), at most ${CHUNK_SIZE} of them; every part but the last is full.`,
      params: z.strictObject({ upload_id: z.string(), index: z.number().int().min(0), content: bytesParam }),
      handler: ({ upload_id, index, content }, ctx) => uploads.part(upload_id, ctx, index, content),
    }),
    defineMethod({
      name: 'upload_commit', access: 'user',
      description: 'Store the parts of an upload as the file\'s next version (size must match them), with optional mode, owner and modification time.',
      params: z.strictObject({
        upload_id: z.string(), size: z.number().int().min(0), if_match: z.string().optional(),
        mode: z.number().int().min(0).max(0o7777).optional(), uid: uint32.optional(), gid: uint32.optional(),
        modified_at: datetimeParam.optional(),
      }),
      handler: async ({ upload_id, size, if_match, mode, uid, gid, modified_at }, ctx) => {
        const created = writable(ctx, uploads.path(upload_id, ctx));
        return uploads.finish(upload_id, ctx, size, async (p, pieces) => {
          const result = await fs.writeChunks(p, pieces, {
            ifMatch: if_match, attributes: { mode, uid, gid }, modified: modified_at?.getTime(),
          });
          if (created !== undefined) {
            await perms!.grantOwner(ctx, p);
            if (created !== p) await perms!.grantOwner(ctx, created);
          }
          return result;
        });
      },
    }),
    defineMethod({
      name: 'upload_abort', access: 'user', description: 'Drop an unfinished upload and its parts.',
      params: z.strictObject({ upload_id: z.string() }),
      handler: async ({ upload_id }, ctx) => (await uploads.abort(upload_id, ctx), { success: true as const }),
    }),
  ] as const;
  return [
    defineMethod({
      name: 'stat', access: 'user', description: 'A file, directory or symbolic link with its POSIX attributes, `{path, kind, size, mode, uid, gid, version, etag, created_at, modified_at, changed_at}` (`changed_at`: the ctime, the last change of the entry itself, which setting `modified_at` does not move back); null when absent.',
      params: z.strictObject({ path: z.string() }),
      handler: ({ path }, ctx) => {
        const p = normalizePath(path);
        if (perms?.applies(ctx) && !perms.can(ctx, 'read', p)) {
          // A directory with something readable below it is visible (as in list); anything else needs read.
          if (!(fs.isDirectory(p) && perms.visibility(ctx, below)!(p, true))) perms.require(ctx, 'read', p);
        }
        const rec = fs.stat(p);
        return rec ? posixEntry(p, rec) : null;
      },
    }),
    defineMethod({
      name: 'readdir', access: 'user', description: 'The direct children of a directory with their POSIX attributes, sorted by path.',
      params: z.strictObject({ path: z.string().default('/') }),
      handler: ({ path }, ctx) => {
        const visible = perms?.visibility(ctx, below);
        return fs.list(path, { recursive: false }).flatMap((e) => {
          if (visible && !visible(e.path, e.is_directory)) return [];
          const p = e.is_directory ? e.path.slice(0, -1) : e.path;
          const rec = fs.stat(p);
          return rec ? [posixEntry(p, rec)] : [];
        });
      },
    }),
    defineMethod({
      name: 'read_range', access: 'user', description: 'Bytes [offset, offset+length) of a file, or of one version of it.',
      params: z.strictObject({
        path: z.string(), offset: z.number().int().min(0), length: z.number().int().min(0).max(64 * CHUNK_SIZE),
        version: z.number().int().min(1).optional(),
      }),
      handler: ({ path, offset, length, version }, ctx) => {
        perms?.require(ctx, 'read', normalizeFilePath(path));
        return readRange(fs, path, offset, length, version);
      },
    }),
    defineMethod({
      name: 'set_attributes', access: 'user',
      description: 'Change mode, owner or modification time of a file or directory (no new version).',
      params: z.strictObject({
        path: z.string(), mode: z.number().int().min(0).max(0o7777).optional(), uid: uint32.optional(), gid: uint32.optional(),
        modified_at: datetimeParam.optional(),
      }),
      handler: async ({ path, mode, uid, gid, modified_at }, ctx) => {
        const p = normalizeFilePath(path);
        perms?.require(ctx, 'write', p);
        return posixEntry(p, await fs.setAttributes(p, { mode, uid, gid, modified: modified_at?.getTime() }));
      },
    }),
    defineMethod({
      name: 'symlink', access: 'user', description: 'Create a symbolic link at path pointing to target (a new file, like write with if_none_match).',
      params: z.strictObject({
        path: z.string(), target: z.string().min(1).max(4095), mode: z.number().int().min(0).max(0o7777).optional(),
        uid: uint32.optional(), gid: uint32.optional(),
      }),
      handler: async ({ path, target, mode, uid, gid }, ctx) => {
        const p = normalizeFilePath(path);
        const created = perms?.enforcing ? outermostMissing(p, (q) => fs.exists(q)) : undefined;
        perms?.requireCreate(ctx, p, created === undefined);
        const result = await fs.write(path, Buffer.from(target), {
          ifNoneMatch: true, symlink: true, attributes: { mode, uid, gid },
        });
        if (created !== undefined) {
          await perms!.grantOwner(ctx, p);
          if (created !== p) await perms!.grantOwner(ctx, created);
        }
        return result;
      },
    }),
    ...uploadMethods,
  ] as const;
}

export type PosixApi = ApiOf<ReturnType<typeof posixMethods>>;
