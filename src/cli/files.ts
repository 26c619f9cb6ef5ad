/**
 * @module cli/files
 * File, directory and search commands against a running daemon (spec §4.3, §4.4), plus
 * `svc status`. Each command is one RPC call (two for `status`) through the typed client;
 * human output by default, the raw result with `--json`.
 */
import type { Argv } from 'yargs';
import { readFile } from 'node:fs/promises';
import { RpcError, type SvcClient, type Wire } from '../client/index.js';
import type { FileMetadata, GrepMatch, ListEntry } from '../fs/service.js';
import {
  CliError, Exit, clientOptions, displayPath, keyValues, positiveInt, printJson, printLines, run, shortEtag, shortTime,
  table, writeOut,
} from './output.js';

type Entry = Wire<ListEntry>;
type Metadata = Wire<FileMetadata>;

/** Register `ls`, `cat`, `write`, `rm`, `mv`, `mkdir`, `rmdir`, `stat`, `glob`, `grep` and `status`. */
export function fileCommands(cli: Argv): Argv {
  return cli
    .command(
      'ls [path]',
      'List a directory (direct children; -r for everything below)',
      (y) => clientOptions(y)
        .positional('path', { type: 'string', default: '/', describe: 'Directory to list' })
        .option('long', { alias: 'l', type: 'boolean', default: false, describe: 'Table with size, version and modification time' })
        .option('recursive', { alias: 'r', type: 'boolean', default: false, describe: 'Everything below the directory' })
        .option('parsed', {
          type: 'boolean', default: true, describe: 'Show the read-only markdown views (X_parsed.pdf.md) of documents; --no-parsed hides them',
        }),
      (a) => run(a, async ({ client, json }) => {
        const entries = await listOrFile(client, a.path, a.recursive, a.long, a.parsed);
        if (json) return printJson(entries);
        if (!a.long) return printLines(entries as string[]);
        return printLines(longListing(entries as Entry[]));
      }),
    )
    .command(
      'cat <path>',
      'Print a file\'s content (raw bytes)',
      (y) => clientOptions(y)
        .positional('path', { type: 'string', demandOption: true, describe: 'File to print' })
        .epilogue('With --json: {content (base64), encoding, metadata}.'),
      (a) => run(a, async ({ client, json }) => {
        if (json) return printJson(await client.call('read', { path: a.path, return_metadata: true }));
        const content = await client.call('read', { path: a.path });
        await writeOut(content as Buffer);
      }),
    )
    .command(
      'write <path>',
      'Write a file from --from FILE or stdin (every write is a new version)',
      (y) => clientOptions(y)
        .positional('path', { type: 'string', demandOption: true, describe: 'File to write' })
        .option('from', { type: 'string', describe: 'Local file to upload (- or absent: stdin)' })
        .option('if-match', { type: 'string', describe: 'Only if the current etag is this one (optimistic concurrency)' })
        .option('if-none-match', { type: 'boolean', default: false, describe: 'Only if the file does not exist yet' })
        .option('force', { type: 'boolean', default: false, describe: 'Ignore --if-match / --if-none-match' }),
      (a) => run(a, async ({ client, json }) => {
        const content = await readInput(a.from);
        const result = await client.call('write', {
          path: a.path, content, if_match: a.ifMatch, if_none_match: a.ifNoneMatch, force: a.force,
        });
        if (json) return printJson(result);
        await printLines([
          `wrote ${displayPath(a.path)} (${plural(result.size, 'byte')}, version ${result.version}, etag ${shortEtag(result.etag)})`,
        ]);
      }),
    )
    .command(
      'rm <path>',
      'Delete a file and its history',
      (y) => clientOptions(y).positional('path', { type: 'string', demandOption: true, describe: 'File to delete' }),
      (a) => run(a, async ({ client, json }) => {
        const result = await client.call('delete', { path: a.path });
        if (json) return printJson(result);
        await printLines([`removed ${displayPath(a.path)}`]);
      }),
    )
    .command(
      'mv <old> <new>',
      'Move or rename a file, or a directory with everything below it',
      (y) => clientOptions(y)
        .positional('old', { type: 'string', demandOption: true, describe: 'Current path' })
        .positional('new', { type: 'string', demandOption: true, describe: 'New path (must not exist)' }),
      (a) => run(a, async ({ client, json }) => {
        const result = await client.call('rename', { old_path: a.old, new_path: a.new });
        if (json) return printJson(result);
        await printLines([`moved ${displayPath(a.old)} -> ${displayPath(a.new)}`]);
      }),
    )
    .command(
      'mkdir <path>',
      'Create a directory',
      (y) => clientOptions(y)
        .positional('path', { type: 'string', demandOption: true, describe: 'Directory to create' })
        .option('parents', { alias: 'p', type: 'boolean', default: false, describe: 'Create missing parents; an existing directory is fine' }),
      (a) => run(a, async ({ client, json }) => {
        const result = await client.call('mkdir', { path: a.path, parents: a.parents });
        if (json) return printJson(result);
        await printLines([`created ${displayPath(a.path)}/`]);
      }),
    )
    .command(
      'rmdir <path>',
      'Remove a directory (empty unless -r)',
      (y) => clientOptions(y)
        .positional('path', { type: 'string', demandOption: true, describe: 'Directory to remove' })
        .option('recursive', { alias: 'r', type: 'boolean', default: false, describe: 'Remove everything below it too' }),
      (a) => run(a, async ({ client, json }) => {
        const result = await client.call('rmdir', { path: a.path, recursive: a.recursive });
        if (json) return printJson(result);
        await printLines([`removed ${displayPath(a.path)}/`]);
      }),
    )
    .command(
      'stat <path>',
      'Show the metadata of a file or directory',
      (y) => clientOptions(y).positional('path', { type: 'string', demandOption: true, describe: 'File or directory' }),
      (a) => run(a, async ({ client, json }) => {
        const meta = await client.call('get_metadata', { path: a.path });
        // get_metadata answers null for a missing path; for the command that is a not-found error.
        if (meta === null) throw new RpcError(-32000, `File not found: ${displayPath(a.path)}`);
        if (json) return printJson(meta);
        await printLines(statLines(meta));
      }),
    )
    .command(
      'glob <pattern>',
      'Paths matching a glob pattern (*, ?, **, [..], {a,b})',
      (y) => clientOptions(y)
        .positional('pattern', { type: 'string', demandOption: true, describe: 'Pattern, relative to --path' })
        .option('path', { type: 'string', default: '/', describe: 'Directory the pattern is relative to' }),
      (a) => run(a, async ({ client, json }) => {
        const paths = await client.call('glob', { pattern: a.pattern, path: a.path });
        if (json) return printJson(paths);
        await printLines(paths);
      }),
    )
    .command(
      'grep <pattern> [path]',
      'Lines matching a regular expression in text files (file:line:content)',
      (y) => clientOptions(y)
        .positional('pattern', { type: 'string', demandOption: true, describe: 'ECMAScript regular expression' })
        .positional('path', { type: 'string', default: '/', describe: 'Directory to search' })
        .option('file-pattern', { type: 'string', describe: 'Only files matching this glob (base name unless it has a /)' })
        .option('ignore-case', { alias: 'i', type: 'boolean', default: false, describe: 'Match case-insensitively' })
        .option('max-results', { type: 'string', describe: 'Stop after this many matching lines', defaultDescription: '1000' }),
      (a) => run(a, async ({ client, json }) => {
        const max = a.maxResults === undefined ? undefined : positiveInt('--max-results', a.maxResults);
        const matches = await client.call('grep', {
          pattern: a.pattern, path: a.path, file_pattern: a.filePattern, ignore_case: a.ignoreCase, max_results: max,
        });
        if (json) return printJson(matches);
        await printLines(matches.map((m: Wire<GrepMatch>) => `${m.file}:${m.line}:${m.content}`));
      }),
    )
    .command(
      'status',
      'Show the daemon\'s status and who you are to it',
      (y) => clientOptions(y),
      (a) => run(a, async ({ client, url, json }) => {
        const [status, whoami] = await Promise.all([client.status(), client.whoami()]);
        if (json) return printJson({ status, whoami });
        const flags = [whoami.authenticated ? 'authenticated' : 'not authenticated', ...(whoami.is_admin ? ['admin'] : [])];
        await printLines(keyValues([
          ['daemon', `${status.service} ${status.version} (${status.status}) at ${url}`],
          ['backend', describeStore(status.backend)],
          ['metadata store', describeStore(status.metadata_store)],
          ...(status.fuse_mount ? [['FUSE mount', `${status.fuse_mount.dir} (${status.fuse_mount.binding})`] as [string, string]] : []),
          ['methods', String(status.methods.length)],
          ['subject', `${whoami.subject_type}:${whoami.subject_id} (${flags.join(', ')})`],
          ['tenant', whoami.tenant_id],
        ]));
      }),
    );
}

