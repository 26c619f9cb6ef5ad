// Local mode (spec §5.2, §8; WIRE.md POST /api/auth/login): bcrypt users written by
// `svc admin create-user`, HS256 tokens from the login route, expiry, tampering.
import t from 'tap';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import bcrypt from 'bcryptjs';
import { TestClock, bearer, runSvc, startAuthDaemon, tempDir } from './harness.js';

const login = (d: { raw(p: string, i?: RequestInit): Promise<Response> }, body: unknown) =>
  d.raw('/api/auth/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

t.test('svc admin create-user writes bcrypt hashes; login issues tokens', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'users.yaml');
  const first = await runSvc(['admin', 'create-user', 'alice', '--auth-config', file], { input: 'correct horse\n' });
  t.equal(first.code, 0, first.err);
  t.match(first.out, /added user alice .*new file with a fresh jwt_secret/);
  t.equal(statSync(file).mode & 0o777, 0o600, 'the new file is private');
  const second = await runSvc([
    'admin', 'create-user', 'bob', '--auth-config', file, '--password', 'battery staple', '--admin', '--tenant-id', 'acme',
    '--subject-type', 'service', '--subject-id', 'bob-svc',
  ]);
  t.equal(second.code, 0, second.err);
  const text = readFileSync(file, 'utf8');
  t.notOk(text.includes('correct horse') || text.includes('battery staple'), 'no password in the file');
  t.match(text, /password_hash: \$2[aby]\$12\$/, 'bcrypt, cost 12');

  const d = await startAuthDaemon(t, { authType: 'local', authConfig: file });

  t.test('a wrong password, an unknown user: -32003 with HTTP 401', async (t) => {
    for (const [label, body] of [
      ['wrong password', { username: 'alice', password: 'Correct horse' }],
      ['unknown user', { username: 'mallory', password: 'correct horse' }],
      ['another user\'s password', { username: 'bob', password: 'correct horse' }],
    ] as const) {
      const res = await login(d, body);
      t.equal(res.status, 401, label);
      const env = await res.json();
      t.equal(env.error.code, -32003, label);
      t.equal(env.error.message, 'Invalid username or password', `${label}: says nothing about which part was wrong`);
    }
    const bad = await login(d, { username: 'alice' });
    t.equal(bad.status, 400);
    t.equal((await bad.json()).error.code, -32602, 'missing password');
    const notJson = await d.raw('/api/auth/login', { method: 'POST', body: '{' });
    t.equal((await notJson.json()).error.code, -32700);
  });

  t.test('the right password gives a bearer token for the user', async (t) => {
    const res = await login(d, { username: 'alice', password: 'correct horse' });
    t.equal(res.status, 200);
    const body = await res.json();
    t.match(body, { access_token: /^[\w-]+\.[\w-]+\.[\w-]+$/, token_type: 'Bearer', expires_in: 3600 });
    const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1], 'base64url').toString());
    t.equal(claims.exp - claims.iat, 3600, 'the token itself expires one hour after issue (the default)');
    t.match(claims, { sub: 'alice', subject_type: 'user', subject_id: 'alice', is_admin: false });
    t.same((await d.whoami(bearer(body.access_token))).body,
      { authenticated: true, subject_type: 'user', subject_id: 'alice', tenant_id: 'default', is_admin: false });
    t.same(await d.call('exists', { path: '/nothing' }, bearer(body.access_token)), { exists: false });
    const bob = await (await login(d, { username: 'bob', password: 'battery staple' })).json();
    t.same((await d.whoami(bearer(bob.access_token))).body,
      { authenticated: true, subject_type: 'service', subject_id: 'bob-svc', tenant_id: 'acme', is_admin: true });
  });

  t.test('a tampered or foreign token is -32003', async (t) => {
    const { access_token } = await (await login(d, { username: 'alice', password: 'correct horse' })).json();
    const [h, p, s] = access_token.split('.');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const promoted = Buffer.from(JSON.stringify({ ...payload, is_admin: true, sub: 'bob' })).toString('base64url');
    const flipped = s.slice(0, -2) + (s.at(-2) === 'A' ? 'B' : 'A') + s.at(-1);
    const secret = /jwt_secret: (\S+)/.exec(readFileSync(file, 'utf8'))![1]!;
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`;
    const otherSecret = await new SignJWT({ ...payload }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('x'.repeat(40)));
    const ghost = await new SignJWT({ ...payload, sub: 'ghost' }).setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(secret));
    for (const [label, token] of [
      ['changed claims', `${h}.${promoted}.${s}`], ['changed signature', `${h}.${p}.${flipped}`], ['alg none', none],
      ['another secret', otherSecret], ['a user not in the config', ghost], ['not a JWT', 'hello'],
    ]) {
      t.equal((await d.rpc('exists', { path: '/x' }, bearer(token!))).error?.code, -32003, label);
    }
  });

  t.test('a local user may act as itself only', async (t) => {
    const { access_token } = await (await login(d, { username: 'alice', password: 'correct horse' })).json();
    t.equal((await d.rpc('exists', { path: '/x' }, { ...bearer(access_token), 'X-Svc-Subject': 'user:bob' })).error?.code, -32004);
  });
});

t.test('tokens expire (token_expiry seconds)', async (t) => {
  const hash = bcrypt.hashSync('pw-1234', 4);
  const clock = new TestClock();
  const d = await startAuthDaemon(t, {
    authType: 'local', authConfig: { jwt_secret: 's'.repeat(32), token_expiry: 600, users: {
      eve: { password_hash: hash }, sess: { password_hash: hash, subject_type: 'session', subject_id: 's-42', tenant_id: 'acme' },
    } },
  }, undefined, { clock });
  const body = await (await login(d, { username: 'eve', password: 'pw-1234' })).json();
  t.equal(body.expires_in, 600);
  t.equal((await d.whoami(bearer(body.access_token))).status, 200, 'fresh');
  const session = await (await login(d, { username: 'sess', password: 'pw-1234' })).json();
  t.same((await d.whoami(bearer(session.access_token))).body,
    { authenticated: true, subject_type: 'session', subject_id: 's-42', tenant_id: 'acme', is_admin: false }, 'a session subject');
  clock.advance(590_000);
  t.equal((await d.whoami(bearer(body.access_token))).status, 200, 'still valid a little before token_expiry');
  clock.advance(12_000); // the daemon's clock: no sleeping
  t.equal((await d.whoami(bearer(body.access_token))).status, 401, 'expired');
  t.equal((await d.rpc('exists', { path: '/x' }, bearer(body.access_token))).error?.code, -32003);
});

t.test('create-user keeps a YAML file\'s comments and replaces an existing user', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'auth.yml');
  writeFileSync(file, `# team config\njwt_secret: ${'k'.repeat(40)}  # rotate yearly\nusers: {}\n`, { mode: 0o640 });
  t.equal((await runSvc(['admin', 'create-user', 'zed', '--auth-config', file, '--password', 'one'])).code, 0);
  const again = await runSvc(['admin', 'create-user', 'zed', '--auth-config', file, '--password', 'two', '--json']);
  t.match(JSON.parse(again.out), { username: 'zed', replaced: true, created: false });
  const text = readFileSync(file, 'utf8');
  t.match(text, /# team config/);
  t.match(text, /# rotate yearly/);
  t.equal(statSync(file).mode & 0o777, 0o640, 'mode kept');
  const d = await startAuthDaemon(t, { authType: 'local', authConfig: file });
  t.equal((await login(d, { username: 'zed', password: 'one' })).status, 401, 'old password gone');
  t.equal((await login(d, { username: 'zed', password: 'two' })).status, 200);
  const empty = await runSvc(['admin', 'create-user', 'nobody', '--auth-config', file], { input: '\n' });
  t.equal(empty.code, 2, 'an empty password is a usage error');
});

t.test('the login route exists only in local mode; local config is validated', async (t) => {
  const d = await startAuthDaemon(t, { apiKey: 'sk-simple-0123456789abcdef' });
  t.equal((await login(d, { username: 'a', password: 'b' })).status, 404);
  await t.rejects(startAuthDaemon(t, { authType: 'local', authConfig: { jwt_secret: 'short', users: {} } }), /jwt_secret: .*32/);
  await t.rejects(startAuthDaemon(t, { authType: 'local', authConfig: { jwt_secret: 'x'.repeat(32), users: { a: { password_hash: 'plain' } } } }),
    /users\.a\.password_hash: must be a bcrypt hash/);
});
