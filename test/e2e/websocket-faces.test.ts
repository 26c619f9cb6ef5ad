// fs.event reaches a watcher whatever made the change: a write over another WebSocket connection,
// a workspace restore (files rewritten and deleted in one go).
import t from 'tap';
import { startDaemon, bytes } from '../helpers/daemon.js';
import { connectWs } from '../helpers/ws.js';

const isEvent = (m: any) => m.method === 'fs.event';
const brief = (m: any) => `${m.params.type} ${m.params.path}`;

t.test('changes from other faces reach a watcher', async (t) => {
  const d = await startDaemon({ inProcess: true }, t);
  const watcher = await connectWs(d.url);
  const writer = await connectWs(d.url);
  t.teardown(async () => {
    await watcher.close();
    await writer.close();
  });
  await watcher.request('watch', { path: '/proj' });

  // Over another WebSocket connection, as a notification (no answer) and as a request.
  writer.send({ jsonrpc: '2.0', method: 'write', params: { path: '/proj/a.txt', content: bytes('one') } });
  const w = await writer.request('write', { path: '/proj/b.txt', content: bytes('two') });
  t.equal(w.result.version, 1);
  const first = await watcher.next((m) => isEvent(m) && m.params.path === '/proj/b.txt');
  t.equal(first.params.etag, w.result.etag);
  t.same(watcher.received(isEvent).map(brief), ['mkdir /proj', 'write /proj/a.txt', 'write /proj/b.txt']);

  // A workspace restore: a.txt comes back, c.txt (made after the snapshot) goes.
  await d.call('register_workspace', { path: '/proj' });
  const snap = await d.call('workspace_snapshot', { workspace_path: '/proj' });
  await d.call('write', { path: '/proj/a.txt', content: bytes('changed') });
  await d.call('write', { path: '/proj/c.txt', content: bytes('new') });
  await watcher.next((m) => isEvent(m) && m.params.path === '/proj/c.txt'); // everything so far has arrived
  const before = watcher.received(isEvent).length;
  const restored = await d.call('workspace_restore', { workspace_path: '/proj', snapshot_number: snap.snapshot_number });
  t.equal(restored.files_restored, 1);
  await watcher.next((m) => isEvent(m) && m.params.type === 'write' && m.params.path === '/proj/a.txt' && m.params.version === 3);
  const fromRestore = watcher.received(isEvent).slice(before).map(brief).sort();
  t.same(fromRestore, ['delete /proj/c.txt', 'write /proj/a.txt'], 'the restore announced what it changed');
});
