/**
 * @module cli/main
 * The `svc` command: `serve` runs the daemon; the other commands talk to a running daemon
 * through the typed client (SVC_URL / SVC_API_KEY or --url / --api-key).
 *
 * Start-up: `svc serve` with plain options (cli/serve parseServeArgs) starts the daemon without
 * loading yargs or the client commands; everything else, and any serve arguments the fast path
 * is unsure of, goes through yargs. Both are imported here on demand for that reason.
 */
import type { Argv } from 'yargs';
import { VERSION } from '../version.js';
import { parseServeArgs, runServe, serveCommand } from './serve.js';

export async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'serve') {
    const args = parseServeArgs(argv.slice(1));
    if (args) return runServe(args);
  }
  const [{ default: yargs }, files, versions, admin, workspaces, mounts, mount] = await Promise.all([
    import('yargs'), import('./files.js'), import('./versions.js'), import('./admin.js'),
    import('./workspaces.js'), import('./mounts.js'), import('./mount.js'),
  ]);
  let cli: Argv = yargs(argv)
    .scriptName('svc')
    .version(VERSION)
    .strict()
    .demandCommand(1, 'Name a command: svc --help lists them')
    .recommendCommands()
    .wrap(Math.min(110, process.stdout.columns || 100))
    .fail((msg, err, y) => {
      // Command bodies report their own failures (cli/output run()); what reaches here is a usage
      // problem: a missing argument, or a check or coerce that refused a value.
      if (err) {
        console.error(`svc: ${err.message}`);
        process.exit(2);
      }
      console.error(`svc: ${msg}\n`);
      console.error(y.help());
      process.exit(2);
    });
  cli = serveCommand(cli);
  cli = files.fileCommands(cli);
  cli = versions.versionCommands(cli);
  cli = admin.adminCommands(cli);
  cli = workspaces.workspaceCommands(cli);
  cli = mounts.mountCommands(cli);
  cli = mount.mountCommand(cli);
  await cli.parseAsync();
}
