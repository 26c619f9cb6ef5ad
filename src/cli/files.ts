/**
 * @module cli/files
 * File commands against a running daemon. (Filled in below.)
 */
import type { Argv } from 'yargs';

export function fileCommands(cli: Argv): Argv {
  return cli;
}