/**
 * `list` for a directory; for a file (ENOTDIR), its own entry, like `ls FILE` in a shell.
 * The RPC default is recursive, so `recursive` is always sent.
 */
async function listOrFile(
  client: SvcClient, path: string, recursive: boolean, details: boolean, parsed: boolean,
): Promise<string[] | Entry[]> {
  try {
    return (await client.call('list', { path, recursive, details, show_parsed: parsed })) as string[] | Entry[];
  } catch (err) {
    const data = err instanceof RpcError ? (err.data as { errno?: unknown } | undefined) : undefined;
    if (data?.errno !== 'ENOTDIR') throw err;
    const meta = await client.call('get_metadata', { path });
    if (meta === null || meta.is_directory) throw err;
    return details ? [metadataEntry(meta)] : [meta.path];
  }
}

function metadataEntry(meta: Metadata): Entry {
  return {
    path: meta.path, is_directory: false, size: meta.size, etag: meta.etag ?? '', version: meta.version ?? 0,
    content_type: meta.content_type, created_at: meta.created_at, modified_at: meta.modified_at,
  };
}

/** `ls -l`: a table of type, size, version, modification time and path. */
function longListing(entries: Entry[]): string[] {
  if (!entries.length) return [];
  return table(
    ['TYPE', 'SIZE', 'VERSION', 'MODIFIED', 'PATH'],
    entries.map((e) => [
      e.is_directory ? 'dir' : 'file',
      e.is_directory ? '-' : String(e.size),
      e.version === undefined ? '-' : String(e.version),
      shortTime(e.modified_at),
      e.path,
    ]),
    [1, 2],
  );
}

