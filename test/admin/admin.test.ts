// Admin API (spec §4.10, §3 "API key", §7 rule 2; WIRE.md "Admin"): the key lifecycle, filters and
// pagination, the last-admin rule, validation, other modes, and persistence across a restart.
import t, { type Test } from 'tap';
import { bearer, startAuthDaemon, tempDir } from '../auth/harness.js';

const DAY = 86_400_000;
const RECORD_FIELDS = [
  'key_id', 'user_id', 'subject_type', 'subject_id', 'name', 'tenant_id', 'is_admin', 'created_at', 'expires_at', 'revoked',
  'revoked_at', 'last_used_at', 'metadata',
].sort();

async function databaseDaemon(t: Test, dataDir?: string) {
  const d = await startAuthDaemon(t, { authType: 'database' }, dataDir);
  const root = (await d.daemon.services.admin.initFirstAdmin('root', null))!;
  return { d, root, ADMIN: bearer(root.api_key) };
}

t.test('key lifecycle: create → list → update → revoke → authentication fails', async (t) => {
  const { d, ADMIN } = await databaseDaemon(t);
  const created = await d.call('admin_create_key', { user_id: 'alice', name: 'laptop', expires_days: 30 }, ADMIN);
  t.match(created, {
    key_id: String, api_key: /^sk-alice-[0-9a-f]{32}$/, user_id: 'alice', name: 'laptop', subject_type: 'user', subject_id: 'alice',
    tenant_id: 'default', is_admin: false,
  });
  const expires = Date.parse(created.expires_at);
  t.ok(Math.abs(expires - (Date.now() + 30 * DAY)) < 60_000, 'expires_at is 30 days from now');
  const KEY = bearer(created.api_key);
  t.equal((await d.whoami(KEY)).status, 200, 'the new key works at once');

  const got = await d.call('admin_get_key', { key_id: created.key_id }, ADMIN);
  t.same(Object.keys(got).sort(), RECORD_FIELDS, 'the record of spec §2.3, nothing else');
  t.notOk(JSON.stringify(got).includes(created.api_key.slice(-32)), 'no raw key in get');
  t.notOk(/hash/i.test(JSON.stringify(got)), 'no hash in get');
  t.match(got, { revoked: false, revoked_at: null, is_admin: false, name: 'laptop' });
  t.ok(got.last_used_at, 'last_used_at after the whoami');

  const listed = await d.call('admin_list_keys', { user_id: 'alice' }, ADMIN);
  t.equal(listed.total, 1);
  t.same(Object.keys(listed.keys[0]).sort(), RECORD_FIELDS, 'list records carry no key either');
  t.notOk(JSON.stringify(listed).includes(created.api_key.slice(-32)));

  const renamed = await d.call('admin_update_key', { key_id: created.key_id, name: 'desktop' }, ADMIN);
  t.equal(renamed.name, 'desktop');
  t.equal(renamed.expires_at, got.expires_at, 'absent expires_days leaves the expiry unchanged');
  t.same(Object.keys(renamed).sort(), RECORD_FIELDS, 'update result carries no key');
  const never = await d.call('admin_update_key', { key_id: created.key_id, expires_days: null }, ADMIN);
  t.equal(never.expires_at, null, 'null = never expires');
  const week = await d.call('admin_update_key', { key_id: created.key_id, expires_days: 7, is_admin: true }, ADMIN);
  t.ok(Math.abs(Date.parse(week.expires_at) - (Date.now() + 7 * DAY)) < 60_000, 'expires_days counts from now');
  t.equal(week.is_admin, true);
  t.equal((await d.whoami(KEY)).body.is_admin, true, 'promotion takes effect at once');
  await d.call('admin_update_key', { key_id: created.key_id, is_admin: false }, ADMIN);
  t.equal((await d.whoami(KEY)).body.is_admin, false, 'so does demotion');

  t.same(await d.call('admin_revoke_key', { key_id: created.key_id }, ADMIN), { success: true, key_id: created.key_id });
  t.equal((await d.whoami(KEY)).status, 401, 'a revoked key fails at once');
  t.equal((await d.rpc('exists', { path: '/' }, KEY)).error?.code, -32003);
  const revoked = await d.call('admin_get_key', { key_id: created.key_id }, ADMIN);
  t.match(revoked, { revoked: true, revoked_at: String });
  t.same(await d.call('admin_revoke_key', { key_id: created.key_id }, ADMIN), { success: true, key_id: created.key_id },
    'revoking again is harmless');
  t.equal((await d.call('admin_get_key', { key_id: created.key_id }, ADMIN)).revoked_at, revoked.revoked_at, 'revoked_at kept');
  const upd = await d.rpc('admin_update_key', { key_id: created.key_id, name: 'back?' }, ADMIN);
  t.equal(upd.error?.code, -32005, 'irreversible: a revoked key cannot change');
  t.equal((await d.whoami(KEY)).status, 401, 'still revoked');
  t.equal((await d.call('admin_list_keys', { user_id: 'alice' }, ADMIN)).total, 0, 'revoked keys are hidden by default');
  t.equal((await d.call('admin_list_keys', { user_id: 'alice', include_revoked: true }, ADMIN)).total, 1);

  const events = (await d.call('admin_audit', { key_id: created.key_id, limit: 100 }, ADMIN)).entries.map((e: any) => e.event);
  for (const e of ['key.create', 'key.update', 'key.revoke', 'auth.success', 'auth.failure']) t.ok(events.includes(e), `audit has ${e}`);
});

