/**
 * @module cli/serve
 * `svc serve`: run the daemon until SIGINT/SIGTERM.
 *
 * The options are one table (SERVE_OPTIONS) read two ways: yargs builds the command from it, and
 * parseServeArgs, the start-up fast path of cli/main, parses the plain forms of it without loading
 * yargs at all (yargs' module graph and the help text it renders for every command run cost
 * ~100 ms of CPU before the daemon could start). Anything the fast path is not sure of
 * (--help, unknown or repeated options, values yargs would read differently) goes to yargs.
 */
import type { Argv } from 'yargs';
import { loadConfig, LOG_LEVELS } from '../config.js';
import type { Daemon } from '../daemon.js';
import { AUTH_TYPES } from '../auth/types.js';

interface OptionSpec {
  readonly type: 'string' | 'number' | 'boolean';
  readonly describe: string;
  readonly choices?: readonly string[];
  readonly default?: string | boolean;
  readonly defaultDescription?: string;
}

export const SERVE_OPTIONS = {
  host: { type: 'string', describe: 'Address to bind (SVC_HOST). 0.0.0.0 exposes the daemon to the network', defaultDescription: '127.0.0.1' },
  port: { type: 'number', describe: 'Port to listen on (SVC_PORT); 0 picks a free one', defaultDescription: '2026' },
  'data-dir': { type: 'string', describe: 'Where files and metadata live (SVC_DATA_DIR)', defaultDescription: '$XDG_DATA_HOME/svc' },
  'api-key': { type: 'string', describe: 'Require this bearer key on every request (SVC_SERVER_API_KEY); the simple auth mode' },
  'auth-type': { type: 'string', choices: AUTH_TYPES, describe: 'Authentication mode (SVC_AUTH_TYPE); database keeps keys in the metadata store (SVC_DATABASE_URL: unset or lmdb:)' },
  'auth-config': { type: 'string', describe: 'Settings of the auth mode, a JSON or YAML file (SVC_AUTH_CONFIG)' },
  'enforce-permissions': { type: 'boolean', describe: 'Check permissions on every operation (SVC_ENFORCE_PERMISSIONS)', defaultDescription: 'true when auth is configured' },
  init: { type: 'boolean', default: false, describe: 'With --auth-type database: create the first admin key if none exists and print it once' },
  'admin-user': { type: 'string', default: 'admin', describe: 'The user id of the admin key --init creates' },
  'max-body': { type: 'string', describe: 'Largest request body, e.g. 64mb (SVC_MAX_BODY)', defaultDescription: '64mb' },
  mount: { type: 'string', describe: 'Also mount the file tree at this directory with FUSE (SVC_MOUNT); unmounted on exit' },
  'log-level': { type: 'string', choices: LOG_LEVELS, describe: 'Log verbosity (SVC_LOG_LEVEL)', defaultDescription: 'info' },
} as const satisfies Record<string, OptionSpec>;

type ServeOptionName = keyof typeof SERVE_OPTIONS;

/** What `svc serve` runs with: each option's value, its default, or undefined. */
export interface ServeArgs {
  host?: string | undefined; port?: number | undefined; 'data-dir'?: string | undefined; 'api-key'?: string | undefined;
  'auth-type'?: string | undefined; 'auth-config'?: string | undefined; 'enforce-permissions'?: boolean | undefined;
  init: boolean; 'admin-user': string; 'max-body'?: string | undefined; mount?: string | undefined; 'log-level'?: string | undefined;
}

/**
 * The arguments after `serve` parsed without yargs, or undefined when they are not all in the plain
 * forms below (then yargs parses them, with its help, errors and every other form it accepts).
 * Plain forms: `--name value` and `--name=value` for a string or number option (a value that does
 * not start with "-"; a number in decimal digits; one of the choices where the option has them),
 * `--flag`, `--no-flag`, `--flag=true|false` for a boolean; each option at most once; nothing else.
 * The result is what yargs gives for the same arguments (test/cli/serve-args.test.ts compares them).
 */
