/**
 * @module cli/serve
 * `svc serve`: run the daemon until SIGINT/SIGTERM.
 */
import type { Argv } from 'yargs';
import { loadConfig, LOG_LEVELS } from '../config.js';
import type { Daemon } from '../daemon.js';
import { AUTH_TYPES } from '../auth/types.js';

export function serveCommand(cli: Argv): Argv {
  return cli.command(
    'serve',
    'Run the daemon (JSON-RPC over HTTP and WebSocket)',
    (y) => y
      .option('host', { type: 'string', describe: 'Address to bind (SVC_HOST). 0.0.0.0 exposes the daemon to the network', defaultDescription: '127.0.0.1' })
      .option('port', { type: 'number', describe: 'Port to listen on (SVC_PORT); 0 picks a free one', defaultDescription: '2026' })
      .option('data-dir', { type: 'string', describe: 'Where files and metadata live (SVC_DATA_DIR)', defaultDescription: '$XDG_DATA_HOME/svc' })
      .option('api-key', { type: 'string', describe: 'Require this bearer key on every request (SVC_SERVER_API_KEY); the simple auth mode' })
      .option('auth-type', { type: 'string', choices: AUTH_TYPES, describe: 'Authentication mode (SVC_AUTH_TYPE); database keeps keys in the metadata store (SVC_DATABASE_URL: unset or lmdb:)' })
      .option('auth-config', { type: 'string', describe: 'Settings of the auth mode, a JSON or YAML file (SVC_AUTH_CONFIG)' })
      .option('enforce-permissions', { type: 'boolean', describe: 'Check permissions on every operation (SVC_ENFORCE_PERMISSIONS)', defaultDescription: 'true when auth is configured' })
      .option('init', { type: 'boolean', default: false, describe: 'With --auth-type database: create the first admin key if none exists and print it once' })
      .option('admin-user', { type: 'string', default: 'admin', describe: 'The user id of the admin key --init creates' })
      .option('max-body', { type: 'string', describe: 'Largest request body, e.g. 64mb (SVC_MAX_BODY)', defaultDescription: '64mb' })
      .option('mount', { type: 'string', describe: 'Also mount the file tree at this directory with FUSE (SVC_MOUNT); unmounted on exit' })
      .option('log-level', { type: 'string', choices: LOG_LEVELS, describe: 'Log verbosity (SVC_LOG_LEVEL)', defaultDescription: 'info' }),
    async (args) => {
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
      const daemon = new Daemon(config);
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
    },
  );
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
