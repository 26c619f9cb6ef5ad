// The provider factory (spec §5.2) and the auth settings of the config (flags > env > defaults).
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAuthProvider } from '../../src/auth/factory.js';
import { loadConfig } from '../../src/config.js';
import { tempDir } from './harness.js';

t.test('createAuthProvider', async (t) => {
  t.equal(createAuthProvider(undefined), undefined, 'no auth type: no provider');
  t.equal(createAuthProvider(null, null), undefined);
  for (const type of ['simple', 'static', 'local', 'oidc', 'multi-oidc']) {
    t.throws(() => createAuthProvider(type, undefined), { message: `auth_config is required for ${type} authentication` });
  }
  t.throws(() => createAuthProvider('database', {}), { message: 'a session factory is required for database authentication' });
  t.throws(() => createAuthProvider('kerberos', {}), { message: 'Unknown auth_type: kerberos' });
  t.equal(createAuthProvider('simple', { api_key: 'k' })?.name, 'simple');
  t.equal(createAuthProvider('static', { api_keys: { 'sk-0123456789abcdef': { user_id: 'u' } } })?.name, 'static');
  t.equal(createAuthProvider('oidc', { issuer: 'https://id.example', audience: 'a' })?.name, 'oidc');
  t.throws(() => createAuthProvider('static', { api_keys: { 'sk-0123456789abcdef': { is_admin: true } } }), /user_id or subject_id is required/);
  t.throws(() => createAuthProvider('static', { keys: {} }), /invalid auth_config for static authentication/);
});

t.test('providers answer unauthenticated, never throw, for bad tokens', async (t) => {
  const p = createAuthProvider('static', { api_keys: { 'sk-0123456789abcdef': { user_id: 'u', tenant_id: 't1', metadata: { a: 1 } } } })!;
  t.same(await p.authenticate('sk-0123456789abcdef'), {
    authenticated: true, user_id: 'u', subject_type: 'user', subject_id: 'u', tenant_id: 't1', is_admin: false, metadata: { a: 1 },
  });
  t.equal(await p.validateToken('sk-0123456789abcdef'), true);
  t.equal(await p.validateToken(''), false);
  t.equal((await p.authenticate('x'.repeat(10_000))).authenticated, false);
  await p.close();
});

t.test('config: auth type, auth config file, enforcement, database URL', async (t) => {
  const base = { dataDir: '/tmp/x' };
  t.equal(loadConfig(base, {}).authType, undefined, 'no auth by default');
  t.equal(loadConfig(base, {}).enforcePermissions, false, 'nothing to enforce without auth');
  const simple = loadConfig({ ...base, apiKey: 'k' }, {});
  t.equal(simple.authType, 'simple', '--api-key alone is the simple mode');
  t.equal(simple.enforcePermissions, true, 'enforced by default once auth is on');
  t.equal(loadConfig(base, { SVC_SERVER_API_KEY: 'k' }).authType, 'simple');
  t.equal(loadConfig({ ...base, apiKey: 'k', enforcePermissions: false }, {}).enforcePermissions, false);
  t.equal(loadConfig({ ...base, authType: 'database' }, { SVC_ENFORCE_PERMISSIONS: 'false' }).enforcePermissions, false);
  t.equal(loadConfig({ ...base, authType: 'database', enforcePermissions: true }, { SVC_ENFORCE_PERMISSIONS: 'false' }).enforcePermissions, true,
    'flags win over env');
  t.throws(() => loadConfig(base, { SVC_ENFORCE_PERMISSIONS: 'maybe' }), /SVC_ENFORCE_PERMISSIONS: expected true or false/);
  t.throws(() => loadConfig({ ...base, authType: 'simple' }, {}), /--auth-type simple needs the key/);
  t.throws(() => loadConfig({ ...base, authType: 'database', apiKey: 'k' }, {}), /cannot be combined with --auth-type database/);
  t.throws(() => loadConfig({ ...base, authType: 'nope' }, {}), /authType/);
  t.throws(() => loadConfig({ ...base, authConfig: {} }, {}), /--auth-config needs --auth-type/);

  t.equal(loadConfig({ ...base, authType: 'database' }, { SVC_DATABASE_URL: 'lmdb:' }).authType, 'database', 'lmdb: is the embedded store');
  t.throws(() => loadConfig({ ...base, authType: 'database' }, { SVC_DATABASE_URL: 'postgres://u:secret@db/svc' }),
    /PostgreSQL \(postgres:\/\/\) arrives with the scale-out issue/);
  t.throws(() => loadConfig(base, { SVC_DATABASE_URL: 'postgresql://db/svc' }), /scale-out issue/);
  try {
    loadConfig(base, { SVC_DATABASE_URL: 'postgres://u:secret@db/svc' });
    t.fail('postgres accepted');
  } catch (err) {
    t.notOk((err as Error).message.includes('secret'), 'the URL (and its password) is not echoed');
  }
  t.throws(() => loadConfig(base, { SVC_DATABASE_URL: 'mysql://db' }), /unsupported scheme mysql/);
  t.throws(() => loadConfig(base, { SVC_DATABASE_URL: 'lmdb:///elsewhere' }), /write lmdb: alone/);

  const dir = tempDir(t);
  const yaml = join(dir, 'a.yaml');
  writeFileSync(yaml, 'api_keys:\n  sk-0123456789abcdef: {user_id: u}\n');
  const fromYaml = loadConfig({ ...base, authType: 'static', authConfig: yaml }, {});
  t.same(fromYaml.authConfig, { api_keys: { 'sk-0123456789abcdef': { user_id: 'u' } } });
  t.ok(Object.isFrozen(fromYaml.authConfig) && Object.isFrozen((fromYaml.authConfig as any).api_keys), 'deeply frozen');
  const json = join(dir, 'a.json');
  writeFileSync(json, '{"issuer": "https://id.example", "audience": "a"}');
  t.same(loadConfig(base, { SVC_AUTH_TYPE: 'oidc', SVC_AUTH_CONFIG: json }).authConfig, { issuer: 'https://id.example', audience: 'a' });
  writeFileSync(json, '{"issuer": ');
  t.throws(() => loadConfig({ ...base, authType: 'oidc', authConfig: json }, {}), /a\.json is not valid JSON/);
  writeFileSync(json, '[1]');
  t.throws(() => loadConfig({ ...base, authType: 'oidc', authConfig: json }, {}), /must contain an object/);
  t.throws(() => loadConfig({ ...base, authType: 'oidc', authConfig: join(dir, 'missing.json') }, {}), /cannot read auth config/);
});
