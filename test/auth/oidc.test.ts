// OIDC and multi-OIDC modes (spec §5.2) against a real OpenID provider on loopback (oidc-provider):
// signature, audience, issuer and expiry checks on tokens it issued, discovery, claim mapping, and
// multi-oidc picking the provider by the token's issuer.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestClock, bearer, startAuthDaemon, tempDir } from './harness.js';
import { AUDIENCE, RESOURCE, startIdp } from './idp.js';

t.test('oidc and multi-oidc against real providers', async (t) => {
  const main = await startIdp();
  const other = await startIdp();
  // Claims to be `main` (same issuer, same key id) but signs with its own key.
  const rogue = await startIdp({ issuer: main.issuer, kid: 'key-1' });
  const stranger = await startIdp();
  t.teardown(async () => {
    for (const idp of [main, other, rogue, stranger]) await idp.close();
  });

  // Discovery: no jwks_uri, so the daemon reads <issuer>/.well-known/openid-configuration.
  const clock = new TestClock();
  const d = await startAuthDaemon(t, {
    authType: 'oidc', authConfig: { issuer: main.issuer, audience: AUDIENCE, admin_emails: ['ops@example.com'] },
  }, undefined, { clock });

  t.test('a token from the provider authenticates; claims map to user, tenant and admin', async (t) => {
    const ops = await main.token('ops');
    t.same((await d.whoami(bearer(ops))).body, { authenticated: true, subject_type: 'user', subject_id: 'ops', tenant_id: 'acme', is_admin: true },
      'sub → user, org_id → tenant, email in admin_emails (any case) → admin');
    t.same((await d.whoami(bearer(await main.token('plain')))).body,
      { authenticated: true, subject_type: 'user', subject_id: 'plain', tenant_id: 'default', is_admin: false }, 'no org_id → default tenant');
    t.same(await d.call('exists', { path: '/x' }, bearer(ops)), { exists: false });
  });

  t.test('wrong signature, audience, issuer; expired; garbage: -32003', async (t) => {
    const short = await main.token('plain', RESOURCE.short);
    t.equal((await d.whoami(bearer(short))).status, 200, 'the short-lived token works at first');
    const good = await main.token('plain');
    const [h, p] = good.split('.');
    const cells: [string, string][] = [
      ['wrong signature (rogue key, same issuer and kid)', await rogue.token('ops')],
      ['wrong audience', await main.token('ops', RESOURCE.other)],
      ['wrong issuer', await other.token('ops')],
      ['signature stripped', `${h}.${p}.`],
      ['alg none', `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`],
      ['not a JWT', 'sk-not-a-jwt'],
    ];
    // The daemon's clock moves past the short token's 60 s lifetime (but not the others' 300 s): no sleeping.
    clock.advance(90_000);
    cells.push(['expired', short]);
    for (const [label, token] of cells) {
      const a = await d.rpc('exists', { path: '/x' }, bearer(token));
      t.equal(a.error?.code, -32003, label);
      t.equal((await d.whoami(bearer(token))).status, 401, `${label}: whoami 401`);
    }
    t.equal((await d.whoami(bearer(good))).status, 200, 'the provider\'s key set was not poisoned by the rogue');
  });

  t.test('configurable claims and an explicit jwks_uri', async (t) => {
    const custom = await startAuthDaemon(t, {
      authType: 'oidc',
      authConfig: { issuer: main.issuer, audience: [AUDIENCE, 'x'], jwks_uri: main.jwksUri, user_id_claim: 'client_id', tenant_id_claim: 'scope', subject_type: 'service' },
    });
    t.same((await custom.whoami(bearer(await main.token('ops')))).body,
      { authenticated: true, subject_type: 'service', subject_id: 'ops', tenant_id: 'api', is_admin: false });
  });

  t.test('multi-oidc: the token\'s issuer picks the provider', async (t) => {
    const dir = tempDir(t);
    const file = join(dir, 'oidc.yaml');
    writeFileSync(file, [
      'providers:',
      '  main:',
      `    issuer: "${main.issuer}"`,
      `    audience: ${AUDIENCE}`,
      '    admin_emails: [ops@example.com]',
      '  partner:',
      `    issuer: "${other.issuer}"`,
      `    audience: ${AUDIENCE}`,
      `    jwks_uri: "${other.jwksUri}"`,
      '',
    ].join('\n'));
    const m = await startAuthDaemon(t, { authType: 'multi-oidc', authConfig: file });
    t.same((await m.whoami(bearer(await main.token('ops')))).body,
      { authenticated: true, subject_type: 'user', subject_id: 'main:ops', tenant_id: 'acme', is_admin: true }, 'main');
    t.same((await m.whoami(bearer(await other.token('ops')))).body,
      { authenticated: true, subject_type: 'user', subject_id: 'partner:ops', tenant_id: 'acme', is_admin: false },
      'partner: same sub, a different user; admin_emails are per provider');
    for (const [label, token] of [
      ['an issuer nobody configured', await stranger.token('ops')],
      ['a rogue claiming main\'s issuer', await rogue.token('ops')],
      ['main\'s token for another audience', await main.token('ops', RESOURCE.other)],
    ] as const) {
      t.equal((await m.rpc('exists', { path: '/x' }, bearer(token))).error?.code, -32003, label);
    }
  });

  t.test('a provider that cannot be discovered: its tokens are refused, nothing crashes', async (t) => {
    const late = await startIdp();
    const issuer = late.issuer;
    const token = await late.token('plain');
    await late.close();
    const x = await startAuthDaemon(t, { authType: 'oidc', authConfig: { issuer, audience: AUDIENCE } });
    t.equal((await x.rpc('exists', { path: '/x' }, bearer(token))).error?.code, -32003, 'discovery fails: refused, not a crash');
  });
});

t.test('oidc config is validated at start', async (t) => {
  await t.rejects(startAuthDaemon(t, { authType: 'oidc', authConfig: { audience: 'a' } }), /invalid auth_config for oidc authentication: issuer/);
  await t.rejects(startAuthDaemon(t, { authType: 'oidc', authConfig: { issuer: 'ftp://x', audience: 'a' } }), /issuer: must be an http\(s\) URL/);
  await t.rejects(startAuthDaemon(t, { authType: 'multi-oidc', authConfig: { providers: {} } }), /at least one provider/);
  await t.rejects(startAuthDaemon(t, {
    authType: 'multi-oidc',
    authConfig: { providers: { a: { issuer: 'http://127.0.0.1:1', audience: 'x' }, b: { issuer: 'http://127.0.0.1:1', audience: 'y' } } },
  }), /two providers name issuer/);
});
