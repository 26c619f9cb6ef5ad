// SIGTERM while WebSocket requests are in flight: the daemon answers every message it has already
// received, then closes the connection with 1001, and every write it answered is there after a
// restart (issue 2 item 5: in-flight requests finish, the store is closed cleanly).
import t from 'tap';
import { startDaemon, bytes, unbytes } from '../helpers/daemon.js';
import { connectWs } from '../helpers/ws.js';

const N = 150;
const payload = (i: number) => `ws shutdown ${i} ${'q'.repeat(20_000)}`;

t.test('SIGTERM mid-batch: the batch is answered in full before the 1001 close', async (t) => {
  const d = await startDaemon({}, t);
  const ws = await connectWs(d.url);
  const watch = await ws.request('watch', { path: '/inflight' });
  const sub = watch.result.subscription_id;
  const frames: { kind: 'answer' | 'close'; code?: number }[] = [];
  ws.socket.on('message', (data) => {
    const msg = JSON.parse(String(data));
    if (Array.isArray(msg) || msg.id === 'after') frames.push({ kind: 'answer' });
  });
  const closed = new Promise<number>((resolve) => ws.socket.once('close', (code) => {
    frames.push({ kind: 'close', code });
    resolve(code);
  }));

  // One batch of N durable writes, then one more request queued behind it on the same connection.
  ws.send(Array.from({ length: N }, (_, i) => ({
    jsonrpc: '2.0', id: i, method: 'write', params: { path: `/inflight/f${String(i).padStart(3, '0')}.txt`, content: bytes(payload(i)) },
  })));
  ws.send({ jsonrpc: '2.0', id: 'after', method: 'exists', params: { path: '/inflight/f000.txt' } });
  // The first fs.event proves the daemon has received the batch and is working through it.
  await ws.next((m) => m.method === 'fs.event' && m.params.subscription_id === sub && m.params.type === 'write');
  const stopped = d.stop(); // SIGTERM now, with most of the batch still to do

  t.equal(await closed, 1001, 'closed with 1001 (going away)');
  t.equal(await stopped, 0, 'exit code 0');
  const batch = ws.received((m) => Array.isArray(m))[0];
  t.ok(batch, 'the batch was answered before the close');
  t.equal(batch?.length, N, 'one answer per request of the batch');
  t.same(batch?.filter((a: any) => a.error), [], 'every write of the batch succeeded');
  t.same(ws.received((m) => m.id === 'after')[0]?.result, { exists: true }, 'the request queued behind the batch was answered too');
  t.same(frames.map((f) => f.kind), ['answer', 'answer', 'close'], 'answers first, then the close');

  await d.restart();
  const listed: string[] = await d.call('list', { path: '/inflight' });
  t.equal(listed.length, N, 'every answered write is stored');
  t.equal(unbytes(await d.call('read', { path: `/inflight/f${N - 1}.txt` })).toString(), payload(N - 1));
});

t.test('after SIGTERM no new WebSocket connection is accepted', async (t) => {
  const d = await startDaemon({}, t);
  const ws = await connectWs(d.url);
  const closed = new Promise<number>((resolve) => ws.socket.once('close', (code) => resolve(code)));
  t.equal(await d.stop(), 0);
  t.equal(await closed, 1001);
  await t.rejects(connectWs(d.url), 'the daemon is gone');
});
