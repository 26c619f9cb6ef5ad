/**
 * @module cli/mounts
 * `svc mounts add|remove|list|info|save|saved|load|delete-saved` (spec §4.6) against a running daemon.
 */
import type { Argv } from 'yargs';
import { resolve } from 'node:path';
import { BACKEND_TYPES, type BackendType } from '../mounts/types.js';
import { CliError, Exit, clientOptions, keyValues, printJson, printLines, run, table } from './output.js';

function backendOptions<T>(y: Argv<T>) {
  return clientOptions(y)
    .positional('mount_point', { type: 'string', demandOption: true })
    .option('type', { type: 'string', choices: BACKEND_TYPES, default: 'local' as BackendType, describe: 'Backend type' })
    .option('data-dir', { type: 'string', describe: 'Host directory of a local mount' })
    .option('config', { type: 'string', describe: 'backend_config as a JSON object (other backend types)' })
    .option('priority', { type: 'number', default: 0, describe: 'Higher wins when mounts overlap' })
    .option('readonly', { type: 'boolean', default: false });
}

function backendConfig(a: { type: string; 'data-dir'?: string | undefined; config?: string | undefined }): Record<string, unknown> {
  let config: Record<string, unknown> = {};
  if (a.config !== undefined) {
    try {
      config = JSON.parse(a.config) as Record<string, unknown>;
    } catch {
      throw new CliError('--config must be a JSON object', Exit.USAGE);
    }
  }
  if (a['data-dir'] !== undefined) config.data_dir = resolve(a['data-dir']);
  if (a.type === 'local' && config.data_dir === undefined) throw new CliError('a local mount needs --data-dir DIR', Exit.USAGE);
  return config;
}

/** Register `svc mounts` and its subcommands. */
export function mountCommands(cli: Argv): Argv {
  return cli.command('mounts', 'Storage mounts, active and saved', (y) => y
    .command('add <mount_point>', 'Activate a mount', backendOptions,
      (a) => run(a, async ({ client, json }) => {
        const mp = await client.call('add_mount', {
          mount_point: a.mount_point, backend_type: a.type as BackendType, backend_config: backendConfig(a), priority: a.priority, readonly: a.readonly,
        });
        if (json) return printJson(mp);
        await printLines([`mounted ${mp}`]);
      }))
    .command('remove <mount_point>', 'Deactivate a mount (saved configuration untouched)',
      (y) => clientOptions(y).positional('mount_point', { type: 'string', demandOption: true }),
      (a) => run(a, async ({ client, json }) => {
        const removed = await client.call('remove_mount', { mount_point: a.mount_point });
        if (json) return printJson(removed);
        await printLines([removed ? `removed ${a.mount_point}` : `${a.mount_point} was not mounted`]);
      }))
    .command('list', 'Active mounts', (y) => clientOptions(y),
      (a) => run(a, async ({ client, json }) => {
        const list = await client.call('list_mounts', {});
        if (json) return printJson(list);
        await printLines(table(['MOUNT POINT', 'BACKEND', 'PRIORITY', 'MODE', 'DIRECTORY'],
          list.map((m) => [m.mount_point, m.backend_type, String(m.priority), m.readonly ? 'ro' : 'rw', m.data_dir ?? '']), [2]));
      }))
    .command('info <mount_point>', 'One active mount',
      (y) => clientOptions(y).positional('mount_point', { type: 'string', demandOption: true }),
      (a) => run(a, async ({ client, json }) => {
        const m = await client.call('get_mount', { mount_point: a.mount_point });
        if (json) return printJson(m);
        if (!m) throw new CliError(`error -32000: no active mount at ${a.mount_point}`, Exit.ERROR);
        await printLines(keyValues([
          ['mount_point', m.mount_point], ['backend_type', m.backend_type], ['priority', String(m.priority)],
          ['readonly', String(m.readonly)], ...(m.data_dir ? [['data_dir', m.data_dir] as const] : []),
        ]));
      }))
    .command('save <mount_point>', 'Save a mount configuration (activated at daemon start)',
      (y) => backendOptions(y).option('owner', { type: 'string' }).option('tenant', { type: 'string' }).option('description', { type: 'string' }),
      (a) => run(a, async ({ client, json }) => {
        const id = await client.call('save_mount', {
          mount_point: a.mount_point, backend_type: a.type as BackendType, backend_config: backendConfig(a), priority: a.priority,
          readonly: a.readonly, owner_user_id: a.owner, tenant_id: a.tenant, description: a.description,
        });
        if (json) return printJson(id);
        await printLines([`saved ${a.mount_point} as ${id}`]);
      }))
    .command('saved', 'Saved mount configurations',
      (y) => clientOptions(y).option('owner', { type: 'string' }).option('tenant', { type: 'string' }),
      (a) => run(a, async ({ client, json }) => {
        const list = await client.call('list_saved_mounts', { owner_user_id: a.owner, tenant_id: a.tenant });
        if (json) return printJson(list);
        await printLines(table(['MOUNT POINT', 'TYPE', 'ID', 'OWNER', 'DESCRIPTION'],
          list.map((m) => [m.mount_point, m.backend_type, m.mount_id, m.owner_user_id ?? '', m.description ?? ''])));
      }))
    .command('load <mount_point>', 'Activate a saved mount',
      (y) => clientOptions(y).positional('mount_point', { type: 'string', demandOption: true }),
      (a) => run(a, async ({ client, json }) => {
        const m = await client.call('load_mount', { mount_point: a.mount_point });
        if (json) return printJson(m);
        await printLines([`mounted ${m.mount_point} (${m.backend_type})`]);
      }))
    .command('delete-saved <mount_point>', 'Delete a saved configuration (an active mount stays)',
      (y) => clientOptions(y).positional('mount_point', { type: 'string', demandOption: true }),
      (a) => run(a, async ({ client, json }) => {
        const removed = await client.call('delete_saved_mount', { mount_point: a.mount_point });
        if (json) return printJson(removed);
        await printLines([removed ? `deleted saved mount ${a.mount_point}` : `no saved mount at ${a.mount_point}`]);
      }))
    .demandCommand(1, 'Name a mounts command: svc mounts --help'));
}
