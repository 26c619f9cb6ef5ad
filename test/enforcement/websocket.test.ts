// The WebSocket face holds its callers to the same rules as HTTP for as long as the socket is open
// (issue 3 §2 "revoke irreversible", §5 "list/glob/grep return only what the caller may read"):
// the credential is checked again for every message, a revoked key or a demoted admin takes effect
// at once, change events reach a watcher only for paths it may read, and a watcher whose key was
// revoked stops receiving events once its identity is re-checked.
import t from 'tap';
import { TestClock, bearer, startAuthDaemon } from '../auth/harness.js';
import { connectWs, type WsClient } from '../helpers/ws.js';
import { bytes } from '../helpers/daemon.js';

const closed = (ws: WsClient) => new Promise<number>((resolve) => {
  if (ws.socket.readyState === ws.socket.CLOSED) resolve(1008);
  else ws.socket.once('close', (code) => resolve(code));
});

t.test('websocket: credentials re-checked, events filtered', async (t) => {
  const clock = new TestClock();
  const d = await startAuthDaemon(t, { authType: 'database' }, undefined, { clock });
  const root = (await d.daemon.services.admin.initFirstAdmin('root', null))!;
  const ADMIN = bearer(root.api_key);
  const key = async (user: string, extra: Record<string, unknown> = {}) =>
    d.call('admin_create_key', { user_id: user, name: `${user} key`, ...extra }, ADMIN);
  for (const u of ['alice', 'bob']) {
    await d.call('rebac_create', { subject: ['user', u], relation: 'direct_owner', object: ['file', `/${u}`] }, ADMIN);
  }

  t.test('a key revoked while the socket is open fails at its next message', async (t) => {
    const k = await key('alice');
    const ws = await connectWs(d.url, bearer(k.api_key));
    t.same((await ws.request('exists', { path: '/alice/x' })).result, { exists: false }, 'works while live');
    await d.call('admin_revoke_key', { key_id: k.key_id }, ADMIN);
    const gone = closed(ws);
    const answer = await ws.request('exists', { path: '/alice/x' });
    t.equal(answer.error?.code, -32003, 'the next request is refused');
    t.equal(await gone, 1008, 'and the socket is closed (policy violation)');
  });

  t.test('an admin demoted while the socket is open loses admin at once', async (t) => {
    const deputy = await key('deputy', { is_admin: true });
    const ws = await connectWs(d.url, bearer(deputy.api_key));
    t.equal(typeof (await ws.request('admin_list_keys', {})).result?.total, 'number', 'admin while admin');
    await d.call('admin_update_key', { key_id: deputy.key_id, is_admin: false }, ADMIN);
    t.equal((await ws.request('admin_list_keys', {})).error?.code, -32004, 'not any more');
    await ws.close();
  });

  t.test('watch delivers events only for paths the watcher may read', async (t) => {
    const alice = await key('alice');
    const bob = await key('bob');
    const ws = await connectWs(d.url, bearer(alice.api_key));
    t.ok((await ws.request('watch', { path: '/' })).result?.subscription_id);
    await d.call('write', { path: '/bob/secret.txt', content: bytes('b') }, bearer(bob.api_key));
    await d.call('write', { path: '/alice/ping.txt', content: bytes('a') }, bearer(alice.api_key));
    // Events arrive in commit order: once alice's own event is here, bob's would have been too.
    const own = await ws.next((m) => m.method === 'fs.event' && m.params.path === '/alice/ping.txt');
    t.equal(own.params.type, 'write');
    t.same(ws.received((m) => m.method === 'fs.event' && String(m.params.path).startsWith('/bob')), [], 'nothing of bob\'s');
    // A grant makes bob's directory visible from then on.
    await d.call('rebac_create', { subject: ['user', 'alice'], relation: 'direct_viewer', object: ['file', '/bob'] }, bearer(bob.api_key));
    await d.call('write', { path: '/bob/shared.txt', content: bytes('s') }, bearer(bob.api_key));
    t.ok(await ws.next((m) => m.method === 'fs.event' && m.params.path === '/bob/shared.txt'), 'granted: seen');
    await ws.close();
  });

  t.test('a watcher whose key was revoked gets no more events once its identity is re-checked', async (t) => {
    const alice = await key('alice');
    const writer = await key('alice', { name: 'writer' });
    const ws = await connectWs(d.url, bearer(alice.api_key));
    await ws.request('watch', { path: '/alice' });
    await d.call('admin_revoke_key', { key_id: alice.key_id }, ADMIN);
    clock.advance(31_000); // past the re-check interval of event delivery
    const gone = closed(ws);
    await d.call('write', { path: '/alice/after-revoke.txt', content: bytes('x') }, bearer(writer.api_key));
    const refusal = await ws.next((m) => m.error !== undefined);
    t.equal(refusal.error.code, -32003, 'told why');
    t.equal(await gone, 1008, 'closed');
    t.same(ws.received((m) => m.method === 'fs.event' && m.params.path === '/alice/after-revoke.txt'), [], 'the event was withheld');
  });
});
