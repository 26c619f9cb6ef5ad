/**
 * @module fs/methods
 * The file, directory, search and version methods (spec §4.3, §4.4, §4.12), with the spec's
 * defaults and WIRE.md's result shapes.
 */
import { z } from 'zod';
import { defineMethod, type ApiOf } from '../core/method.js';
import { bytesParam } from '../core/wire.js';
import type { FsService } from './service.js';
import type { OperationContext } from '../core/context.js';
import { normalizeFilePath, normalizePath, parentOf } from '../core/paths.js';
import { outermostMissing, type Permissions } from '../auth/permissions.js';
import { ParsedViews } from '../views/views.js';

const path = z.string();
const version = z.number().int().min(1);
const ok = { success: true } as const;

/**
 * The fs methods bound to a service instance. With `perms` (the daemon's permission check),
 * every method checks its caller (issue 3 §5): read, get_metadata, is_directory, get_version,
 * list_versions and diff_versions need `read`; exists answers false for what the caller may not
 * see; write needs `write` on the file when it exists, else on its parent directory; delete and
 * rmdir need `delete` (owner only, spec §2.4: editors may change content but not remove it);
 * rename needs `delete` on the source (it disappears from there) and `write` on the destination's
 * parent (plus `delete` on a destination it overwrites); mkdir needs `write` on the parent;
 * rollback needs `write`. list, glob and grep show only what the caller may read (a directory
 * when it or anything below it is readable). A newly created file or directory gets its creator
 * as direct_owner.
 *
 * Parsed views (views/views): `X_parsed.EXT.md` next to a stored document `X.EXT` reads as its
 * markdown, exists while `X.EXT` does, is checked with `X.EXT`'s permissions, and refuses every
 * change with -32004 (a guard on the service); list shows views unless `show_parsed` is false.
 */
