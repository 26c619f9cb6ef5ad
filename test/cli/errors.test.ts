import t from 'tap';
import { closedPortUrl, startDaemon, svc } from './harness.js';

const KEY = 'sk-test-cli-0123456789abcdef';
const open = await startDaemon(t);
const locked = await startDaemon(t, { apiKey: KEY });

t.test('an RPC error is one stderr line naming the code, exit 1, no stack', async (t) => {
  const [missing, badPath] = await Promise.all([
    svc(['cat', '/nope.txt'], { url: open.url }),
    svc(['cat', '/a/../b'], { url: open.url }),
  ]);
  t.equal(missing.code, 1, missing.stderr);
  t.equal(missing.stderr, 'svc: error -32000: File not found: /nope.txt\n');
  t.equal(missing.out, '');
  t.equal(badPath.code, 1, badPath.stderr);
  t.equal(badPath.stderr, "svc: error -32002: Path contains '..' segment: /a/../b\n");
});

t.test('an unreachable daemon is exit 3 with a hint', async (t) => {
  const url = await closedPortUrl();
  const [viaEnv, viaFlag, status] = await Promise.all([
    svc(['ls'], { url }),
    svc(['cat', '/x', '--url', url], { url: open.url }),
    svc(['status'], { url }),
  ]);
  for (const r of [viaEnv, viaFlag, status]) {
    t.equal(r.code, 3, r.stderr);
    t.match(r.stderr, new RegExp(`^svc: cannot reach svc at ${url.replace(/\./g, '\\.')}: .*ECONNREFUSED.*; is \`svc serve\` running\\?\\n$`));
    t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
});

t.test('usage errors are exit 2', async (t) => {
  const [unknown, noArg, extra, badUrl, none] = await Promise.all([
    svc(['frobnicate'], { url: open.url }),
    svc(['cat'], { url: open.url }),
    svc(['rm', '/a', '/b'], { url: open.url }),
    svc(['ls', '--url', 'not a url']),
    svc([]),
  ]);
  t.equal(unknown.code, 2, unknown.stderr);
  t.match(unknown.stderr, /^svc: Unknown argument: frobnicate/);
  t.equal(noArg.code, 2, noArg.stderr);
  t.match(noArg.stderr, /^svc: Not enough non-option arguments/);
  t.equal(extra.code, 2, extra.stderr);
  t.match(extra.stderr, /^svc: Unknown argument/);
  t.equal(badUrl.code, 2, badUrl.stderr);
  t.equal(badUrl.stderr, 'svc: invalid daemon URL: not a url (expected e.g. http://127.0.0.1:2026)\n');
  t.equal(none.code, 2, none.stderr);
});

t.test('--api-key and SVC_API_KEY authenticate; without them the daemon refuses', async (t) => {
  const [noKey, wrongKey, flag, env, status, statusNoKey] = await Promise.all([
    svc(['ls'], { url: locked.url }),
    svc(['ls', '--api-key', 'sk-wrong'], { url: locked.url }),
    svc(['write', '/k.txt', '--api-key', KEY], { url: locked.url, input: 'k' }),
    svc(['ls', '--json'], { url: locked.url, env: { SVC_API_KEY: KEY } }),
    svc(['status', '--api-key', KEY], { url: locked.url }),
    svc(['status'], { url: locked.url }),
  ]);
  t.equal(noKey.code, 1, noKey.stderr);
  t.match(noKey.stderr, /^svc: error -32003: Invalid or expired token/);
  t.equal(wrongKey.code, 1, wrongKey.stderr);
  t.match(wrongKey.stderr, /^svc: error -32003: /);
  t.equal(flag.code, 0, flag.stderr);
  t.equal(env.code, 0, env.stderr);
  t.ok(Array.isArray(JSON.parse(env.out)));
  t.equal(status.code, 0, status.stderr);
  t.match(status.out, /^subject:\s+user:admin \(authenticated, admin\)$/m);
  t.equal(statusNoKey.code, 1, statusNoKey.stderr);
  t.match(statusNoKey.stderr, /^svc: error -32003: /);
});

t.test('status shows the daemon and the caller; --json both records', async (t) => {
  const [human, json] = await Promise.all([svc(['status'], { url: open.url }), svc(['status', '--json'], { url: open.url })]);
  t.equal(human.code, 0, human.stderr);
  t.match(human.out, new RegExp(`^daemon:\\s+svc-rpc \\S+ \\(running\\) at ${open.url.replace(/\./g, '\\.')}$`, 'm'));
  t.match(human.out, /^backend:\s+local \(/m);
  t.match(human.out, /^metadata store:\s+lmdb \(/m);
  t.match(human.out, /^methods:\s+\d+$/m);
  t.match(human.out, /^subject:\s+user:anonymous \(not authenticated\)$/m);
  t.match(human.out, /^tenant:\s+default$/m);
  const parsed = JSON.parse(json.out);
  t.match(parsed.status, { status: 'running', service: 'svc-rpc' });
  t.ok(parsed.status.methods.includes('write'));
  t.match(parsed.whoami, { authenticated: false, subject_type: 'user', subject_id: 'anonymous', tenant_id: 'default' });
});
