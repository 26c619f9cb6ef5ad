// `svc admin create-key|list-keys|get-key|revoke-key|update-key|audit` against a database-mode daemon
// (the real binary as a child process; the daemon in this process).
import t from 'tap';
import { bearer, runSvc, startAuthDaemon } from '../auth/harness.js';

t.test('svc admin key commands', async (t) => {
  const d = await startAuthDaemon(t, { authType: 'database' });
  const root = (await d.daemon.services.admin.initFirstAdmin('root', null))!;
  const env = { SVC_URL: d.url, SVC_API_KEY: root.api_key };
  const svc = (...args: string[]) => runSvc(['admin', ...args], { env });

  const created = await svc('create-key', 'alice', '--name', 'laptop', '--expires-days', '30', '--agent', 'alice-bot');
  t.equal(created.code, 0, created.err);
  const key = /sk-alice-[0-9a-f]{32}/.exec(created.out)?.[0];
  t.ok(key, 'the raw key is printed');
  const keyId = /created key (\S+) for user:alice/.exec(created.out)?.[1]!;
  t.equal((await d.whoami({ ...bearer(key!), 'X-Svc-Subject': 'agent:alice-bot' })).status, 200, '--agent lets the key act as its agent');

  const list = await svc('list-keys', '--user-id', 'alice');
  t.equal(list.code, 0, list.err);
  t.match(list.out, new RegExp(`${keyId}\\s+user:alice\\s+default\\s+no\\s+active`));
  t.match(list.out, /1-1 of 1 keys/);
  t.notMatch(list.out, /sk-alice/, 'list never shows a key');
  const json = JSON.parse((await svc('list-keys', '--json', '--admin')).out);
  t.equal(json.total, 1, '--admin filters to admin keys');
  t.equal(json.keys[0].user_id, 'root');

  const update = await svc('update-key', keyId, '--name', 'desktop', '--never-expires');
  t.equal(update.code, 0, update.err);
  t.match(update.out, /name:\s+desktop/);
  t.match(update.out, /expires_at:\s+never/);
  const nothing = await svc('update-key', keyId);
  t.equal(nothing.code, 2, 'nothing to change is a usage error');
  const badDays = await svc('update-key', keyId, '--expires-days', '0');
  t.equal(badDays.code, 2);
  t.match(badDays.err, /--expires-days must be a positive integer/);
  t.equal((await svc('update-key', keyId, '--expires-days', '3', '--never-expires')).code, 2, 'conflicting expiry flags');
  const lastAdmin = await svc('update-key', root.key_id, '--no-admin');
  t.equal(lastAdmin.code, 1);
  t.match(lastAdmin.err, /error -32005: Cannot remove admin privileges from the last admin key/);

  const get = await svc('get-key', keyId, '--json');
  t.match(JSON.parse(get.out), { key_id: keyId, name: 'desktop', expires_at: null, revoked: false });
  t.notMatch(get.out, /sk-alice|hash/);
  const missing = await svc('get-key', 'nope');
  t.equal(missing.code, 1);
  t.match(missing.err, /error -32000: API key not found: nope/);

  const revoke = await svc('revoke-key', keyId);
  t.equal(revoke.code, 0);
  t.match(revoke.out, `revoked key ${keyId}`);
  t.equal((await d.whoami(bearer(key!))).status, 401);

  const audit = await svc('audit', '--key-id', keyId, '--limit', '50');
  t.equal(audit.code, 0, audit.err);
  for (const e of ['key.create', 'key.update', 'key.revoke', 'auth.success']) t.match(audit.out, e);
  t.match(audit.out, /user:root/);
  const auditJson = JSON.parse((await svc('audit', '--event', 'key.revoke', '--json')).out);
  t.equal(auditJson.total, 1);
  t.equal((await svc('audit', '--since', 'yesterday-ish')).code, 2);

  const denied = await runSvc(['admin', 'list-keys'], { env: { SVC_URL: d.url, SVC_API_KEY: key! } });
  t.equal(denied.code, 1);
  t.match(denied.err, /error -32003/, 'a revoked key cannot administer');
});