export function fsMethods(fs: FsService, perms?: Permissions, views: ParsedViews = new ParsedViews(fs)) {
  const can = perms;
  /** Everything below a directory, for the visibility of directories the caller may not read. */
  const below = (dir: string) => fs.list(dir, { recursive: true }).map((e) => e.path);
  const visibility = (ctx: OperationContext) => can?.visibility(ctx, below);
  /** Make the creator the owner of what a create made: the path itself and the outermost new parent. */
  const owned = async (ctx: OperationContext, created: string | undefined, path: string) => {
    if (!can || created === undefined) return;
    await can.grantOwner(ctx, path);
    if (created !== normalizePath(path)) await can.grantOwner(ctx, created);
  };
  return [
    defineMethod({
      name: 'read', access: 'user',
      description: 'Read a file; with return_metadata, base64 content plus metadata. X_parsed.EXT.md beside a document X.EXT '
        + '(and not stored itself) reads as its markdown (README: Parsed views).',
      params: z.strictObject({ path, return_metadata: z.boolean().default(false) }),
      handler: async ({ path, return_metadata }, ctx) => {
        const original = views.originalOf(path);
        can?.require(ctx, 'read', original ?? normalizeFilePath(path));
        if (original !== undefined) {
          const { record, view } = await views.read(original);
          if (!return_metadata) return view.content;
          return {
            content: view.content.toString('base64'), encoding: 'base64' as const,
            metadata: {
              size: view.content.length, etag: view.etag, version: record.version,
              modified_at: new Date(record.modified), content_type: ParsedViews.contentType,
            },
          };
        }
        const { record, content } = fs.read(path);
        if (!return_metadata) return content;
        return {
          content: content.toString('base64'), encoding: 'base64' as const,
          metadata: {
            size: record.size, etag: record.etag, version: record.version,
            modified_at: new Date(record.modified), content_type: record.contentType,
          },
        };
      },
    }),
    defineMethod({
      name: 'write', access: 'user',
      description: 'Write a file (a new version every time); if_match / if_none_match for optimistic concurrency. '
        + 'With enforcement on: write on the file, or on its parent directory for a new one (whose creator becomes its direct_owner).',
      params: z.strictObject({
        path, content: bytesParam, if_match: z.string().optional(), if_none_match: z.boolean().default(false),
        force: z.boolean().default(false),
      }),
      handler: async (p, ctx) => {
        const created = can?.enforcing ? outermostMissing(normalizeFilePath(p.path), (q) => fs.exists(q)) : undefined;
        can?.requireCreate(ctx, p.path, created === undefined);
        const result = await fs.write(p.path, p.content, { ifMatch: p.if_match, ifNoneMatch: p.if_none_match, force: p.force });
        await owned(ctx, created, p.path);
        return result;
      },
    }),
    defineMethod({
      name: 'delete', access: 'user', description: 'Delete a file and its history. With enforcement on, needs delete (owner).',
      params: z.strictObject({ path }),
      handler: async ({ path }, ctx) => {
        can?.require(ctx, 'delete', normalizeFilePath(path));
        return (await fs.delete(path), ok);
      },
    }),
    defineMethod({
      name: 'rename', access: 'user',
      description: 'Move a file or a directory with everything below it; overwrite replaces an existing target as POSIX rename does.',
      params: z.strictObject({ old_path: z.string(), new_path: z.string(), overwrite: z.boolean().default(false) }),
      handler: async ({ old_path, new_path, overwrite }, ctx) => {
        if (can?.applies(ctx)) {
          const from = normalizeFilePath(old_path);
          const to = normalizeFilePath(new_path);
          can.require(ctx, 'delete', from);
          can.require(ctx, 'write', parentOf(to));
          if (overwrite && fs.exists(to)) can.require(ctx, 'delete', to);
        }
        // The moved tuples follow the rename (the ReBAC commit hook); missing parents of the target are new.
        const created = can?.enforcing ? outermostMissing(parentOf(normalizeFilePath(new_path)), (q) => fs.exists(q)) : undefined;
        await fs.rename(old_path, new_path, { overwrite });
        if (created !== undefined) await can!.grantOwner(ctx, created);
        return ok;
      },
    }),
    defineMethod({
      name: 'exists', access: 'user', description: 'Whether a file or directory exists; false for what the caller may not read.',
      params: z.strictObject({ path }),
      handler: ({ path }, ctx) => {
        const original = views.originalOf(path);
        // A view exists for whoever may read its original.
        if (original !== undefined) return { exists: !can?.applies(ctx) || can.can(ctx, 'read', original) };
        const exists = fs.exists(path);
        // What the caller may not see does not exist for it (false, not -32004).
        if (!exists || !can?.applies(ctx)) return { exists };
        const p = normalizePath(path);
        return { exists: visibility(ctx)!(p, fs.isDirectory(p)) };
      },
    }),
    defineMethod({
      name: 'get_metadata', access: 'user', description: 'Metadata of a file or directory; null when absent.',
      params: z.strictObject({ path }),
      handler: async ({ path }, ctx) => {
        const original = views.originalOf(path);
        can?.require(ctx, 'read', original ?? normalizeFilePath(path));
        if (original !== undefined) return views.metadata(path, original);
        return fs.getMetadata(path);
      },
    }),
    defineMethod({
      name: 'mkdir', access: 'user', description: 'Create a directory; parents like mkdir -p.',
      params: z.strictObject({ path, parents: z.boolean().default(false), exist_ok: z.boolean().default(false) }),
      handler: async ({ path, parents, exist_ok }, ctx) => {
        const p = normalizePath(path);
        const created = can?.enforcing && p !== '/' ? outermostMissing(p, (q) => fs.exists(q)) : undefined;
        if (p !== '/') can?.require(ctx, 'write', parentOf(p));
        await fs.mkdir(path, { parents, existOk: exist_ok });
        await owned(ctx, created, p);
        return ok;
      },
    }),
    defineMethod({
      name: 'rmdir', access: 'user', description: 'Remove a directory; recursive removes everything below it.',
      params: z.strictObject({ path, recursive: z.boolean().default(false) }),
      handler: async ({ path, recursive }, ctx) => {
        can?.require(ctx, 'delete', normalizePath(path));
        return (await fs.rmdir(path, { recursive }), ok);
      },
    }),
    defineMethod({
      name: 'list', access: 'user',
      description: 'List a directory (recursive by default); directories end with /; details gives entries. '
        + 'Only what the caller may read (a directory when it or anything below it is readable).',
      params: z.strictObject({
        path: z.string().default('/'), recursive: z.boolean().default(true), details: z.boolean().default(false),
        prefix: z.string().optional().describe('only entries whose full path starts with this (a leading / is added)'),
        show_parsed: z.boolean().default(true)
          .describe('also list the read-only markdown view X_parsed.EXT.md of every document X.EXT (.pdf .docx .doc .xlsx .xls '
            + '.pptx .ppt .odt .ods .odp .rtf .epub) listed; in details, a view has its original\'s size, etag and version'),
      }),
      handler: ({ path, recursive, details, prefix, show_parsed }, ctx) => {
        // A view's name may match a prefix its original's does not (`/d/a_` and `/d/a.pdf`): list the
        // prefix's whole directory, add the views, then filter.
        const wide = show_parsed && prefix !== undefined ? prefix.slice(0, prefix.lastIndexOf('/') + 1) || undefined : prefix;
        let entries = fs.list(path, { recursive, prefix: wide });
        if (can?.applies(ctx)) {
          if (recursive) {
            // Everything below a listed directory is listed too: a directory is shown when it or an entry below it is readable.
            const readable = can.filter(ctx, 'read');
            const shown = new Set<string>();
            for (const e of entries) {
              if (!readable(e.path)) continue;
              shown.add(e.path);
              for (let p = parentOf(normalizePath(e.path)); p !== '/' && !shown.has(p + '/'); p = parentOf(p)) shown.add(p + '/');
            }
            entries = entries.filter((e) => shown.has(e.path));
          } else {
            const visible = visibility(ctx)!;
            entries = entries.filter((e) => visible(e.path, e.is_directory));
          }
        }
        if (show_parsed) {
          entries = views.withViews(entries);
          if (prefix !== wide) {
            const full = prefix!.startsWith('/') ? prefix! : '/' + prefix!;
            entries = entries.filter((e) => e.path.startsWith(full));
          }
        }
        return details ? entries : entries.map((e) => e.path);
      },
    }),
    defineMethod({
      name: 'is_directory', access: 'user', description: 'Whether a path is a directory.',
      params: z.strictObject({ path }),
      handler: ({ path }, ctx) => {
        const original = views.originalOf(path);
        if (original !== undefined) {
          can?.require(ctx, 'read', original);
          return { is_directory: false };
        }
        // A directory the caller may not read but holds something readable in (list shows it) answers too.
        if (can?.applies(ctx) && !can.can(ctx, 'read', normalizePath(path))) {
          if (!(fs.isDirectory(path) && visibility(ctx)!(path, true))) can.require(ctx, 'read', normalizePath(path));
        }
        return { is_directory: fs.isDirectory(path) };
      },
    }),
    defineMethod({
      name: 'glob', access: 'user', description: 'Paths matching a glob pattern (*, ?, **, [..], {a,b}) relative to path; only what the caller may read.',
      params: z.strictObject({ pattern: z.string().min(1), path: z.string().default('/') }),
      handler: ({ pattern, path }, ctx) => {
        const visible = visibility(ctx);
        const found = fs.glob(pattern, path);
        return visible ? found.filter((p) => visible(p, p.endsWith('/'))) : found;
      },
    }),
    defineMethod({
      name: 'grep', access: 'user',
      description: 'Lines matching an ECMAScript regex in text files below path that the caller may read (files that are not UTF-8 are '
        + 'skipped; files are streamed chunk by chunk, and a line longer than 4 MiB is searched in its first 4 MiB). The scan runs on a '
        + 'worker thread: a regex that backtracks without end is stopped after 5 s on one batch of text with -32602.',
      params: z.strictObject({
        pattern: z.string().min(1), path: z.string().default('/'), file_pattern: z.string().optional(),
        ignore_case: z.boolean().default(false), max_results: z.number().int().min(1).default(1000),
      }),
      handler: (p, ctx) => fs.grep({
        pattern: p.pattern, path: p.path, filePattern: p.file_pattern, ignoreCase: p.ignore_case, maxResults: p.max_results,
        include: can?.applies(ctx) ? can.filter(ctx, 'read') : undefined,
      }),
    }),
    defineMethod({
      name: 'get_version', access: 'user', description: 'Content of one version of a file.',
      params: z.strictObject({ path, version }),
      handler: ({ path, version }, ctx) => {
        can?.require(ctx, 'read', normalizeFilePath(path));
        return fs.getVersion(path, version);
      },
    }),
    defineMethod({
      name: 'list_versions', access: 'user', description: 'Versions of a file, newest first.',
      params: z.strictObject({ path }),
      handler: ({ path }, ctx) => {
        can?.require(ctx, 'read', normalizeFilePath(path));
        return fs.listVersions(path);
      },
    }),
    defineMethod({
      name: 'rollback', access: 'user', description: 'Bring back an earlier version as a new version.',
      params: z.strictObject({ path, version }),
      handler: ({ path, version }, ctx) => {
        can?.require(ctx, 'write', normalizeFilePath(path));
        return fs.rollback(path, version);
      },
    }),
    defineMethod({
      name: 'diff_versions', access: 'user', description: 'Compare two versions: metadata, or a unified diff of the content.',
      params: z.strictObject({
        path, v1: version, v2: version,
        mode: z.string().default('metadata').refine((m) => m === 'metadata' || m === 'content', {
          error: (iss) => `Invalid mode: ${String(iss.input)}. Must be 'metadata' or 'content'`,
        }),
      }),
      handler: ({ path, v1, v2, mode }, ctx) => {
        can?.require(ctx, 'read', normalizeFilePath(path));
        return fs.diffVersions(path, v1, v2, mode as 'metadata' | 'content');
      },
    }),
  ] as const;
}

export type FsApi = ApiOf<ReturnType<typeof fsMethods>>;
