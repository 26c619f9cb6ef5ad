// Simple API key mode, `svc serve --api-key` (spec §5.1, §5.2; WIRE.md "Identity", "Settled details": whoami).
import t from 'tap';
import { startDaemon, bytes, unbytes } from '../helpers/daemon.js';
import { connectWs } from '../helpers/ws.js';

const KEY = 'sk-e2e-0123456789abcdef0123456789abcdef';
const GOOD = { Authorization: `Bearer ${KEY}` };
const BAD_HEADERS: [string, Record<string, string>][] = [
  ['no credential', {}],
  ['wrong key', { Authorization: 'Bearer sk-e2e-wrong' }],
  ['key with a suffix', { Authorization: `Bearer ${KEY}x` }],
  ['key prefix only', { Authorization: `Bearer ${KEY.slice(0, -1)}` }],
  ['not Bearer', { Authorization: `Basic ${Buffer.from(`admin:${KEY}`).toString('base64')}` }],
  ['bare key', { Authorization: KEY }],
  ['Bearer without token', { Authorization: 'Bearer' }],
  ['two tokens', { Authorization: `Bearer ${KEY} ${KEY}` }],
  ['empty', { Authorization: '' }],
];

t.test('simple API key mode', async (t) => {
  const d = await startDaemon({ apiKey: KEY }, t);

  t.test('RPC without a valid credential is -32003, and nothing happens', async (t) => {
    for (const [label, headers] of BAD_HEADERS) {
      const res = await d.raw('/api/nfs/write', {
        method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'write', params: { path: '/secret.txt', content: bytes('x') } }),
      });
      t.equal(res.status, 200, `${label}: HTTP 200`);
      t.equal(res.headers.get('access-control-allow-origin'), '*');
      const env = (await res.json()) as { id: unknown; error?: { code: number; message: string } };
      t.equal(env.error?.code, -32003, label);
      t.match(env.error?.message, /invalid or expired token/i, `${label}: message`);
      t.equal(env.id, 11, `${label}: id echoed`);
    }
    t.same(await d.call('exists', { path: '/secret.txt' }, { headers: GOOD }), { exists: false });
  });

  t.test('the right key works', async (t) => {
    const w = await d.call('write', { path: '/ok.txt', content: bytes('fine') }, { headers: GOOD });
    t.equal(w.version, 1);
    t.equal(unbytes(await d.call('read', { path: '/ok.txt' }, { headers: GOOD })).toString(), 'fine');
    t.equal(unbytes(await d.call('read', { path: '/ok.txt' }, { headers: { Authorization: `bearer   ${KEY}` } })).toString(), 'fine',
      'scheme is case-insensitive');
  });

  t.test('whoami: 401 {"error":"Unauthorized","message"} without a valid credential', async (t) => {
    for (const [label, headers] of BAD_HEADERS) {
      const res = await d.raw('/api/auth/whoami', { headers });
      t.equal(res.status, 401, label);
      t.equal(res.headers.get('access-control-allow-origin'), '*');
      t.match(await res.json(), { error: 'Unauthorized', message: String }, label);
    }
  });

  t.test('whoami with the key: authenticated admin, default subject user:admin', async (t) => {
    const res = await d.raw('/api/auth/whoami', { headers: GOOD });
    t.equal(res.status, 200);
    t.same(await res.json(), { authenticated: true, subject_type: 'user', subject_id: 'admin', tenant_id: 'default', is_admin: true });
  });

  t.test('whoami with the key and X-Svc-Subject acts as that subject', async (t) => {
    const res = await d.raw('/api/auth/whoami', { headers: { ...GOOD, 'X-Svc-Subject': 'agent:helper-1' } });
    t.same(await res.json(), { authenticated: true, subject_type: 'agent', subject_id: 'helper-1', tenant_id: 'default', is_admin: true });
  });

  t.test('status needs the key; health and OPTIONS do not', async (t) => {
    t.equal((await d.raw('/api/nfs/status')).status, 401);
    t.equal((await d.raw('/api/nfs/status', { headers: GOOD })).status, 200);
    const health = await d.raw('/health');
    t.equal(health.status, 200);
    t.same(await health.json(), { status: 'healthy', service: 'svc-rpc' });
    t.equal((await d.raw('/api/nfs/write', { method: 'OPTIONS' })).status, 204);
  });

  t.test('the WebSocket upgrade needs the key: 401 without it', async (t) => {
    await t.rejects(connectWs(d.url), { message: /HTTP 401/ });
    await t.rejects(connectWs(d.url, { Authorization: 'Bearer nope' }), { message: /HTTP 401/ });
    const ws = await connectWs(d.url, GOOD);
    const answer = await ws.request('exists', { path: '/ok.txt' });
    t.same(answer.result, { exists: true });
    await ws.close();
  });
});
