// Static key mode (spec §5.2): keys from the auth config with user, tenant, admin flag and metadata.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bearer, startAuthDaemon, tempDir } from './harness.js';

const ALICE = 'sk-static-alice-0123456789abcdef';
const ROOT = 'sk-static-root-0123456789abcdef0';
const BOT = 'sk-static-bot-0123456789abcdef01';
const HELPER = 'sk-static-helper-0123456789abcde';

t.test('static keys from a YAML config file', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'auth.yaml');
  writeFileSync(file, [
    '# keys for the static mode',
    'api_keys:',
    `  ${ALICE}:`,
    '    user_id: alice',
    '    tenant_id: acme',
    '    metadata: { agents: [alice-bot], team: blue }',
    `  ${ROOT}:`,
    '    user_id: root',
    '    is_admin: true',
    `  ${BOT}:`,
    '    subject_type: agent',
    '    subject_id: bot-7',
    `  ${HELPER}:`,
    '    user_id: alice',
    '    tenant_id: acme',
    '    subject_type: agent',
    '    subject_id: alice-helper',
    '',
  ].join('\n'));
  const d = await startAuthDaemon(t, { authType: 'static', authConfig: file });

  t.test('each key maps to its user, tenant and admin flag', async (t) => {
    t.same((await d.whoami(bearer(ALICE))).body, { authenticated: true, subject_type: 'user', subject_id: 'alice', tenant_id: 'acme', is_admin: false });
    t.same((await d.whoami(bearer(ROOT))).body, { authenticated: true, subject_type: 'user', subject_id: 'root', tenant_id: 'default', is_admin: true },
      'tenant null = single tenant (default)');
    t.same((await d.whoami(bearer(BOT))).body, { authenticated: true, subject_type: 'agent', subject_id: 'bot-7', tenant_id: 'default', is_admin: false });
  });

  t.test('anything else is -32003', async (t) => {
    for (const [label, headers] of [
      ['no key', {}],
      ['wrong key', bearer('sk-static-alice-0123456789abcdeF')],
      ['prefix of a key', bearer(ALICE.slice(0, -1))],
      ['malformed header', { Authorization: `Token ${ALICE}` }],
    ] as const) {
      t.equal((await d.rpc('exists', { path: '/x' }, headers)).error?.code, -32003, label);
    }
  });

  t.test('identity headers: own agents only; admins anywhere', async (t) => {
    t.equal((await d.whoami({ ...bearer(ALICE), 'X-Svc-Subject': 'agent:alice-bot' })).body.subject_id, 'alice-bot');
    t.same((await d.whoami({ ...bearer(ALICE), 'X-Svc-Subject': 'agent:alice-helper' })).body,
      { authenticated: true, subject_type: 'agent', subject_id: 'alice-helper', tenant_id: 'acme', is_admin: false },
      'an agent whose key the config issues to alice is hers');
    t.equal((await d.whoami({ ...bearer(ALICE), 'X-Svc-Subject': 'agent:bot-7' })).status, 403, 'an agent of nobody in particular is not');
    t.equal((await d.whoami({ ...bearer(HELPER), 'X-Svc-Subject': 'user:alice' })).status, 403, 'the agent may not act as its user');
    t.equal((await d.rpc('exists', { path: '/x' }, { ...bearer(ALICE), 'X-Svc-Subject': 'user:root' })).error?.code, -32004);
    t.equal((await d.rpc('exists', { path: '/x' }, { ...bearer(ALICE), 'X-Svc-Tenant-ID': 'default' })).error?.code, -32004);
    t.equal((await d.whoami({ ...bearer(ROOT), 'X-Svc-Tenant-ID': 'acme' })).body.tenant_id, 'acme');
  });

  t.test('admin methods: -32004 for users, -32005 (needs database) for admins', async (t) => {
    t.equal((await d.rpc('admin_list_keys', {}, bearer(ALICE))).error?.code, -32004);
    t.equal((await d.rpc('admin_list_keys', {}, bearer(ROOT))).error?.code, -32005);
  });
});

t.test('a static config with JSON and short keys is refused at start', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'auth.json');
  writeFileSync(file, JSON.stringify({ api_keys: { short: { user_id: 'x' } } }));
  await t.rejects(startAuthDaemon(t, { authType: 'static', authConfig: file }, dir), /api_keys\.short.*at least 16/);
});
