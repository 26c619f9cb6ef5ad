// Closing a WebSocket ends its subscriptions: the connection's listener leaves the change bus, so
// nothing is kept (or sent) for a client that has gone, however it went.
import t from 'tap';
import { startAuthDaemon } from '../auth/harness.js';
import { connectWs } from '../helpers/ws.js';
import { bytes } from '../helpers/daemon.js';


/** Wait until `cond` holds (the server sees a close a moment after the client does). */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

t.test('closing the socket removes its subscriptions from the change bus', async (t) => {
  const d = await startAuthDaemon(t, {});
  const bus = d.daemon.services.events;
  const base = bus.listenerCount;

  const clean = await connectWs(d.url);
  const rude = await connectWs(d.url);
  for (const ws of [clean, rude]) {
    await ws.request('watch', { path: '/' });
    await ws.request('watch', { path: '/a', recursive: false });
  }
  t.equal(bus.listenerCount, base + 2, 'one bus listener per connection, however many subscriptions');
  await d.call('write', { path: '/a/x.txt', content: bytes('x') });
  await clean.next((m) => m.method === 'fs.event' && m.params.path === '/a/x.txt');

  await clean.close(); // a close handshake
  await until(() => bus.listenerCount === base + 1, 'the first listener to leave');
  t.pass('a cleanly closed connection leaves the bus');

  rude.socket.terminate(); // the TCP connection just drops
  await until(() => bus.listenerCount === base, 'the second listener to leave');
  t.pass('a dropped connection leaves the bus too');

  // Changes after that go nowhere and break nothing.
  const w = await d.call('write', { path: '/a/y.txt', content: bytes('y') });
  t.equal(w.version, 1);
  const fresh = await connectWs(d.url);
  t.teardown(() => fresh.close());
  t.same((await fresh.request('exists', { path: '/a/y.txt' })).result, { exists: true });
});