export function parseServeArgs(argv: readonly string[]): ServeArgs | undefined {
  const out: Record<string, string | number | boolean | undefined> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--') || arg === '--') return undefined;
    const eq = arg.indexOf('=');
    let name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    let inline = eq < 0 ? undefined : arg.slice(eq + 1);
    let negated = false;
    if (!Object.hasOwn(SERVE_OPTIONS, name) && name.startsWith('no-') && inline === undefined) {
      name = name.slice(3);
      negated = true;
    }
    if (!Object.hasOwn(SERVE_OPTIONS, name) || Object.hasOwn(out, name)) return undefined;
    const spec: OptionSpec = SERVE_OPTIONS[name as ServeOptionName];
    if (spec.type === 'boolean') {
      const next = argv[i + 1];
      // yargs reads a following "true"/"false" as the flag's value: leave that form to it.
      if (next === 'true' || next === 'false') return undefined;
      if (negated) out[name] = false;
      else if (inline === undefined) out[name] = true;
      else if (inline === 'true' || inline === 'false') out[name] = inline === 'true';
      else return undefined;
      continue;
    }
    if (negated) return undefined;
    if (inline === undefined) {
      inline = argv[i + 1];
      if (inline === undefined || inline.startsWith('-')) return undefined;
      i++;
    }
    if (inline === '' || inline.startsWith('-')) return undefined;
    if (spec.choices && !spec.choices.includes(inline)) return undefined;
    if (spec.type === 'number') {
      if (!/^(0|[1-9][0-9]{0,8})$/.test(inline)) return undefined;
      out[name] = Number(inline);
    } else {
      out[name] = inline;
    }
  }
  for (const [name, spec] of Object.entries(SERVE_OPTIONS) as [string, OptionSpec][]) {
    if (!Object.hasOwn(out, name) && spec.default !== undefined) out[name] = spec.default;
  }
  return out as unknown as ServeArgs;
}

/** The `serve` command on `cli`; `run` replaces the daemon for tests of the argument parsing. */
export function serveCommand(cli: Argv, run: (args: ServeArgs) => Promise<void> | void = runServe): Argv {
  return cli.command(
    'serve',
    'Run the daemon (JSON-RPC over HTTP and WebSocket)',
    (y) => y.options(SERVE_OPTIONS),
    (args) => run(args as ServeArgs),
  );
}

/** Run the daemon until SIGINT/SIGTERM with the parsed arguments (from yargs or parseServeArgs). */
export async function runServe(args: ServeArgs): Promise<void> {
  let config;
  try {
    config = loadConfig({
      host: args.host, port: args.port, dataDir: args['data-dir'], apiKey: args['api-key'],
      authType: args['auth-type'], authConfig: args['auth-config'], enforcePermissions: args['enforce-permissions'],
      maxBody: args['max-body'], logLevel: args['log-level'], mount: args.mount,
    });
    if (args.init && config.authType !== 'database') throw new Error('--init needs --auth-type database');
  } catch (err) {
    console.error(`svc serve: ${(err as Error).message}`);
    process.exit(2);
  }
  if (config.authType && !config.enforcePermissions) {
    console.error('svc serve: warning: permission enforcement is off (--enforce-permissions=false): every authenticated caller may touch every file');
  }
  // Loaded here, not at the top: client commands should not pay for the daemon's modules.
  const { Daemon } = await import('../daemon.js');
  const { isLmdbCommitFailure } = await import('../store/lmdb/index.js');
  const daemon = new Daemon(config);
  // A failed commit (a full disk) reaches its callers as an error; lmdb-js also leaves promises of
  // it unobserved, which would end the daemon. Any other unobserved rejection still does.
  process.on('unhandledRejection', (reason) => {
    if (isLmdbCommitFailure(reason)) return;
    throw reason;
  });
  try {
    const addr = await daemon.start();
    // One plain line for people and scripts (the log has the details).
    console.log(`svc listening on http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`);
    if (config.mount) console.log(`svc mounted at ${config.mount}`);
    if (args.init) await printFirstAdminKey(daemon, args['admin-user']);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    console.error(`svc serve: cannot start: ${e.code === 'EADDRINUSE' ? `port ${config.port} is already in use` : e.message}`);
    await daemon.stop().catch(() => undefined);
    process.exit(1);
  }
  const shutdown = (signal: string) => {
    daemon.log.info({ signal }, 'shutting down');
    daemon.stop().then(() => process.exit(0), (err) => {
      console.error(`svc serve: error while stopping: ${(err as Error).message}`);
      process.exit(1);
    });
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

/** Days the key `--init` creates stays valid: the spec's recommended rotation period (§8). */
const INIT_KEY_DAYS = 90;

/** `--init`: create the first admin key when none exists and print it; this is the only time it is shown. */
async function printFirstAdminKey(daemon: Daemon, adminUser: string): Promise<void> {
  const created = await daemon.services.admin.initFirstAdmin(adminUser, INIT_KEY_DAYS);
  if (!created) {
    console.error('svc serve: --init: an admin key exists already; nothing created');
    return;
  }
  console.log([
    `Admin API key for ${created.user_id} (shown only now; store it safely):`,
    `  ${created.api_key}`,
    `  key_id ${created.key_id}, expires ${created.expires_at?.toISOString() ?? 'never'}`,
    `Use it as SVC_API_KEY=${created.api_key} or --api-key.`,
  ].join('\n'));
}
