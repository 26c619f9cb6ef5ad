// WebSocket watch with permission enforcement on: a watcher is sent only the changes it may read
// (like list and grep), whoever made them and through whichever face; an admin sees everything.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bearer, startAuthDaemon, tempDir } from '../auth/harness.js';
import { connectWs } from '../helpers/ws.js';
import { bytes } from '../helpers/daemon.js';

const KEYS = {
  alice: 'sk-wsperm-alice-0123456789abcdef01',
  bob: 'sk-wsperm-bob-0123456789abcdef0002',
  root: 'sk-wsperm-root-0123456789abcdef003',
} as const;
const A = bearer(KEYS.alice);
const B = bearer(KEYS.bob);
const ROOT = bearer(KEYS.root);
const isEvent = (m: any) => m.method === 'fs.event';

t.test('watch delivers only what the watcher may read', async (t) => {
  const file = join(tempDir(t, 'svc-wsperm-cfg-'), 'auth.json');
  writeFileSync(file, JSON.stringify({
    api_keys: { [KEYS.alice]: { user_id: 'alice' }, [KEYS.bob]: { user_id: 'bob' }, [KEYS.root]: { user_id: 'root', is_admin: true } },
  }));
  const d = await startAuthDaemon(t, { authType: 'static', authConfig: file });
  for (const u of ['alice', 'bob']) {
    await d.call('mkdir', { path: `/home/${u}`, parents: true }, ROOT);
    await d.call('rebac_create', { subject: ['user', u], relation: 'direct_owner', object: ['file', `/home/${u}`] }, ROOT);
  }
  await d.call('write', { path: '/home/bob/shared/doc.txt', content: bytes('for alice to read') }, B);
  await d.call('rebac_create', { subject: ['user', 'alice'], relation: 'direct_viewer', object: ['file', '/home/bob/shared'] }, B);

  const alice = await connectWs(d.url, A);
  const admin = await connectWs(d.url, ROOT);
  t.teardown(async () => {
    await alice.close();
    await admin.close();
  });
  const aliceSub = (await alice.request('watch', { path: '/', recursive: true })).result.subscription_id;
  const adminSub = (await admin.request('watch', { path: '/', recursive: true })).result.subscription_id;

  // Bob works in his home over HTTP: private files, and the directory he shares with alice.
  await d.call('write', { path: '/home/bob/private.txt', content: bytes('secret') }, B);
  await d.call('write', { path: '/home/bob/shared/doc.txt', content: bytes('updated') }, B);
  await d.call('rename', { old_path: '/home/bob/private.txt', new_path: '/home/bob/private-2.txt' }, B);
  await d.call('delete', { path: '/home/bob/private-2.txt' }, B);
  await d.call('mkdir', { path: '/home/bob/hidden' }, B);
  await d.call('rmdir', { path: '/home/bob/hidden' }, B);
  // Alice works in her own home.
  await d.call('write', { path: '/home/alice/mine.txt', content: bytes('mine') }, A);
  // Both connections have seen the last change; each is ordered, so every earlier event they were
  // sent has arrived too.
  await admin.next((m) => isEvent(m) && m.params.path === '/home/alice/mine.txt');
  await alice.next((m) => isEvent(m) && m.params.path === '/home/alice/mine.txt');

  const seen = (c: typeof alice) => c.received(isEvent).map((m) => `${m.params.type} ${m.params.path}${m.params.new_path ? ` -> ${m.params.new_path}` : ''}`);
  t.same(seen(alice), ['write /home/bob/shared/doc.txt', 'write /home/alice/mine.txt'],
    'alice sees the shared file and her own, nothing of bob\'s private changes');
  t.ok(alice.received(isEvent).every((m) => m.params.subscription_id === aliceSub));
  t.same(seen(admin), [
    'write /home/bob/private.txt', 'write /home/bob/shared/doc.txt', 'rename /home/bob/private.txt -> /home/bob/private-2.txt',
    'delete /home/bob/private-2.txt', 'mkdir /home/bob/hidden', 'rmdir /home/bob/hidden', 'write /home/alice/mine.txt',
  ], 'the admin sees every change');
  t.ok(admin.received(isEvent).every((m) => m.params.subscription_id === adminSub));

  // A grant changes what the open subscription delivers from then on.
  await d.call('rebac_create', { subject: ['user', 'alice'], relation: 'direct_viewer', object: ['file', '/home/bob'] }, B);
  await d.call('write', { path: '/home/bob/now-visible.txt', content: bytes('hello alice') }, B);
  const ev = await alice.next((m) => isEvent(m) && m.params.path === '/home/bob/now-visible.txt');
  t.equal(ev.params.type, 'write');
});
