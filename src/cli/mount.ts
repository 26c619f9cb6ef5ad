/**
 * @module cli/mount
 * `svc mount DIR --remote-url URL [--api-key KEY]`: mount a (possibly shared) daemon's file tree
 * through the RPC client and serve it until SIGINT/SIGTERM or until it is unmounted from outside
 * (then it exits 0); `svc unmount DIR` detaches any svc mount, including one served by
 * `svc serve --mount` and a stale one left by a crash.
 */
import type { Argv } from 'yargs';
import { resolve } from 'node:path';
import { clientSettings, LOG_LEVELS } from '../config.js';
import { createLogger } from '../core/log.js';
import { forceUnmount, FuseUnavailableError, mountedType } from '../native/fuse.js';

/** Register `svc mount` and `svc unmount`. */
export function mountCommand(cli: Argv): Argv {
  return cli
    .command(
      'mount <dir>',
      'Mount a daemon\'s file tree at DIR with FUSE (through RPC) until interrupted',
      (y) => y
        .positional('dir', { type: 'string', demandOption: true, describe: 'Mount point (created if missing)' })
        .option('remote-url', { type: 'string', describe: 'Daemon to mount', defaultDescription: '$SVC_URL, else http://127.0.0.1:2026' })
        .option('api-key', { type: 'string', describe: 'Bearer key: the mount acts as its subject', defaultDescription: '$SVC_API_KEY' })
        .option('log-level', { type: 'string', choices: LOG_LEVELS, default: 'info', describe: 'Log verbosity' })
        .option('debug-fuse', { type: 'boolean', default: false, describe: 'libfuse debug output on stderr' }),
      async (args) => {
        const settings = clientSettings({ url: args['remote-url'], apiKey: args['api-key'] });
        const log = createLogger(args['log-level']);
        const dir = resolve(args.dir);
        // Loaded here: other commands should not pay for the FUSE modules.
        const { RemoteBackend, UnreachableError } = await import('../transports/fuse/remote.js');
        const { FuseMount } = await import('../transports/fuse/mount.js');
        const backend = new RemoteBackend({ url: settings.url, apiKey: settings.apiKey, log: log.child({ component: 'remote' }) });
        const mount = new FuseMount({
          dir, backend, log: log.child({ component: 'fuse' }), debug: args['debug-fuse'],
          // `svc unmount DIR` (or fusermount -u) from outside: nothing left to serve.
          onDetached: () => {
            log.flush?.();
            process.exit(0);
          },
        });
        try {
          await backend.connect();
          await mount.start();
        } catch (err) {
          console.error(`svc mount: ${(err as Error).message}`);
          await mount.stop().catch(() => undefined);
          // README: exit 3 when the daemon cannot be reached, as for every client command.
          process.exit(err instanceof FuseUnavailableError ? 2 : err instanceof UnreachableError ? 3 : 1);
        }
        console.log(`svc mounted ${settings.url} at ${dir}`);
        const shutdown = (signal: string) => {
          log.info({ signal }, 'unmounting');
          mount.stop().then(() => {
            log.flush?.();
            process.exit(0);
          }, (err) => {
            console.error(`svc mount: error while unmounting: ${(err as Error).message}`);
            process.exit(1);
          });
        };
        process.once('SIGINT', () => shutdown('SIGINT'));
        process.once('SIGTERM', () => shutdown('SIGTERM'));
      },
    )
    .command(
      'unmount <dir>',
      'Unmount an svc FUSE mount (also clears a stale one left by a crash)',
      (y) => y.positional('dir', { type: 'string', demandOption: true }),
      async (args) => {
        const dir = resolve(args.dir);
        try {
          // Only FUSE mounts: run as root, fusermount (and umount) would detach any file system.
          const type = await mountedType(dir);
          if (type !== undefined && !/^fuse(blk)?(\.|$)/.test(type)) {
            console.error(`svc unmount: ${dir} is not a FUSE mount (it is ${type}); left as it is`);
            process.exitCode = 1;
            return;
          }
          if (!(await forceUnmount(dir))) {
            console.error(`svc unmount: nothing is mounted at ${dir}`);
            process.exitCode = 1;
            return;
          }
        } catch (err) {
          console.error(`svc unmount: ${(err as Error).message}`);
          process.exitCode = 1;
          return;
        }
        console.log(`unmounted ${dir}`);
      },
    );
}
