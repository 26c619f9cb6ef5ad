/**
 * `svc serve`'s start-up fast path (parseServeArgs) must read arguments exactly as yargs does with
 * the same option table, and must hand everything it is unsure of to yargs. Each case is parsed
 * both ways; yargs runs with the options of the real command (serveCommand) and a stub handler.
 */
import t from 'tap';
import yargs from 'yargs';
import { parseServeArgs, SERVE_OPTIONS, serveCommand, type ServeArgs } from '../../src/cli/serve.js';

/** What yargs makes of `serve ...args`: the option values, or the usage error it reports. */
async function viaYargs(args: string[]): Promise<Record<string, unknown> | { error: string }> {
  let seen: Record<string, unknown> | undefined;
  let error: string | undefined;
  const cli = serveCommand(yargs(['serve', ...args]).strict().exitProcess(false).fail((msg, err) => {
    error = msg ?? err?.message ?? 'failed';
  }), (parsed) => {
    seen = parsed as unknown as Record<string, unknown>;
  });
  await cli.parseAsync();
  if (error !== undefined || !seen) return { error: error ?? 'no handler ran' };
  return Object.fromEntries(Object.keys(SERVE_OPTIONS).filter((k) => seen![k] !== undefined).map((k) => [k, seen![k]]));
}

const defined = (a: ServeArgs): Record<string, unknown> => Object.fromEntries(Object.entries(a).filter(([, v]) => v !== undefined));

t.test('plain forms: the fast path gives what yargs gives', async (t) => {
  const cases: string[][] = [
    [],
    ['--port', '0'],
    ['--port=0', '--host', '127.0.0.1'],
    ['--port', '2026', '--data-dir', '/tmp/svc data', '--log-level', 'warn'],
    ['--data-dir=/a=b', '--max-body=64mb', '--mount', '/mnt/svc'],
    ['--api-key', 'sk-123', '--auth-type', 'simple'],
    ['--auth-type=database', '--init', '--admin-user', 'root'],
    ['--auth-config', 'auth.yaml', '--auth-type', 'oidc', '--enforce-permissions'],
    ['--no-enforce-permissions'],
    ['--enforce-permissions=false', '--init=true'],
    ['--enforce-permissions=true', '--no-init'],
    ['--host', '0.0.0.0', '--port', '65535'],
    ['--mount', '123'],
  ];
  for (const args of cases) {
    const fast = parseServeArgs(args);
    t.ok(fast, `fast path takes ${JSON.stringify(args)}`);
    if (fast) t.same(defined(fast), await viaYargs(args), JSON.stringify(args));
  }
});

t.test('anything else goes to yargs (the fast path declines)', async (t) => {
  const declined: string[][] = [
    ['--help'], ['--version'], ['-h'], ['--port'], ['--port', '-1'], ['--port', 'abc'], ['--port', '08'], ['--port', '1e3'],
    ['--port', '0', '--port', '1'], ['--dataDir', '/x'], ['--data_dir', '/x'], ['--unknown'], ['extra'], ['--', '--port', '0'],
    ['--log-level', 'loud'], ['--auth-type', 'magic'], ['--host='], ['--host', '--port', '0'], ['--init', 'false'],
    ['--enforce-permissions', 'true'], ['--init=yes'], ['--no-port'], ['--no-init=true'], ['--api-key', '-secret'],
    ['--host.x=1'], ['-p', '0'],
  ];
  for (const args of declined) t.equal(parseServeArgs(args), undefined, JSON.stringify(args));
});

t.test('declined forms that yargs accepts still reach the same values through yargs', async (t) => {
  // Sanity check of the other side: yargs really does read some declined forms differently from a
  // naive parser, which is why the fast path leaves them alone.
  t.same(await viaYargs(['--init', 'false']), { init: false, 'admin-user': 'admin' });
  t.match(await viaYargs(['--unknown']), { error: /Unknown argument/ });
  t.match(await viaYargs(['--log-level', 'loud']), { error: /Invalid values/ });
});
