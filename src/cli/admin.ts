/**
 * @module cli/admin
 * `svc admin …`: API key administration and the audit trail against a daemon running with
 * `--auth-type database` (spec §4.10; needs an admin key in --api-key / SVC_API_KEY), and
 * `create-user`, which adds a bcrypt-hashed user to a local-mode auth config file without any
 * daemon.
 */
import type { Argv } from 'yargs';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import type { Wire } from '../client/index.js';
import type { ApiKeyRecord, AuditEntry } from '../auth/keys.js';
import { AUDIT_EVENTS } from '../auth/keys.js';
import { SUBJECT_TYPES } from '../auth/types.js';
import { hashPassword } from '../auth/local.js';
import { writeLocalUser } from '../auth/config-file.js';
import {
  CliError, Exit, clientOptions, keyValues, positiveInt, printJson, printLines, run, shortTime, table,
} from './output.js';

type KeyRecord = Wire<ApiKeyRecord>;

const KEY_SUBJECT_TYPES = ['user', 'agent', 'service'] as const;

/** Register `svc admin` and its subcommands. */
export function adminCommands(cli: Argv): Argv {
  return cli.command(
    'admin',
    'API keys, the audit trail (database auth) and local users',
    (y) => y
      .command(
        'create-key <user_id>',
        'Create an API key; the raw key is printed once and never again',
        (y) => clientOptions(y)
          .positional('user_id', { type: 'string', demandOption: true, describe: 'Owner of the key' })
          .option('name', { type: 'string', demandOption: true, describe: 'What the key is for' })
          .option('admin', { type: 'boolean', default: false, describe: 'Give the key admin rights' })
          .option('expires-days', { type: 'string', describe: 'Valid for this many days (default: never expires)' })
          .option('tenant-id', { type: 'string', default: 'default', describe: 'Tenant of the key' })
          .option('subject-type', { type: 'string', choices: KEY_SUBJECT_TYPES, default: 'user', describe: 'Who the key acts as' })
          .option('subject-id', { type: 'string', describe: 'Subject id (default: the user id)' })
          .option('agent', { type: 'string', array: true, describe: 'An agent of this user the key may act as (X-Svc-Subject); repeatable' }),
        (a) => run(a, async ({ client, json }) => {
          const created = await client.call('admin_create_key', {
            user_id: a.user_id, name: a.name, is_admin: a.admin, tenant_id: a.tenantId,
            expires_days: a.expiresDays === undefined ? null : positiveInt('--expires-days', a.expiresDays),
            subject_type: a.subjectType as (typeof KEY_SUBJECT_TYPES)[number], subject_id: a.subjectId,
            metadata: a.agent?.length ? { agents: a.agent.map(String) } : undefined,
          });
          if (json) return printJson(created);
          await printLines([
            `created key ${created.key_id} for ${created.subject_type}:${created.subject_id} `
              + `(tenant ${created.tenant_id ?? '-'}, ${created.is_admin ? 'admin' : 'not admin'}, expires ${expiry(created.expires_at)})`,
            'API key (shown only now; store it safely):',
            `  ${created.api_key}`,
          ]);
        }),
      )
      .command(
        'list-keys',
        'API keys, oldest first (unrevoked and unexpired unless asked)',
        (y) => clientOptions(y)
          .option('user-id', { type: 'string', describe: 'Only keys of this user' })
          .option('tenant-id', { type: 'string', describe: 'Only keys of this tenant' })
          .option('admin', { type: 'boolean', describe: 'Only admin keys (--no-admin: only the others)' })
          .option('include-revoked', { type: 'boolean', default: false, describe: 'Show revoked keys too' })
          .option('include-expired', { type: 'boolean', default: false, describe: 'Show expired keys too' })
          .option('limit', { type: 'string', default: '100', describe: 'Page size' })
          .option('offset', { type: 'string', default: '0', describe: 'Skip this many keys' }),
        (a) => run(a, async ({ client, json }) => {
          const offset = nonNegativeInt('--offset', a.offset);
          const page = await client.call('admin_list_keys', {
            user_id: a.userId, tenant_id: a.tenantId, is_admin: a.admin, include_revoked: a.includeRevoked,
            include_expired: a.includeExpired, limit: positiveInt('--limit', a.limit), offset,
          });
          if (json) return printJson(page);
          const rows = page.keys.map((k: KeyRecord) => [
            k.key_id, `${k.subject_type}:${k.subject_id}`, k.tenant_id ?? '-', k.is_admin ? 'yes' : 'no', state(k),
            expiry(k.expires_at), k.last_used_at ? shortTime(k.last_used_at) : '-', k.name,
          ]);
          await printLines([
            ...(rows.length ? table(['KEY_ID', 'SUBJECT', 'TENANT', 'ADMIN', 'STATE', 'EXPIRES', 'LAST_USED', 'NAME'], rows) : []),
            `${rows.length ? `${offset + 1}-${offset + rows.length}` : 'none'} of ${page.total} keys`,
          ]);
        }),
      )
      .command(
        'get-key <key_id>',
        'Show one API key (never the key itself)',
        (y) => clientOptions(y).positional('key_id', { type: 'string', demandOption: true, describe: 'Key id' }),
        (a) => run(a, async ({ client, json }) => {
          const key = await client.call('admin_get_key', { key_id: a.key_id });
          if (json) return printJson(key);
          await printLines(describeKey(key));
        }),
      )
      .command(
        'revoke-key <key_id>',
        'Revoke an API key for good (it stops working at once)',
        (y) => clientOptions(y).positional('key_id', { type: 'string', demandOption: true, describe: 'Key id' }),
        (a) => run(a, async ({ client, json }) => {
          const result = await client.call('admin_revoke_key', { key_id: a.key_id });
          if (json) return printJson(result);
          await printLines([`revoked key ${result.key_id}`]);
        }),
      )
      .command(
        'update-key <key_id>',
        'Change the name, admin flag or expiry of an API key',
        (y) => clientOptions(y)
          .positional('key_id', { type: 'string', demandOption: true, describe: 'Key id' })
          .option('name', { type: 'string', describe: 'New name' })
          .option('admin', { type: 'boolean', describe: 'Grant admin (--no-admin: take it away; refused for the last admin key)' })
          .option('expires-days', { type: 'string', describe: 'Expire this many days from now' })
          .option('never-expires', { type: 'boolean', describe: 'Remove the expiry' })
          .conflicts('expires-days', 'never-expires'),
        (a) => run(a, async ({ client, json }) => {
          const expires_days = a.neverExpires ? null : a.expiresDays === undefined ? undefined : positiveInt('--expires-days', a.expiresDays);
          if (a.name === undefined && a.admin === undefined && expires_days === undefined) {
            throw new CliError('nothing to change: give --name, --admin/--no-admin, --expires-days or --never-expires', Exit.USAGE);
          }
          const key = await client.call('admin_update_key', { key_id: a.key_id, name: a.name, is_admin: a.admin, expires_days });
          if (json) return printJson(key);
          await printLines(describeKey(key));
        }),
      )
      .command(
        'audit',
        'The audit trail: authentications, failures and key administration, newest first',
        (y) => clientOptions(y)
          .option('event', { type: 'string', choices: AUDIT_EVENTS, describe: 'Only this event' })
          .option('key-id', { type: 'string', describe: 'Only events of this key' })
          .option('user-id', { type: 'string', describe: 'Only events of this user' })
          .option('tenant-id', { type: 'string', describe: 'Only events of this tenant' })
          .option('since', { type: 'string', describe: 'Only events at or after this ISO time' })
          .option('until', { type: 'string', describe: 'Only events at or before this ISO time' })
          .option('limit', { type: 'string', default: '100', describe: 'Page size' })
          .option('offset', { type: 'string', default: '0', describe: 'Skip this many events' }),
        (a) => run(a, async ({ client, json }) => {
          const page = await client.call('admin_audit', {
            event: a.event as (typeof AUDIT_EVENTS)[number] | undefined, key_id: a.keyId, user_id: a.userId, tenant_id: a.tenantId,
            since: isoTime('--since', a.since), until: isoTime('--until', a.until),
            limit: positiveInt('--limit', a.limit), offset: nonNegativeInt('--offset', a.offset),
          });
          if (json) return printJson(page);
          const rows = page.entries.map((e: Wire<AuditEntry>) => [
            String(e.seq), shortTime(e.at), e.event, e.key_id ?? '-', e.user_id ?? '-', e.actor ?? '-',
            Object.keys(e.detail).length ? JSON.stringify(e.detail) : '',
          ]);
          await printLines([
            ...(rows.length ? table(['SEQ', 'TIME', 'EVENT', 'KEY_ID', 'USER', 'ACTOR', 'DETAIL'], rows, [0]) : []),
            `${rows.length} of ${page.total} events`,
          ]);
        }),
      )
      .command(
        'create-user <username>',
        'Add a user to a local-mode auth config file (bcrypt hash; the password comes from --password or stdin)',
        (y) => y
          .positional('username', { type: 'string', demandOption: true, describe: 'Login name' })
          .option('auth-config', { type: 'string', demandOption: true, describe: 'The JSON or YAML file `svc serve --auth-type local --auth-config` reads; created when missing' })
          .option('password', { type: 'string', describe: 'The password (visible in the process list: prefer stdin)' })
          .option('subject-type', { type: 'string', choices: SUBJECT_TYPES, default: 'user', describe: 'Who the user acts as' })
          .option('subject-id', { type: 'string', describe: 'Subject id (default: the username)' })
          .option('tenant-id', { type: 'string', describe: 'Tenant (default: none, the default tenant)' })
          .option('admin', { type: 'boolean', default: false, describe: 'Give the user admin rights' })
          .option('name', { type: 'string', describe: 'Display name' })
          .option('json', { type: 'boolean', default: false, describe: 'Print the result as JSON' }),
        async (a) => {
          try {
            const password = a.password ?? (await readPassword());
            if (password.length === 0) throw new CliError('the password is empty', Exit.USAGE);
            const user: Record<string, unknown> = {
              password_hash: await hashPassword(password), subject_type: a.subjectType, is_admin: a.admin,
            };
            if (a.subjectId !== undefined) user.subject_id = a.subjectId;
            if (a.tenantId !== undefined) user.tenant_id = a.tenantId;
            if (a.name !== undefined) user.name = a.name;
            const { replaced, created } = writeLocalUser(a.authConfig, a.username, user);
            if (a.json) return await printJson({ username: a.username, auth_config: a.authConfig, replaced, created });
            await printLines([
              `${replaced ? 'updated' : 'added'} user ${a.username} in ${a.authConfig}${created ? ' (new file with a fresh jwt_secret, mode 0600)' : ''}`,
            ]);
          } catch (err) {
            process.stderr.write(`svc: ${(err as Error).message}\n`);
            process.exitCode = err instanceof CliError ? err.exitCode : Exit.ERROR;
          }
        },
      )
      .demandCommand(1, 'Name an admin command: svc admin --help lists them'),
  );
}