t.test('expiry: an expired key fails, is hidden unless include_expired, and can be renewed', async (t) => {
  const { d, ADMIN } = await databaseDaemon(t);
  const keys = d.daemon.services.keys;
  const stale = await keys.create({ user_id: 'erin', name: 'stale', expires_days: 1 }, 'test', Date.now() - 2 * DAY);
  const fresh = await keys.create({ user_id: 'erin', name: 'fresh', expires_days: 1 }, 'test');
  t.equal((await d.whoami(bearer(stale.api_key))).status, 401, 'expired');
  t.equal((await d.whoami(bearer(fresh.api_key))).status, 200, 'not yet');
  t.same((await d.call('admin_list_keys', { user_id: 'erin' }, ADMIN)).keys.map((k: any) => k.name), ['fresh']);
  t.same((await d.call('admin_list_keys', { user_id: 'erin', include_expired: true }, ADMIN)).keys.map((k: any) => k.name), ['stale', 'fresh']);
  await d.call('admin_update_key', { key_id: stale.key_id, expires_days: 1 }, ADMIN);
  t.equal((await d.whoami(bearer(stale.api_key))).status, 200, 'renewed');
});

t.test('filters and pagination with a true total', async (t) => {
  const { d, ADMIN } = await databaseDaemon(t);
  for (let i = 0; i < 7; i++) await d.call('admin_create_key', { user_id: 'u1', name: `k${i}`, tenant_id: 'acme' }, ADMIN);
  for (let i = 0; i < 3; i++) await d.call('admin_create_key', { user_id: 'u2', name: `j${i}`, is_admin: true }, ADMIN);
  const all = await d.call('admin_list_keys', {}, ADMIN);
  t.equal(all.total, 11, 'root + 10');
  const page1 = await d.call('admin_list_keys', { user_id: 'u1', limit: 3 }, ADMIN);
  const page3 = await d.call('admin_list_keys', { user_id: 'u1', limit: 3, offset: 6 }, ADMIN);
  const beyond = await d.call('admin_list_keys', { user_id: 'u1', limit: 3, offset: 30 }, ADMIN);
  t.equal(page1.total, 7, 'total counts every match, not the page');
  t.same(page1.keys.map((k: any) => k.name), ['k0', 'k1', 'k2'], 'oldest first');
  t.same(page3.keys.map((k: any) => k.name), ['k6']);
  t.same(beyond, { keys: [], total: 7 });
  t.equal((await d.call('admin_list_keys', { tenant_id: 'acme' }, ADMIN)).total, 7);
  t.equal((await d.call('admin_list_keys', { is_admin: true }, ADMIN)).total, 4);
  t.equal((await d.call('admin_list_keys', { is_admin: false }, ADMIN)).total, 7);
  t.equal((await d.call('admin_list_keys', { is_admin: true, user_id: 'u2', limit: 1 }, ADMIN)).total, 3);
  const audit = await d.call('admin_audit', { event: 'key.create', limit: 4, offset: 2 }, ADMIN);
  t.equal(audit.total, 11);
  t.equal(audit.entries.length, 4);
});

t.test('the last admin key cannot lose admin (-32005)', async (t) => {
  const { d, root, ADMIN } = await databaseDaemon(t);
  const demote = await d.rpc('admin_update_key', { key_id: root.key_id, is_admin: false }, ADMIN);
  t.equal(demote.error?.code, -32005);
  t.match(demote.error?.message, /last admin key/);
  t.equal((await d.rpc('admin_revoke_key', { key_id: root.key_id }, ADMIN)).error?.code, -32005, 'nor be revoked');
  // An expired admin key does not count: it could not administer anything.
  await d.daemon.services.keys.create({ user_id: 'old', name: 'old admin', is_admin: true, expires_days: 1 }, 'test', Date.now() - 2 * DAY);
  t.equal((await d.rpc('admin_update_key', { key_id: root.key_id, is_admin: false }, ADMIN)).error?.code, -32005);
  const second = await d.call('admin_create_key', { user_id: 'deputy', name: 'second admin', is_admin: true }, ADMIN);
  t.equal((await d.call('admin_update_key', { key_id: root.key_id, is_admin: false }, ADMIN)).is_admin, false, 'fine with another admin');
  const D = bearer(second.api_key);
  t.equal((await d.rpc('admin_list_keys', {}, ADMIN)).error?.code, -32004, 'the demoted key lost admin at once');
  t.equal((await d.rpc('admin_update_key', { key_id: second.key_id, is_admin: false }, D)).error?.code, -32005, 'now the deputy is last');
  t.equal((await d.call('admin_get_key', { key_id: second.key_id }, D)).is_admin, true);
});

