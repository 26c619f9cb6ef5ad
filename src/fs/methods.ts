/**
 * @module fs/methods
 * The file, directory, search and version methods (spec §4.3, §4.4, §4.12), with the spec's
 * defaults and WIRE.md's result shapes.
 */
import { z } from 'zod';
import { defineMethod, type ApiOf } from '../core/method.js';
import { bytesParam } from '../core/wire.js';
import type { FsService } from './service.js';

const path = z.string();
const version = z.number().int().min(1);
const ok = { success: true } as const;

/** The fs methods bound to a service instance. */
export function fsMethods(fs: FsService) {
  return [
    defineMethod({
      name: 'read', access: 'user', description: 'Read a file; with return_metadata, base64 content plus metadata.',
      params: z.strictObject({ path, return_metadata: z.boolean().default(false) }),
      handler: ({ path, return_metadata }) => {
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
      description: 'Write a file (a new version every time); if_match / if_none_match for optimistic concurrency.',
      params: z.strictObject({
        path, content: bytesParam, if_match: z.string().optional(), if_none_match: z.boolean().default(false),
        force: z.boolean().default(false),
      }),
      handler: (p) => fs.write(p.path, p.content, { ifMatch: p.if_match, ifNoneMatch: p.if_none_match, force: p.force }),
    }),
    defineMethod({
      name: 'delete', access: 'user', description: 'Delete a file and its history.',
      params: z.strictObject({ path }),
      handler: async ({ path }) => (await fs.delete(path), ok),
    }),
    defineMethod({
      name: 'rename', access: 'user',
      description: 'Move a file or a directory with everything below it; overwrite replaces an existing target as POSIX rename does.',
      params: z.strictObject({ old_path: z.string(), new_path: z.string(), overwrite: z.boolean().default(false) }),
      handler: async ({ old_path, new_path, overwrite }) => (await fs.rename(old_path, new_path, { overwrite }), ok),
    }),
    defineMethod({
      name: 'exists', access: 'user', description: 'Whether a file or directory exists.',
      params: z.strictObject({ path }),
      handler: ({ path }) => ({ exists: fs.exists(path) }),
    }),
    defineMethod({
      name: 'get_metadata', access: 'user', description: 'Metadata of a file or directory; null when absent.',
      params: z.strictObject({ path }),
      handler: ({ path }) => fs.getMetadata(path),
    }),
    defineMethod({
      name: 'mkdir', access: 'user', description: 'Create a directory; parents like mkdir -p.',
      params: z.strictObject({ path, parents: z.boolean().default(false), exist_ok: z.boolean().default(false) }),
      handler: async ({ path, parents, exist_ok }) => (await fs.mkdir(path, { parents, existOk: exist_ok }), ok),
    }),
    defineMethod({
      name: 'rmdir', access: 'user', description: 'Remove a directory; recursive removes everything below it.',
      params: z.strictObject({ path, recursive: z.boolean().default(false) }),
      handler: async ({ path, recursive }) => (await fs.rmdir(path, { recursive }), ok),
    }),
    defineMethod({
      name: 'list', access: 'user',
      description: 'List a directory (recursive by default); directories end with /; details gives entries.',
      params: z.strictObject({
        path: z.string().default('/'), recursive: z.boolean().default(true), details: z.boolean().default(false),
        prefix: z.string().optional(), show_parsed: z.boolean().default(true),
      }),
      handler: ({ path, recursive, details, prefix }) => {
        const entries = fs.list(path, { recursive, prefix });
        return details ? entries : entries.map((e) => e.path);
      },
    }),
    defineMethod({
      name: 'is_directory', access: 'user', description: 'Whether a path is a directory.',
      params: z.strictObject({ path }),
      handler: ({ path }) => ({ is_directory: fs.isDirectory(path) }),
    }),
    defineMethod({
      name: 'glob', access: 'user', description: 'Paths matching a glob pattern (*, ?, **, [..], {a,b}) relative to path.',
      params: z.strictObject({ pattern: z.string().min(1), path: z.string().default('/') }),
      handler: ({ pattern, path }) => fs.glob(pattern, path),
    }),
    defineMethod({
      name: 'grep', access: 'user', description: 'Lines matching an ECMAScript regex in text files below path.',
      params: z.strictObject({
        pattern: z.string().min(1), path: z.string().default('/'), file_pattern: z.string().optional(),
        ignore_case: z.boolean().default(false), max_results: z.number().int().min(1).default(1000),
      }),
      handler: (p) => fs.grep({
        pattern: p.pattern, path: p.path, filePattern: p.file_pattern, ignoreCase: p.ignore_case, maxResults: p.max_results,
      }),
    }),
    defineMethod({
      name: 'get_version', access: 'user', description: 'Content of one version of a file.',
      params: z.strictObject({ path, version }),
      handler: ({ path, version }) => fs.getVersion(path, version),
    }),
    defineMethod({
      name: 'list_versions', access: 'user', description: 'Versions of a file, newest first.',
      params: z.strictObject({ path }),
      handler: ({ path }) => fs.listVersions(path),
    }),
    defineMethod({
      name: 'rollback', access: 'user', description: 'Bring back an earlier version as a new version.',
      params: z.strictObject({ path, version }),
      handler: ({ path, version }) => fs.rollback(path, version),
    }),
    defineMethod({
      name: 'diff_versions', access: 'user', description: 'Compare two versions: metadata, or a unified diff of the content.',
      params: z.strictObject({
        path, v1: version, v2: version,
        mode: z.string().default('metadata').refine((m) => m === 'metadata' || m === 'content', {
          error: (iss) => `Invalid mode: ${String(iss.input)}. Must be 'metadata' or 'content'`,
        }),
      }),
      handler: ({ path, v1, v2, mode }) => fs.diffVersions(path, v1, v2, mode as 'metadata' | 'content'),
    }),
  ] as const;
}

export type FsApi = ApiOf<ReturnType<typeof fsMethods>>;
