// Request body limits and requests cut off mid-body (WIRE.md "HTTP routes": 413 with a -32600
// envelope naming the limit). The daemon must keep serving after each.
import t, { type Test } from 'tap';
import { request } from 'node:http';
import { connect } from 'node:net';
import WebSocket from 'ws';
import { startDaemon, bytes, type DaemonHandle } from '../helpers/daemon.js';

const LIMIT = 1024 * 1024; // --max-body 1mb

interface RawAnswer { status: number; headers: Record<string, string | string[] | undefined>; body: string }

/** POST a body with node:http (fetch may hide an early answer behind a reset upload). */
function post(d: DaemonHandle, path: string, body: Buffer, opts: { chunked?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(`${d.url}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(opts.chunked ? { 'Transfer-Encoding': 'chunked' } : { 'Content-Length': body.length }) },
    }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (opts.chunked) {
      for (let off = 0; off < body.length; off += 64 * 1024) req.write(body.subarray(off, off + 64 * 1024));
      req.end();
    } else {
      req.end(body);
    }
  });
}

/** An envelope whose body is about `size` bytes. */
function envelopeOfSize(path: string, size: number): Buffer {
  const raw = Math.floor(((size - 200) * 3) / 4);
  return Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'write', params: { path, content: bytes(Buffer.alloc(raw, 7)) } }));
}

async function stillServing(t: Test, d: DaemonHandle, what: string): Promise<void> {
  const res = await d.raw('/health');
  t.equal(res.status, 200, `${what}: health still answers`);
  await res.body?.cancel();
  const w = await d.call('write', { path: '/alive.txt', content: bytes(what) });
  t.ok(w.version >= 1, `${what}: writes still work`);
}

t.test('body limit', async (t) => {
  const d = await startDaemon({ maxBody: '1mb' }, t);

  t.test('a body under the limit is served', async (t) => {
    const body = envelopeOfSize('/limit/under.bin', LIMIT - 4096);
    t.ok(body.length < LIMIT);
    const res = await post(d, '/api/nfs/write', body);
    t.equal(res.status, 200);
    t.match(JSON.parse(res.body), { result: { version: 1 } });
  });

  t.test('a larger body (Content-Length) is HTTP 413 with a -32600 envelope naming the limit', async (t) => {
    const body = envelopeOfSize('/limit/over.bin', 2 * LIMIT);
    const res = await post(d, '/api/nfs/write', body);
    t.equal(res.status, 413);
    t.equal(res.headers['access-control-allow-origin'], '*');
    t.match(res.headers['content-type'], /^application\/json/);
    const env = JSON.parse(res.body);
    t.match(env, { jsonrpc: '2.0', id: null, error: { code: -32600 } });
    t.match(env.error.message, String(LIMIT), 'the message names the limit');
    t.same(await d.call('exists', { path: '/limit/over.bin' }), { exists: false });
    await stillServing(t, d, 'after 413');
  });

  t.test('after an early 413 the rest of the body is read, so a client still sending gets the answer, not a reset', async (t) => {
    // Raw socket: headers, then the body in pieces that keep coming after the 413 has arrived;
    // then a second request on the same connection, which is answered.
    const socket = connect(d.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let received = '';
    socket.on('data', (c: Buffer) => (received += c.toString()));
    const errors: Error[] = [];
    socket.on('error', (e) => errors.push(e));
    const total = 3 * LIMIT;
    socket.write(`POST /api/nfs/write HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`);
    const piece = Buffer.alloc(256 * 1024, 0x20);
    for (let sent = 0; sent < total; sent += piece.length) {
      await new Promise<void>((resolve) => socket.write(piece, () => resolve()));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    t.match(received, /^HTTP\/1\.1 413 /, 'the 413 arrived');
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'exists', params: { path: '/nothing' } });
    socket.write(`POST /api/nfs/exists HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${ping.length}\r\n\r\n${ping}`);
    const deadline = Date.now() + 10_000;
    while (!/"id":7/.test(received) && Date.now() < deadline && errors.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    t.same(errors, [], 'no EPIPE or reset while sending the rest');
    t.match(received, /HTTP\/1\.1 200 [\s\S]*"result":\{"exists":false\}/, 'the same connection serves the next request');
    socket.destroy();
  });

  t.test('a larger chunked body (no Content-Length) is 413 too', async (t) => {
    const res = await post(d, '/api/nfs/write', envelopeOfSize('/limit/chunked.bin', 2 * LIMIT), { chunked: true });
    t.equal(res.status, 413);
    t.match(JSON.parse(res.body), { error: { code: -32600 } });
    t.same(await d.call('exists', { path: '/limit/chunked.bin' }), { exists: false });
    await stillServing(t, d, 'after chunked 413');
  });

  t.test('a request cut off mid-body leaves no file, and the daemon keeps serving', async (t) => {
    for (const how of ['destroy', 'end'] as const) {
      const path = `/limit/cut-${how}.bin`;
      const body = envelopeOfSize(path, 600 * 1024);
      await new Promise<void>((resolve, reject) => {
        const sock = connect(d.port, '127.0.0.1', () => {
          sock.write(`POST /api/nfs/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
          sock.write(body.subarray(0, Math.floor(body.length / 2)), () => {
            // Let the daemon start reading before the client goes away.
            setTimeout(() => {
              if (how === 'destroy') sock.destroy();
              else sock.end();
              resolve();
            }, 50);
          });
        });
        sock.on('error', reject);
      });
      await new Promise((r) => setTimeout(r, 100));
      t.same(await d.call('exists', { path }), { exists: false }, `${how}: no file`);
      await stillServing(t, d, `after a cut-off request (${how})`);
    }
  });

  t.test('a WebSocket message over the limit closes that connection only', async (t) => {
    const ws = new WebSocket(d.url.replace('http', 'ws') + '/api/nfs/ws');
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.on('error', () => {});
    ws.send(envelopeOfSize('/limit/ws.bin', 2 * LIMIT));
    t.equal(await closed, 1009, 'closed with 1009 (message too big)');
    t.same(await d.call('exists', { path: '/limit/ws.bin' }), { exists: false });
    await stillServing(t, d, 'after an oversized WebSocket message');
  });

  t.test('SIGTERM still stops the daemon cleanly afterwards (no request left hanging)', async (t) => {
    const started = Date.now();
    t.equal(await d.stop(), 0, 'exit code 0');
    t.ok(Date.now() - started < 5000, 'stopped promptly');
  });
});
