// Database key mode over real HTTP (spec §5.1, §5.2, §7; WIRE.md "Identity"): the authorization matrix
// of credentials, admin-only methods and identity headers.
import t from 'tap';
import { bearer, startAuthDaemon } from './harness.js';
import { connectWs } from '../helpers/ws.js';

const DAY = 86_400_000;
const ADMIN_METHODS: [string, Record<string, unknown>][] = [
  ['admin_create_key', { user_id: 'mallory', name: 'sneaky', is_admin: true }],
  ['admin_list_keys', {}],
  ['admin_get_key', { key_id: 'x' }],
  ['admin_revoke_key', { key_id: 'x' }],
  ['admin_update_key', { key_id: 'x', is_admin: true }],
  ['admin_audit', {}],
];

t.test('database mode', async (t) => {
  const d = await startAuthDaemon(t, { authType: 'database' });
  const root = (await d.daemon.services.admin.initFirstAdmin('root', null))!;
  const ADMIN = bearer(root.api_key);
  const alice = await d.call('admin_create_key', { user_id: 'alice', name: 'laptop', metadata: { agents: ['alice-bot'] } }, ADMIN);
  const bob = await d.call('admin_create_key', { user_id: 'bob', name: 'ci', tenant_id: 'beta' }, ADMIN);
  const helper = await d.call('admin_create_key', {
    user_id: 'alice', name: 'helper agent', subject_type: 'agent', subject_id: 'helper',
  }, ADMIN);
  const revoked = await d.call('admin_create_key', { user_id: 'carol', name: 'old' }, ADMIN);
  await d.call('admin_revoke_key', { key_id: revoked.key_id }, ADMIN);
  // Created two days ago with a one-day lifetime: expired a day ago.
  const expired = await d.daemon.services.keys.create({ user_id: 'dave', name: 'stale', expires_days: 1 }, 'test', Date.now() - 2 * DAY);
  const ALICE = bearer(alice.api_key);

  t.test('keys look like sk-<identifier>-<32 hex>', async (t) => {
    t.match(root.api_key, /^sk-root-[0-9a-f]{32}$/);
    t.match(alice.api_key, /^sk-alice-[0-9a-f]{32}$/);
    t.match(helper.api_key, /^sk-helper-[0-9a-f]{32}$/);
    t.not(alice.api_key, bob.api_key);
  });

  t.test('authentication matrix: every bad credential is -32003 / HTTP 401, and nothing happens', async (t) => {
    const cells: [string, Record<string, string>, string | undefined][] = [
      ['no key', {}, undefined],
      ['wrong key', bearer(`sk-alice-${'0'.repeat(32)}`), 'unknown_key'],
      ['wrong key, odd format', bearer('sk-nope'), 'malformed'],
      ['malformed header: no scheme', { Authorization: alice.api_key }, undefined],
      ['malformed header: Basic', { Authorization: `Basic ${Buffer.from(`u:${alice.api_key}`).toString('base64')}` }, undefined],
      ['malformed header: two tokens', { Authorization: `Bearer ${alice.api_key} extra` }, undefined],
      ['malformed header: empty', { Authorization: '' }, undefined],
      ['key with a changed last digit', bearer(alice.api_key.slice(0, -1) + (alice.api_key.endsWith('0') ? '1' : '0')), 'unknown_key'],
      ['expired key', bearer(expired.api_key), 'expired'],
      ['revoked key', bearer(revoked.api_key), 'revoked'],
    ];
    for (const [label, headers, reason] of cells) {
      const a = await d.rpc('write', { path: `/x-${label.replace(/\W+/g, '-')}.txt`, content: { __type__: 'bytes', data: 'eA==' } }, headers);
      t.equal(a.error?.code, -32003, `${label}: -32003`);
      t.match(a.error?.message, /invalid or expired token/i, `${label}: message`);
      const w = await d.whoami(headers);
      t.equal(w.status, 401, `${label}: whoami 401`);
      t.equal(w.body.error, 'Unauthorized', `${label}: whoami body`);
      if (reason) {
        const audit = await d.call('admin_audit', { event: 'auth.failure', limit: 1 }, ADMIN);
        t.equal(audit.entries[0]?.detail.reason, reason, `${label}: audited as ${reason}`);
      }
    }
    t.same(await d.call('list', { path: '/' }, ALICE), [], 'no write went through');
  });

  t.test('a valid key authenticates as its subject and tenant', async (t) => {
    t.same((await d.whoami(ALICE)).body, { authenticated: true, subject_type: 'user', subject_id: 'alice', tenant_id: 'default', is_admin: false });
    t.same((await d.whoami(bearer(bob.api_key))).body, { authenticated: true, subject_type: 'user', subject_id: 'bob', tenant_id: 'beta', is_admin: false });
    t.same((await d.whoami(bearer(helper.api_key))).body,
      { authenticated: true, subject_type: 'agent', subject_id: 'helper', tenant_id: 'default', is_admin: false });
    t.same((await d.whoami(ADMIN)).body, { authenticated: true, subject_type: 'user', subject_id: 'root', tenant_id: 'default', is_admin: true });
    // Permissions are enforced: alice writes where the admin gave her room (test/enforcement has the matrix).
    await d.call('rebac_create', { subject: ['user', 'alice'], relation: 'direct_owner', object: ['file', '/alice'] }, ADMIN);
    t.match(await d.call('write', { path: '/alice/a.txt', content: { __type__: 'bytes', data: 'aGk=' } }, ALICE), { etag: String, version: 1 });
  });

  t.test('a non-admin key gets -32004 from every admin method, with no effect', async (t) => {
    const before = await d.call('admin_list_keys', { include_revoked: true, include_expired: true }, ADMIN);
    for (const key of [alice.api_key, bob.api_key, helper.api_key]) {
      for (const [method, params] of ADMIN_METHODS) {
        const a = await d.rpc(method, params, bearer(key));
        t.equal(a.error?.code, -32004, `${method}`);
        t.match(a.error?.message, /admin/i);
      }
    }
    const after = await d.call('admin_list_keys', { include_revoked: true, include_expired: true }, ADMIN);
    t.equal(after.total, before.total, 'no key was created');
  });

  t.test('a user key acts as itself or its own agents only (X-Svc-Subject)', async (t) => {
    const as = async (headers: Record<string, string>, subject: string) => d.whoami({ ...headers, 'X-Svc-Subject': subject });
    t.same((await as(ALICE, 'user:alice')).body.subject_id, 'alice', 'itself');
    const bot = await as(ALICE, 'agent:alice-bot');
    t.equal(bot.status, 200, 'an agent listed in the key metadata');
    t.same(bot.body, { authenticated: true, subject_type: 'agent', subject_id: 'alice-bot', tenant_id: 'default', is_admin: false });
    // An agent key issued to alice makes that agent hers too; a revoked one no longer does.
    t.same((await as(ALICE, 'agent:helper')).body,
      { authenticated: true, subject_type: 'agent', subject_id: 'helper', tenant_id: 'default', is_admin: false }, 'her agent key\'s agent');
    t.equal((await as(bearer(bob.api_key), 'agent:helper')).status, 403, 'not bob\'s');
    const gone = await d.call('admin_create_key', { user_id: 'alice', name: 'old agent', subject_type: 'agent', subject_id: 'old-bot' }, ADMIN);
    t.equal((await as(ALICE, 'agent:old-bot')).status, 200, 'while its key is live');
    await d.call('admin_revoke_key', { key_id: gone.key_id }, ADMIN);
    t.equal((await as(ALICE, 'agent:old-bot')).status, 403, 'not once its key is revoked');
    for (const [label, headers, subject] of [
      ['another user', ALICE, 'user:bob'],
      ['an admin', ALICE, 'user:root'],
      ['an agent that is not hers', ALICE, 'agent:bob-bot'],
      ['an agent acting as its user', bearer(helper.api_key), 'user:alice'],
      ['an agent acting as another agent', bearer(helper.api_key), 'agent:alice-bot'],
      ['a service', ALICE, 'service:alice'],
    ] as const) {
      const w = await as(headers, subject);
      t.equal(w.status, 403, `${label}: whoami 403`);
      const a = await d.rpc('write', { path: '/spoof.txt', content: { __type__: 'bytes', data: 'eA==' } }, { ...headers, 'X-Svc-Subject': subject });
      t.equal(a.error?.code, -32004, `${label}: -32004`);
    }
    t.equal((await d.rpc('exists', { path: '/a.txt' }, { ...ALICE, 'X-Svc-Subject': 'nonsense' })).error?.code, -32004, 'malformed subject');
    t.equal((await d.rpc('exists', { path: '/a.txt' }, { 'X-Svc-Subject': 'nonsense' })).error?.code, -32003,
      'no key and a malformed subject: authentication fails first');
    t.equal((await d.rpc('exists', { path: '/a.txt' }, { 'X-Svc-Subject': 'user:root' })).error?.code, -32003, 'a subject alone is no credential');
    t.equal((await d.whoami({ 'X-Svc-Subject': 'user:root', 'X-Svc-Tenant-ID': 'beta' })).status, 401);
    t.same(await d.call('exists', { path: '/spoof.txt' }, ADMIN), { exists: false });
  });

  t.test('only admins choose a tenant (X-Svc-Tenant-ID)', async (t) => {
    t.equal((await d.rpc('exists', { path: '/a.txt' }, { ...ALICE, 'X-Svc-Tenant-ID': 'beta' })).error?.code, -32004, 'other tenant');
    t.equal((await d.whoami({ ...ALICE, 'X-Svc-Tenant-ID': 'beta' })).status, 403);
    t.equal((await d.whoami({ ...ALICE, 'X-Svc-Tenant-ID': 'default' })).body.tenant_id, 'default', 'its own tenant is fine');
    t.same((await d.whoami({ ...ADMIN, 'X-Svc-Subject': 'user:bob', 'X-Svc-Tenant-ID': 'beta' })).body,
      { authenticated: true, subject_type: 'user', subject_id: 'bob', tenant_id: 'beta', is_admin: true }, 'an admin acts as anyone anywhere');
  });

  t.test('the audit trail records successes and failures without secrets', async (t) => {
    const { entries, total } = await d.call('admin_audit', { limit: 1000 }, ADMIN);
    t.equal(entries.length, total);
    const text = JSON.stringify(entries);
    for (const k of [root, alice, bob, helper, revoked, expired]) t.notOk(text.includes(k.api_key), 'no raw key in the audit');
    t.notOk(text.includes(alice.api_key.slice(-32)), 'not even the secret part');
    t.ok(entries.some((e: any) => e.event === 'auth.success' && e.key_id === alice.key_id && e.user_id === 'alice'));
    t.ok(entries.some((e: any) => e.event === 'auth.failure' && e.key_id === revoked.key_id && e.detail.reason === 'revoked'));
    t.ok(entries.some((e: any) => e.event === 'key.revoke' && e.key_id === revoked.key_id && e.actor === 'user:root'));
    t.ok(entries.some((e: any) => e.event === 'key.create' && e.key_id === alice.key_id && e.actor === 'user:root'));
    const seqs = entries.map((e: any) => e.seq);
    t.same(seqs, [...seqs].sort((a: number, b: number) => b - a), 'newest first');
    const onlyAlice = await d.call('admin_audit', { key_id: alice.key_id, event: 'auth.success', limit: 2 }, ADMIN);
    t.equal(onlyAlice.entries.length, 2);
    t.ok(onlyAlice.total >= 2);
    t.ok(onlyAlice.entries.every((e: any) => e.key_id === alice.key_id && e.event === 'auth.success'));
    const future = await d.call('admin_audit', { since: new Date(Date.now() + DAY).toISOString() }, ADMIN);
    t.same(future, { entries: [], total: 0 });
  });

  t.test('the WebSocket face applies the same rules', async (t) => {
    await t.rejects(connectWs(d.url), { message: 'upgrade refused: HTTP 401' }, 'no key');
    await t.rejects(connectWs(d.url, bearer(revoked.api_key)), { message: 'upgrade refused: HTTP 401' }, 'revoked');
    await t.rejects(connectWs(d.url, bearer(expired.api_key)), { message: 'upgrade refused: HTTP 401' }, 'expired');
    await t.rejects(connectWs(d.url, { ...ALICE, 'X-Svc-Subject': 'user:bob' }), { message: 'upgrade refused: HTTP 403' }, 'spoofing');
    const ws = await connectWs(d.url, ALICE);
    t.equal((await ws.request('admin_list_keys', {})).error?.code, -32004, 'non-admin over WebSocket');
    t.same((await ws.request('exists', { path: '/alice/a.txt' })).result, { exists: true });
    await ws.close();
  });

  t.test('last_used_at follows use', async (t) => {
    const before = await d.call('admin_get_key', { key_id: bob.key_id }, ADMIN);
    await d.call('exists', { path: '/a.txt' }, bearer(bob.api_key));
    const after = await d.call('admin_get_key', { key_id: bob.key_id }, ADMIN);
    t.ok(after.last_used_at, 'set');
    t.ok(before.last_used_at === null || after.last_used_at > before.last_used_at, 'moved forward');
  });
});