function expiry(iso: string | null): string {
  return iso === null ? 'never' : shortTime(iso);
}

function state(k: KeyRecord): string {
  if (k.revoked) return 'revoked';
  if (k.expires_at !== null && Date.parse(k.expires_at) < Date.now()) return 'expired';
  return 'active';
}

function describeKey(k: KeyRecord): string[] {
  return keyValues([
    ['key_id', k.key_id],
    ['name', k.name],
    ['user_id', k.user_id],
    ['subject', `${k.subject_type}:${k.subject_id}`],
    ['tenant_id', k.tenant_id ?? '-'],
    ['is_admin', String(k.is_admin)],
    ['state', state(k)],
    ['created_at', shortTime(k.created_at)],
    ['expires_at', expiry(k.expires_at)],
    ['revoked_at', k.revoked_at ? shortTime(k.revoked_at) : '-'],
    ['last_used_at', k.last_used_at ? shortTime(k.last_used_at) : '-'],
  ]);
}

function nonNegativeInt(name: string, value: unknown): number {
  const text = String(value);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new CliError(`${name} must be a non-negative integer, got ${text}`, Exit.USAGE);
  }
  return Number(text);
}

function isoTime(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (Number.isNaN(Date.parse(value))) throw new CliError(`${name} must be an ISO 8601 time, got ${value}`, Exit.USAGE);
  return value;
}

/** The password from stdin: the first line when piped, a prompt without echo on a terminal. */
async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) {
    let text = '';
    for await (const chunk of process.stdin) text += chunk;
    return text.split(/\r?\n/)[0] ?? '';
  }
  process.stderr.write('Password: ');
  const silent = new Writable({ write: (_chunk, _enc, cb) => cb() });
  const rl = createInterface({ input: process.stdin, output: silent, terminal: true });
  try {
    return await new Promise<string>((resolve) => rl.once('line', resolve));
  } finally {
    rl.close();
    process.stderr.write('\n');
  }
}
