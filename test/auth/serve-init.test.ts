// `svc serve` auth flags as users run them (child process): --init prints the first admin key once,
// --enforce-permissions=false warns, and bad combinations are usage errors (exit 2).
import t from 'tap';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { bearer, runSvc, startAuthDaemon, tempDir } from './harness.js';

const SERVE = ['serve', '--host', '127.0.0.1', '--port', '0', '--log-level', 'warn'];
const KEY = /sk-admin-[0-9a-f]{32}/g;

t.test('--init creates the first admin key and prints it once', async (t) => {
  const dir = tempDir(t);
  const first = await runSvc([...SERVE, '--data-dir', dir, '--auth-type', 'database', '--init'], {
    until: (out) => /Use it as/.test(out),
  });
  const keys = first.out.match(KEY) ?? [];
  t.ok(keys.length >= 1, `a key is printed\n${first.out}${first.err}`);
  t.equal(new Set(keys).size, 1, 'one key');
  t.match(first.out, /shown only now/);
  t.equal(statSync(join(dir, 'auth-secret')).mode & 0o777, 0o600, 'the installation secret is private');

  const second = await runSvc([...SERVE, '--data-dir', dir, '--auth-type', 'database', '--init'], {
    until: (_out, err) => /nothing created/.test(err),
  });
  t.match(second.err, /an admin key exists already; nothing created/);
  t.notMatch(second.out, /sk-/, 'the key is never printed again');

  const d = await startAuthDaemon(t, { authType: 'database' }, dir);
  t.same((await d.whoami(bearer(keys[0]!))).body,
    { authenticated: true, subject_type: 'user', subject_id: 'admin', tenant_id: 'default', is_admin: true }, 'the printed key works');
  const [k] = (await d.call('admin_list_keys', {}, bearer(keys[0]!))).keys;
  const days = (Date.parse(k.expires_at) - Date.now()) / 86_400_000;
  t.ok(days > 89 && days <= 90, 'valid for 90 days (spec §8 rotation)');
  t.equal((await d.call('admin_audit', { event: 'key.create' }, bearer(keys[0]!))).entries[0].actor, 'system:init');
});

t.test('--admin-user names the first admin', async (t) => {
  const dir = tempDir(t);
  const run = await runSvc([...SERVE, '--data-dir', dir, '--auth-type', 'database', '--init', '--admin-user', 'ops'], {
    until: (out) => /Use it as/.test(out),
  });
  t.match(run.out, /Admin API key for ops/);
  t.match(run.out, /sk-ops-[0-9a-f]{32}/);
});

t.test('usage errors: exit 2 with one line', async (t) => {
  const dir = tempDir(t);
  for (const [label, args, env, message] of [
    ['--init without database', ['--init'], {}, /--init needs --auth-type database/],
    ['--init with simple', ['--init', '--api-key', 'k'], {}, /--init needs --auth-type database/],
    ['postgres', ['--auth-type', 'database'], { SVC_DATABASE_URL: 'postgres://svc@db/svc' }, /arrives with the scale-out issue/],
    ['--api-key with database', ['--auth-type', 'database', '--api-key', 'k'], {}, /cannot be combined/],
    ['unknown auth type', ['--auth-type', 'kerberos'], {}, /Invalid values|Choices/],
  ] as const) {
    const run = await runSvc([...SERVE, '--data-dir', dir, ...args], { env });
    t.equal(run.code, 2, `${label}: exit 2`);
    t.match(run.err, message, label);
  }
  const badConfig = await runSvc([...SERVE, '--data-dir', dir, '--auth-type', 'oidc', '--auth-config', join(dir, 'none.json')]);
  t.equal(badConfig.code, 2);
  t.match(badConfig.err, /cannot read auth config/);
});

t.test('--enforce-permissions=false starts with a warning', async (t) => {
  const dir = tempDir(t);
  const run = await runSvc([...SERVE, '--data-dir', dir, '--api-key', 'sk-k-0123456789abcdef', '--enforce-permissions=false'], {
    until: (out, err) => /listening/.test(out) && /enforcement is off/.test(err),
  });
  t.match(run.err, /warning: permission enforcement is off/);
  const quiet = await runSvc([...SERVE, '--data-dir', dir, '--api-key', 'sk-k-0123456789abcdef'], { until: (out) => /listening/.test(out) });
  t.notMatch(quiet.err, /enforcement is off/, 'no warning by default');
});
