/**
 * @module cli/versions
 * `svc versions list|get|rollback|diff`: a file's version history (spec §4.12) against a running
 * daemon. History is never rewritten: a rollback writes the old content as a new version.
 */
import type { Argv } from 'yargs';
import { writeFile } from 'node:fs/promises';
import type { Wire } from '../client/index.js';
import type { VersionEntry } from '../fs/service.js';
import {
  CliError, Exit, clientOptions, displayPath, keyValues, printJson, printLines, run, shortEtag, shortTime,
  positiveInt, table, writeOut,
} from './output.js';

// Positionals are `ver`, `v1`, `v2`: a positional named `version` would collide with `--version`.

/** Register `svc versions` and its subcommands. */
export function versionCommands(cli: Argv): Argv {
  return cli.command(
    'versions',
    'File version history: list, get, rollback, diff',
    (y) => y
      .command(
        'list <path>',
        'Versions of a file, newest first',
        (y) => clientOptions(y).positional('path', { type: 'string', demandOption: true, describe: 'File' }),
        (a) => run(a, async ({ client, json }) => {
          const versions = await client.call('list_versions', { path: a.path });
          if (json) return printJson(versions);
          await printLines(table(
            ['VERSION', 'SIZE', 'MODIFIED', 'ETAG', 'SOURCE'],
            versions.map((v: Wire<VersionEntry>) => [String(v.version), String(v.size), shortTime(v.modified_at), shortEtag(v.etag), v.source]),
            [0, 1],
          ));
        }),
      )
      .command(
        'get <path> <ver>',
        'Content of one version (raw bytes to stdout, or --out FILE)',
        (y) => clientOptions(y)
          .positional('path', { type: 'string', demandOption: true, describe: 'File' })
          .positional('ver', { type: 'string', demandOption: true, describe: 'Version number' })
          .option('out', { alias: 'o', type: 'string', describe: 'Write the content to this local file instead of stdout' }),
        (a) => run(a, async ({ client, json }) => {
          const version = positiveInt('version', a.ver);
          const content = await client.call('get_version', { path: a.path, version });
          if (a.out === undefined) return json ? printJson(content) : writeOut(content);
          try {
            await writeFile(a.out, content);
          } catch (err) {
            throw new CliError(`cannot write ${a.out}: ${(err as Error).message}`, Exit.ERROR);
          }
          if (json) return printJson({ path: displayPath(a.path), version, size: content.length, out: a.out });
          await printLines([`wrote version ${version} of ${displayPath(a.path)} to ${a.out} (${content.length} bytes)`]);
        }),
      )
      .command(
        'rollback <path> <ver>',
        'Bring back an earlier version (as a new version)',
        (y) => clientOptions(y)
          .positional('path', { type: 'string', demandOption: true, describe: 'File' })
          .positional('ver', { type: 'string', demandOption: true, describe: 'Version to bring back' }),
        (a) => run(a, async ({ client, json }) => {
          const version = positiveInt('version', a.ver);
          const result = await client.call('rollback', { path: a.path, version });
          if (json) return printJson(result);
          await printLines([
            `rolled back ${displayPath(a.path)} to version ${version} (now version ${result.version}, etag ${shortEtag(result.etag)})`,
          ]);
        }),
      )
      .command(
        'diff <path> <v1> <v2>',
        'Compare two versions: metadata, or a unified diff of the content',
        (y) => clientOptions(y)
          .positional('path', { type: 'string', demandOption: true, describe: 'File' })
          .positional('v1', { type: 'string', demandOption: true, describe: 'Older version' })
          .positional('v2', { type: 'string', demandOption: true, describe: 'Newer version' })
          .option('mode', { type: 'string', choices: ['metadata', 'content'] as const, default: 'metadata' as const, describe: 'What to compare' }),
        (a) => run(a, async ({ client, json }) => {
          const v1 = positiveInt('v1', a.v1);
          const v2 = positiveInt('v2', a.v2);
          const result = await client.call('diff_versions', { path: a.path, v1, v2, mode: a.mode });
          if (json) return printJson(result);
          if (typeof result === 'string') return writeOut(result.endsWith('\n') ? result : result + '\n');
          const m = result as { path: string; v1: number; v2: number; etag_v1: string; etag_v2: string; size_v1: number; size_v2: number; content_changed: boolean };
          await printLines(keyValues([
            ['path', m.path],
            ['versions', `${m.v1} -> ${m.v2}`],
            ['etag', `${shortEtag(m.etag_v1)} -> ${shortEtag(m.etag_v2)}`],
            ['size', `${m.size_v1} -> ${m.size_v2} bytes`],
            ['content changed', m.content_changed ? 'yes' : 'no'],
          ]));
        }),
      )
      .demandCommand(1, 'Name a subcommand: list, get, rollback or diff'),
    () => undefined,
  );
}