function statLines(meta: Metadata): string[] {
  return keyValues([
    ['path', meta.path],
    ['type', meta.is_directory ? 'directory' : 'file'],
    ...(meta.is_directory ? [] : [
      ['size', plural(meta.size, 'byte')],
      ['version', String(meta.version)],
      ['etag', String(meta.etag)],
    ] as [string, string][]),
    ['content type', meta.content_type],
    ['created', meta.created_at],
    ['modified', meta.modified_at],
  ]);
}

/** `{type, location}` → `type (location)`. */
function describeStore(store: unknown): string {
  if (!store || typeof store !== 'object') return String(store);
  const { type, ...rest } = store as Record<string, unknown>;
  const details = Object.values(rest).filter((v) => v !== undefined && v !== null).map(String);
  return details.length ? `${String(type)} (${details.join(', ')})` : String(type);
}

/** The content to upload: a local file, or all of stdin (binary-safe). */
async function readInput(from: string | undefined): Promise<Buffer> {
  if (from !== undefined && from !== '-') {
    try {
      return await readFile(from);
    } catch (err) {
      throw new CliError(`cannot read ${from}: ${(err as Error).message}`, Exit.ERROR);
    }
  }
  if (process.stdin.isTTY) process.stderr.write('svc: reading the content from stdin; end it with Ctrl-D\n');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
