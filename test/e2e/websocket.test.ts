// JSON-RPC over WebSocket at /api/nfs/ws: methods, batches, notifications, watch/unwatch and
// fs.event pushes for changes made over HTTP (WIRE.md "HTTP routes").
import t from 'tap';
import { createHash } from 'node:crypto';
import { startDaemon, bytes, unbytes } from '../helpers/daemon.js';
import { connectWs, type WsClient } from '../helpers/ws.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const isEvent = (sub?: string) => (m: any) => m.method === 'fs.event' && (sub === undefined || m.params?.subscription_id === sub);

t.test('websocket', async (t) => {
  const d = await startDaemon({}, t);
  const open: WsClient[] = [];
  const connect = async () => {
    const ws = await connectWs(d.url);
    open.push(ws);
    return ws;
  };
  t.teardown(async () => {
    for (const ws of open) await ws.close();
  });

  t.test('one connection is served in order: a notification write is seen by the next read', async (t) => {
    const ws = await connect();
    for (let i = 0; i < 20; i++) {
      ws.send({ jsonrpc: '2.0', method: 'write', params: { path: '/ws/order.txt', content: bytes(`round ${i}`) } });
      const r = await ws.request('read', { path: '/ws/order.txt' }, `r${i}`);
      t.equal(unbytes(r.result).toString(), `round ${i}`);
    }
  });

  t.test('the same methods as HTTP, with the same wire types', async (t) => {
    const ws = await connect();
    const w = await ws.request('write', { path: '/ws/a.txt', content: bytes('over ws') }, 1);
    t.same(w.jsonrpc, '2.0');
    t.equal(w.id, 1);
    t.match(w.result, { etag: sha('over ws'), version: 1, size: 7, modified_at: ISO });
    const r = await ws.request('read', { path: '/ws/a.txt' }, 'two');
    t.equal(r.id, 'two');
    t.equal(unbytes(r.result).toString(), 'over ws');
    t.equal(unbytes(await d.call('read', { path: '/ws/a.txt' })).toString(), 'over ws', 'visible over HTTP');
  });

  t.test('errors come back with their codes and ids', async (t) => {
    const ws = await connect();
    t.match(await ws.request('read', { path: '/ws/missing' }, 3), { id: 3, error: { code: -32000 } });
    t.match(await ws.request('nope', {}, 4), { id: 4, error: { code: -32601, message: 'Method not found: nope' } });
    t.match(await ws.request('read', { path: '/../x' }, 5), { id: 5, error: { code: -32002 } });
    t.match(await ws.request('write', { path: '/ws/s.txt', content: 'bare string' }, 6), { id: 6, error: { code: -32602 } });
    ws.send({ jsonrpc: '1.0', id: 7, method: 'exists', params: { path: '/' } });
    t.match(await ws.next((m) => m.id === 7), { error: { code: -32600 } });
  });

  t.test('invalid JSON is -32700 with id null; the connection stays usable', async (t) => {
    const ws = await connect();
    ws.send('{not json');
    t.match(await ws.next((m) => m.error?.code === -32700), { jsonrpc: '2.0', id: null, error: { code: -32700 } });
    t.same((await ws.request('exists', { path: '/' })).result, { exists: true });
  });

  t.test('notifications (no id) get no answer but take effect', async (t) => {
    const ws = await connect();
    ws.send({ jsonrpc: '2.0', method: 'write', params: { path: '/ws/notified.txt', content: bytes('n') } });
    ws.send({ jsonrpc: '2.0', method: 'no_such_method', params: {} });
    ws.send({ jsonrpc: '2.0', method: 'read', params: { path: '/missing' } });
    // Messages of one connection are handled concurrently (JSON-RPC promises no order), so the
    // write may commit after a later read: poll, bounded.
    let seen = false;
    for (let i = 0; i < 40 && !seen; i++) {
      seen = (await ws.request('exists', { path: '/ws/notified.txt' }, `marker-${i}`)).result.exists;
      if (!seen) await new Promise((r) => setTimeout(r, 25));
    }
    t.ok(seen, 'the notified write took effect');
    t.same(await ws.quietFor(200, (m) => !String(m.id).startsWith('marker-')), [], 'nothing else arrived');
    t.same(ws.received((m) => !String(m.id).startsWith('marker-')), [], 'only the markers were answered');
  });

  t.test('batches: one array answer for the requests, none for the notifications', async (t) => {
    const ws = await connect();
    ws.send([
      { jsonrpc: '2.0', id: 'b1', method: 'write', params: { path: '/ws/batch1.txt', content: bytes('1') } },
      { jsonrpc: '2.0', method: 'write', params: { path: '/ws/batch2.txt', content: bytes('2') } },
      { jsonrpc: '2.0', id: 'b3', method: 'exists', params: { path: '/ws/a.txt' } },
      { jsonrpc: '2.0', id: 'b4', method: 'read', params: { path: '/ws/nothing' } },
      42,
    ]);
    const answer = await ws.next(Array.isArray);
    t.equal(answer.length, 4);
    const byId = new Map(answer.map((a: { id: unknown }) => [a.id, a]));
    t.match(byId.get('b1'), { result: { version: 1 } });
    t.same((byId.get('b3') as { result: unknown }).result, { exists: true });
    t.match(byId.get('b4'), { error: { code: -32000 } });
    t.match(byId.get(null), { error: { code: -32600 } }, 'a non-object member is -32600');
    t.same(await d.call('exists', { path: '/ws/batch2.txt' }), { exists: true }, 'the notification in the batch ran');
  });

  t.test('a batch of notifications only gets no answer', async (t) => {
    const ws = await connect();
    ws.send([{ jsonrpc: '2.0', method: 'mkdir', params: { path: '/ws/quiet', parents: true } }]);
    t.same(await ws.quietFor(200), []);
    t.same(await d.call('is_directory', { path: '/ws/quiet' }), { is_directory: true });
  });

  t.test('an empty batch is -32600', async (t) => {
    const ws = await connect();
    ws.send([]);
    t.match(await ws.next(), { jsonrpc: '2.0', id: null, error: { code: -32600 } });
  });

  t.test('watch: fs.event for every change made over HTTP', async (t) => {
    await d.call('mkdir', { path: '/w' });
    const ws = await connect();
    const sub = await ws.request('watch', { path: '/w', recursive: true });
    const id = sub.result.subscription_id;
    t.type(id, 'string');
    t.ok(id.length > 0);

    const w = await d.call('write', { path: '/w/a.txt', content: bytes('A') });
    const e1 = await ws.next(isEvent(id));
    t.same(Object.keys(e1).sort(), ['jsonrpc', 'method', 'params']);
    t.notOk('id' in e1, 'a notification has no id');
    t.same(e1.params, { subscription_id: id, type: 'write', path: '/w/a.txt', etag: w.etag, version: 1, at: e1.params.at });
    t.match(e1.params.at, ISO);

    await d.call('mkdir', { path: '/w/sub' });
    t.match((await ws.next(isEvent(id))).params, { type: 'mkdir', path: '/w/sub', at: ISO });

    await d.call('rename', { old_path: '/w/a.txt', new_path: '/w/sub/b.txt' });
    t.match((await ws.next(isEvent(id))).params, { type: 'rename', path: '/w/a.txt', new_path: '/w/sub/b.txt', at: ISO });

    const w2 = await d.call('write', { path: '/w/sub/b.txt', content: bytes('B') });
    t.match((await ws.next(isEvent(id))).params, { type: 'write', path: '/w/sub/b.txt', etag: w2.etag, version: 2 });

    await d.call('rollback', { path: '/w/sub/b.txt', version: 1 });
    t.match((await ws.next(isEvent(id))).params, { type: 'write', path: '/w/sub/b.txt', etag: w.etag, version: 3 });

    await d.call('delete', { path: '/w/sub/b.txt' });
    t.match((await ws.next(isEvent(id))).params, { type: 'delete', path: '/w/sub/b.txt', at: ISO });

    await d.call('rmdir', { path: '/w/sub' });
    t.match((await ws.next(isEvent(id))).params, { type: 'rmdir', path: '/w/sub', at: ISO });

    await d.call('write', { path: '/elsewhere.txt', content: bytes('x') });
    t.same(await ws.quietFor(200, isEvent(id)), [], 'changes outside the watched path are not sent');
  });

  t.test('implicit parents of a write are announced as mkdir', async (t) => {
    const ws = await connect();
    const id = (await ws.request('watch', { path: '/implicit' })).result.subscription_id;
    await d.call('write', { path: '/implicit/x/y.txt', content: bytes('y') });
    const types = [];
    for (let i = 0; i < 3; i++) {
      const e = (await ws.next(isEvent(id))).params;
      types.push(`${e.type} ${e.path}`);
    }
    t.same(types, ['mkdir /implicit', 'mkdir /implicit/x', 'write /implicit/x/y.txt']);
  });

  t.test('renames into and out of a watched directory are seen', async (t) => {
    await d.call('mkdir', { path: '/in' });
    await d.call('write', { path: '/out/f.txt', content: bytes('f') });
    const ws = await connect();
    const id = (await ws.request('watch', { path: '/in' })).result.subscription_id;
    await d.call('rename', { old_path: '/out/f.txt', new_path: '/in/f.txt' });
    t.match((await ws.next(isEvent(id))).params, { type: 'rename', path: '/out/f.txt', new_path: '/in/f.txt' });
    await d.call('rename', { old_path: '/in/f.txt', new_path: '/out/g.txt' });
    t.match((await ws.next(isEvent(id))).params, { type: 'rename', path: '/in/f.txt', new_path: '/out/g.txt' });
  });

  t.test('removing or moving an ancestor of a watched directory is seen', async (t) => {
    await d.call('write', { path: '/anc/inner/f.txt', content: bytes('f') });
    await d.call('write', { path: '/anc2/inner/f.txt', content: bytes('f') });
    const ws = await connect();
    const rec = (await ws.request('watch', { path: '/anc/inner' })).result.subscription_id;
    const flat = (await ws.request('watch', { path: '/anc2/inner', recursive: false })).result.subscription_id;
    await d.call('rmdir', { path: '/anc', recursive: true });
    t.match((await ws.next(isEvent(rec))).params, { type: 'rmdir', path: '/anc' }, 'recursive watch: ancestor removed');
    await d.call('rename', { old_path: '/anc2', new_path: '/anc3' });
    t.match((await ws.next(isEvent(flat))).params, { type: 'rename', path: '/anc2', new_path: '/anc3' }, 'flat watch: ancestor moved');
    await d.call('write', { path: '/anc3/inner/g.txt', content: bytes('g') });
    t.same(await ws.quietFor(150, isEvent(flat)), [], 'the watch stays on its path, not on the moved directory');
  });

  t.test('a non-recursive watch sees only direct children', async (t) => {
    await d.call('mkdir', { path: '/nr/deep', parents: true });
    const ws = await connect();
    const id = (await ws.request('watch', { path: '/nr', recursive: false })).result.subscription_id;
    await d.call('write', { path: '/nr/deep/hidden.txt', content: bytes('h') });
    await d.call('write', { path: '/nr/direct.txt', content: bytes('d') });
    const e = await ws.next(isEvent(id));
    t.match(e.params, { type: 'write', path: '/nr/direct.txt' });
    t.same(await ws.quietFor(200, isEvent(id)), [], 'the deeper write was not sent');
    t.same(ws.received(isEvent(id)).map((m) => m.params.path), ['/nr/direct.txt']);
  });

  t.test('each subscription gets its own id; unwatch stops it', async (t) => {
    await d.call('mkdir', { path: '/u' });
    const ws = await connect();
    const a = (await ws.request('watch', { path: '/u' })).result.subscription_id;
    const b = (await ws.request('watch', { path: '/' })).result.subscription_id;
    t.not(a, b);
    await d.call('write', { path: '/u/1.txt', content: bytes('1') });
    t.match((await ws.next(isEvent(a))).params, { path: '/u/1.txt' });
    t.match((await ws.next(isEvent(b))).params, { path: '/u/1.txt' });

    t.same((await ws.request('unwatch', { subscription_id: a })).result, { success: true });
    await d.call('write', { path: '/u/2.txt', content: bytes('2') });
    t.match((await ws.next(isEvent(b))).params, { path: '/u/2.txt' }, 'the other subscription still works');
    t.same(await ws.quietFor(200, isEvent(a)), [], 'no more events for the unwatched one');
    t.same((await ws.request('unwatch', { subscription_id: a })).result, { success: false }, 'unwatching twice is harmless');
  });

  t.test('subscriptions belong to their connection', async (t) => {
    const ws1 = await connect();
    const ws2 = await connect();
    const id1 = (await ws1.request('watch', { path: '/conn' })).result.subscription_id;
    t.same((await ws2.request('unwatch', { subscription_id: id1 })).result, { success: false });
    await d.call('write', { path: '/conn/x.txt', content: bytes('x') });
    t.match((await ws1.next(isEvent(id1), 2000)).params, { type: 'mkdir', path: '/conn' });
    t.same(await ws2.quietFor(200, isEvent()), [], 'the other connection hears nothing');
  });

  t.test('watch and unwatch validate their params', async (t) => {
    const ws = await connect();
    t.match(await ws.request('watch', { path: 5 }), { error: { code: -32602 } });
    t.match(await ws.request('watch', { path: '/', recursive: 'yes' }), { error: { code: -32602 } });
    t.match(await ws.request('watch', { path: '/', colour: 'red' }), { error: { code: -32602 } });
    t.match(await ws.request('watch', { path: '/a/../b' }), { error: { code: -32002 } });
    t.match(await ws.request('unwatch', {}), { error: { code: -32602 } });
  });

  t.test('the WebSocket route is /api/nfs/ws only', async (t) => {
    await t.rejects(connectWs(d.url + '/elsewhere'), { message: /HTTP 404/ }, 'an upgrade on another path is refused');
  });

  // Last: stops the daemon.
  t.test('SIGTERM with clients connected: they are closed with 1001 and the daemon exits promptly', async (t) => {
    const ws = await connect();
    await ws.request('watch', { path: '/' });
    const closed = new Promise<number>((resolve) => ws.socket.once('close', (code) => resolve(code)));
    const started = Date.now();
    t.equal(await d.stop(), 0, 'exit code 0');
    t.equal(await closed, 1001);
    t.ok(Date.now() - started < 5000, `stopped in ${Date.now() - started} ms`);
  });
});
