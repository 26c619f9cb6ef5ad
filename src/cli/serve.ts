/**
 * @module cli/serve
 * `svc serve`: run the daemon until SIGINT/SIGTERM.
 */
import type { Argv } from 'yargs';
import { loadConfig, LOG_LEVELS } from '../config.js';
import { Daemon } from '../daemon.js';

export function serveCommand(cli: Argv): Argv {
  return cli.command(
    'serve',
    'Run the daemon (JSON-RPC over HTTP and WebSocket)',
    (y) => y
      .option('host', { type: 'string', describe: 'Address to bind (SVC_HOST). 0.0.0.0 exposes the daemon to the network', defaultDescription: '127.0.0.1' })
      .option('port', { type: 'number', describe: 'Port to listen on (SVC_PORT); 0 picks a free one', defaultDescription: '2026' })
      .option('data-dir', { type: 'string', describe: 'Where files and metadata live (SVC_DATA_DIR)', defaultDescription: '$XDG_DATA_HOME/svc' })
      .option('api-key', { type: 'string', describe: 'Require this bearer key on every request (SVC_SERVER_API_KEY)' })
      .option('max-body', { type: 'string', describe: 'Largest request body, e.g. 64mb (SVC_MAX_BODY)', defaultDescription: '64mb' })
      .option('log-level', { type: 'string', choices: LOG_LEVELS, describe: 'Log verbosity (SVC_LOG_LEVEL)', defaultDescription: 'info' }),
    async (args) => {
      let config;
      try {
        config = loadConfig({
          host: args.host, port: args.port, dataDir: args['data-dir'], apiKey: args['api-key'],
          maxBody: args['max-body'], logLevel: args['log-level'],
        });
      } catch (err) {
        console.error(`svc serve: ${(err as Error).message}`);
        process.exit(2);
      }
      const daemon = new Daemon(config);
      try {
        const addr = await daemon.start();
        // One plain line for people and scripts (the log has the details).
        console.log(`svc listening on http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`);
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
