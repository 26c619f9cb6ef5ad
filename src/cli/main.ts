/**
 * @module cli/main
 * The `svc` command: `serve` runs the daemon; the other commands talk to a running daemon
 * through the typed client (SVC_URL / SVC_API_KEY or --url / --api-key).
 */
import yargs, { type Argv } from 'yargs';
import { VERSION } from '../version.js';
import { serveCommand } from './serve.js';
import { fileCommands } from './files.js';

export async function main(argv: string[]): Promise<void> {
  let cli: Argv = yargs(argv)
    .scriptName('svc')
    .version(VERSION)
    .strict()
    .demandCommand(1, 'Name a command: svc --help lists them')
    .recommendCommands()
    .wrap(Math.min(110, process.stdout.columns || 100))
    .fail((msg, err, y) => {
      if (err) throw err;
      console.error(`svc: ${msg}\n`);
      console.error(y.help());
      process.exit(2);
    });
  cli = serveCommand(cli);
  cli = fileCommands(cli);
  await cli.parseAsync();
}
