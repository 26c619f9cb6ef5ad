/**
 * @module cli/workspaces
 * `svc workspace register|unregister|list|info|snapshot|log|diff|restore` (spec §4.5) against a
 * running daemon.
 */
import type { Argv } from 'yargs';
import {
  CliError, Exit, clientOptions, displayPath, keyValues, printJson, printLines, run, shortTime, positiveInt, table,
} from './output.js';

function parseMetadata(raw: string | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(raw);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch { /* reported below */ }
  throw new CliError('--metadata must be a JSON object, e.g. \'{"team":"docs"}\'', Exit.USAGE);
}

/** Register `svc workspace` and its subcommands. */
export function workspaceCommands(cli: Argv): Argv {
  return cli.command('workspace', 'Workspaces and their snapshots', (y) => y
    .command('register <path>', 'Register a directory as a workspace',
      (y) => clientOptions(y).positional('path', { type: 'string', demandOption: true })
        .option('name', { type: 'string' }).option('description', { type: 'string' }).option('created-by', { type: 'string' })
        .option('tag', { type: 'string', array: true, describe: 'A tag (repeatable)' })
        .option('metadata', { type: 'string', describe: 'JSON object' })
        .option('session-id', { type: 'string' })
        .option('ttl', { type: 'number', describe: 'Seconds until the registration expires' }),
      (a) => run(a, async ({ client, json }) => {
        const rec = await client.call('register_workspace', {
          path: a.path, name: a.name, description: a.description, created_by: a['created-by'], tags: a.tag,
          metadata: parseMetadata(a.metadata), session_id: a['session-id'], ttl: a.ttl,
        });
        if (json) return printJson(rec);
        await printLines([`registered workspace ${rec.path}`]);
      }))
    .command('unregister <path>', 'Forget a workspace and its snapshots (files are kept)',
      (y) => clientOptions(y).positional('path', { type: 'string', demandOption: true }),
      (a) => run(a, async ({ client, json }) => {
        const removed = await client.call('unregister_workspace', { path: a.path });
        if (json) return printJson(removed);
        await printLines([removed ? `unregistered ${displayPath(a.path)}` : `${displayPath(a.path)} was not registered`]);
      }))
    .command('list', 'Registered workspaces',
      (y) => clientOptions(y),
      (a) => run(a, async ({ client, json }) => {
        const list = await client.call('list_workspaces', {});
        if (json) return printJson(list);
        await printLines(table(['PATH', 'NAME', 'CREATED', 'TAGS'], list.map((w) => [w.path, w.name ?? '', shortTime(w.created_at), w.tags.join(',')])));
      }))
    .command('info <path>', 'One workspace',
      (y) => clientOptions(y).positional('path', { type: 'string', demandOption: true }),
      (a) => run(a, async ({ client, json }) => {
        const w = await client.call('get_workspace_info', { path: a.path });
        if (json) return printJson(w);
        if (!w) throw new CliError(`error -32000: Workspace not registered: ${displayPath(a.path)}`, Exit.ERROR);
        await printLines(keyValues([
          ['path', w.path], ['name', w.name ?? ''], ['description', w.description ?? ''], ['created_by', w.created_by ?? ''],
          ['created_at', w.created_at], ['tags', w.tags.join(', ')], ['metadata', JSON.stringify(w.metadata)],
          ['session_id', w.session_id ?? ''], ['ttl', w.ttl === null ? 'none' : `${w.ttl} s`], ['expires_at', w.expires_at ?? 'never'],
        ]));
      }))
    .command('snapshot <path>', 'Record a snapshot of every file in the workspace',
      (y) => clientOptions(y).positional('path', { type: 'string', demandOption: true })
        .option('description', { alias: 'm', type: 'string' }).option('tag', { type: 'string', array: true }).option('created-by', { type: 'string' }),
      (a) => run(a, async ({ client, json }) => {
        const s = await client.call('workspace_snapshot', { workspace_path: a.path, description: a.description, tags: a.tag, created_by: a['created-by'] });
        if (json) return printJson(s);
        await printLines([`snapshot #${s.snapshot_number} of ${displayPath(a.path)}: ${s.file_count} files, ${s.total_size} bytes`]);
      }))
    .command('log <path>', 'Snapshots, newest first',
      (y) => clientOptions(y).positional('path', { type: 'string', demandOption: true }).option('limit', { type: 'number', default: 100 }),
      (a) => run(a, async ({ client, json }) => {
        const log = await client.call('workspace_log', { workspace_path: a.path, limit: a.limit });
        if (json) return printJson(log);
        await printLines(table(['#', 'WHEN', 'FILES', 'BYTES', 'DESCRIPTION'],
          log.map((s) => [String(s.snapshot_number), shortTime(s.timestamp), String(s.file_count), String(s.total_size), s.description ?? '']), [0, 2, 3]));
      }))
    .command('diff <path> <s1> <s2>', 'Files added, modified and deleted between two snapshots',
      (y) => clientOptions(y).positional('path', { type: 'string', demandOption: true })
        .positional('s1', { type: 'string', demandOption: true }).positional('s2', { type: 'string', demandOption: true }),
      (a) => run(a, async ({ client, json }) => {
        const d = await client.call('workspace_diff', {
          workspace_path: a.path, snapshot_1: positiveInt('snapshot', a.s1), snapshot_2: positiveInt('snapshot', a.s2),
        });
        if (json) return printJson(d);
        await printLines([
          ...d.added.map((p) => `A ${p}`), ...d.modified.map((p) => `M ${p}`), ...d.deleted.map((p) => `D ${p}`),
          `${d.summary.added_count} added, ${d.summary.modified_count} modified, ${d.summary.deleted_count} deleted`,
        ]);
      }))
    .command('restore <path> <snapshot>', 'Bring the workspace back to a snapshot (history is kept)',
      (y) => clientOptions(y).positional('path', { type: 'string', demandOption: true }).positional('snapshot', { type: 'string', demandOption: true }),
      (a) => run(a, async ({ client, json }) => {
        const r = await client.call('workspace_restore', { workspace_path: a.path, snapshot_number: positiveInt('snapshot', a.snapshot) });
        if (json) return printJson(r);
        await printLines([`restored ${displayPath(a.path)} to snapshot #${r.snapshot_number}: ${r.files_restored} files restored, ${r.files_deleted} deleted`]);
      }))
    .demandCommand(1, 'Name a workspace command: svc workspace --help'));
}