t.test('validation and unknown keys', async (t) => {
  const { d, ADMIN } = await databaseDaemon(t);
  const missing = await d.rpc('admin_get_key', { key_id: 'no-such-key' }, ADMIN);
  t.equal(missing.error?.code, -32000);
  t.equal(missing.error?.message, 'API key not found: no-such-key');
  t.equal((await d.rpc('admin_revoke_key', { key_id: 'no-such-key' }, ADMIN)).error?.code, -32000);
  t.equal((await d.rpc('admin_update_key', { key_id: 'no-such-key', name: 'x' }, ADMIN)).error?.code, -32000);
  for (const bad of [0, -1, 1.5, '7', true]) {
    const a = await d.rpc('admin_create_key', { user_id: 'v', name: 'v', expires_days: bad }, ADMIN);
    t.equal(a.error?.code, -32602, `expires_days ${JSON.stringify(bad)} refused`);
    t.same(a.error?.data, { param: 'expires_days' });
  }
  const k = await d.call('admin_create_key', { user_id: 'v', name: 'v' }, ADMIN);
  t.equal(k.expires_at, null, 'no expires_days = never');
  t.equal((await d.rpc('admin_update_key', { key_id: k.key_id, expires_days: 0 }, ADMIN)).error?.code, -32602);
  t.equal((await d.rpc('admin_create_key', { name: 'v' }, ADMIN)).error?.code, -32602, 'user_id required');
  t.equal((await d.rpc('admin_create_key', { user_id: 'v' }, ADMIN)).error?.code, -32602, 'name required');
  t.equal((await d.rpc('admin_create_key', { user_id: 'v', name: 'v', subject_type: 'robot' }, ADMIN)).error?.code, -32602);
  const agent = await d.call('admin_create_key', { user_id: 'v', name: 'bot', subject_type: 'agent', subject_id: 'v-bot', tenant_id: null }, ADMIN);
  t.match(agent, { subject_type: 'agent', subject_id: 'v-bot', tenant_id: null, api_key: /^sk-v_bot-/ });
  t.same((await d.whoami(bearer(agent.api_key))).body,
    { authenticated: true, subject_type: 'agent', subject_id: 'v-bot', tenant_id: 'default', is_admin: false }, 'null tenant = default');
});

t.test('keys and the audit trail survive a restart', async (t) => {
  const dir = tempDir(t);
  const { d, ADMIN } = await databaseDaemon(t, dir);
  const k = await d.call('admin_create_key', { user_id: 'pat', name: 'persist' }, ADMIN);
  const gone = await d.call('admin_create_key', { user_id: 'pat', name: 'revoked' }, ADMIN);
  await d.call('admin_revoke_key', { key_id: gone.key_id }, ADMIN);
  t.equal((await d.whoami(bearer(k.api_key))).status, 200);
  const before = await d.call('admin_audit', { limit: 1000 }, ADMIN);
  await d.restart();
  t.equal((await d.whoami(bearer(k.api_key))).status, 200, 'the key still works (same installation secret)');
  t.equal((await d.whoami(bearer(gone.api_key))).status, 401, 'revocation persisted');
  const after = await d.call('admin_audit', { limit: 1000 }, ADMIN);
  t.ok(after.total > before.total, 'the trail goes on');
  t.same(after.entries.slice(after.total - before.total), before.entries, 'earlier entries unchanged (append-only)');
  t.match(await d.call('admin_get_key', { key_id: k.key_id }, ADMIN), { name: 'persist', last_used_at: String });
});

t.test('without database mode, key administration is -32005 (and -32004 for non-admins)', async (t) => {
  const simple = await startAuthDaemon(t, { apiKey: 'sk-simple-0123456789abcdef' });
  const a = await simple.rpc('admin_list_keys', {}, bearer('sk-simple-0123456789abcdef'));
  t.equal(a.error?.code, -32005);
  t.match(a.error?.message, /--auth-type database/);
  t.equal((await simple.rpc('admin_audit', {}, bearer('sk-simple-0123456789abcdef'))).error?.code, -32005);
  const open = await startAuthDaemon(t, {});
  t.equal((await open.rpc('admin_list_keys', {})).error?.code, -32004, 'no auth: nobody is admin');
  const status = await (await open.raw('/api/nfs/status')).json();
  for (const m of ['admin_audit', 'admin_create_key', 'admin_get_key', 'admin_list_keys', 'admin_revoke_key', 'admin_update_key']) {
    t.ok(status.methods.includes(m), `status lists ${m}`);
  }
});
