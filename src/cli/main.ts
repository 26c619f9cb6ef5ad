/**
 * @module cli/main
 * The `svc` command: `serve` runs the daemon; the other commands talk to a running daemon
 * through the typed client (SVC_URL / SVC_API_KEY or --url / --api-key).
 */
import yargs, { type Argv } from 'yargs';
import { VERSION } from '../version.js';
import { serveCommand } from './serve.js';
import { fileCommands } from './files.js';
import { versionCommands } from './versions.js';
import { adminCommands } from './admin.js';
import { workspaceCommands } from './workspaces.js';
import { mountCommands } from './mounts.js';
import { mountCommand } from './mount.js';

export async function main(argv: string[]): Promise<void> {
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
  cli = fileCommands(cli);
  cli = versionCommands(cli);
  cli = adminCommands(cli);
  cli = workspaceCommands(cli);
  cli = mountCommands(cli);
  cli = mountCommand(cli);
  await cli.parseAsync();
}
