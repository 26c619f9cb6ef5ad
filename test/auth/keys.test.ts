// The database mode's key store (spec §5.2): only a salted HMAC of each key is stored, the salt is a
// private per-installation secret, authentication outcomes are audited in order.
import t from 'tap';
import { createHmac } from 'node:crypto';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb/index.js';
import { ApiKeyStore } from '../../src/auth/keys.js';
import { tempDir } from './harness.js';

const DAY = 86_400_000;

function open(t: { teardown(fn: () => unknown): void }, dir: string) {
  const store = new LmdbStore(dir);
  const keys = new ApiKeyStore({ store, secretPath: join(dir, 'auth-secret') });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await keys.flush();
    await store.close();
  };
  t.teardown(close);
  return { store, keys, close };
}

t.test('only a salted HMAC-SHA256 is stored', async (t) => {
  const dir = tempDir(t);
  const { keys, close } = open(t, dir);
  const k = await keys.create({ user_id: 'alice', name: 'n' }, 'test');
  t.equal(keys.authenticate(k.api_key).authenticated, true);
  await close();
  const secret = Buffer.from(readFileSync(join(dir, 'auth-secret'), 'utf8').trim(), 'hex');
  t.equal(secret.length, 32, '256-bit installation secret');
  t.equal(statSync(join(dir, 'auth-secret')).mode & 0o777, 0o600);
  const files = readdirSync(join(dir, 'db')).map((f) => readFileSync(join(dir, 'db', f)));
  const secretPart = k.api_key.slice(-32);
  for (const f of files) {
    t.equal(f.indexOf(secretPart), -1, 'the raw key is nowhere in the database files');
    t.equal(f.indexOf(Buffer.from(secretPart, 'hex')), -1, 'nor its bytes');
  }
  const salted = createHmac('sha256', secret).update(k.api_key).digest('hex');
  const unsalted = createHmac('sha256', 'nexus-api-key-v1').update(k.api_key).digest('hex');
  t.ok(files.some((f) => f.includes(salted)), 'the salted HMAC is what is stored');
  t.notOk(files.some((f) => f.includes(unsalted)), 'not a hash with a well-known key');
});

t.test('the secret is created once and reused; a damaged one stops authentication loudly', async (t) => {
  const dir = tempDir(t);
  const a = open(t, dir);
  const k = await a.keys.create({ user_id: 'bob', name: 'n' }, 'test');
  await a.close();
  const b = open(t, dir);
  t.equal(b.keys.authenticate(k.api_key).authenticated, true, 'same secret after reopening');
  await b.close();
  writeFileSync(join(dir, 'auth-secret'), 'not hex\n');
  const c = open(t, dir);
  t.throws(() => c.keys.authenticate(k.api_key), /is not an svc key secret/);
});

t.test('expiry is exact and audited; audit sequence numbers are gapless under concurrency', async (t) => {
  const dir = tempDir(t);
  const { keys } = open(t, dir);
  const now = Date.now();
  const k = await keys.create({ user_id: 'c', name: 'n', expires_days: 1 }, 'test', now);
  t.equal(keys.authenticate(k.api_key, now + DAY).authenticated, true, 'valid at the expiry instant');
  t.equal(keys.authenticate(k.api_key, now + DAY + 1).authenticated, false, 'expired just after');
  await Promise.all(Array.from({ length: 50 }, (_, i) => keys.create({ user_id: `u${i}`, name: 'n' }, 'test')));
  for (let i = 0; i < 50; i++) keys.authenticate(k.api_key, now);
  await keys.flush();
  const { entries, total } = keys.audit({ limit: 10_000 });
  t.equal(total, 1 + 2 + 50 + 50);
  t.same(entries.map((e) => e.seq), Array.from({ length: total }, (_, i) => total - i), 'gapless, newest first');
  t.equal(entries.find((e) => e.event === 'auth.failure')?.detail.reason, 'expired');
});

t.test('createFirstAdmin creates exactly one admin key even when raced', async (t) => {
  const dir = tempDir(t);
  const { keys } = open(t, dir);
  const results = await Promise.all(Array.from({ length: 5 }, () => keys.createFirstAdmin('admin', 90)));
  t.equal(results.filter(Boolean).length, 1);
  t.equal(keys.list({ is_admin: true }).total, 1);
});
