// A server fault reaches the client as -32603 "Internal error" with data {error_id}, over HTTP and
// WebSocket alike: never a client-fault code, never a stack or the fault's own message (WIRE.md
// "Envelope"). The fault here is real store damage: a chunk removed behind the service's back.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Daemon } from '../../src/daemon.js';
import { loadConfig } from '../../src/config.js';
import { bytes } from '../helpers/daemon.js';
import { connectWs } from '../helpers/ws.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

t.test('an internal fault is -32603 with an error_id, logged, and nothing of it leaks', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-e2e-internal-'));
  const logLines: any[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) logLines.push(JSON.parse(line));
      done();
    },
  });
  const config = loadConfig({ host: '127.0.0.1', port: 0, dataDir, logLevel: 'error' }, {});
  const daemon = new Daemon(config, pino({ level: 'error' }, sink));
  const { port } = await daemon.start();
  const url = `http://127.0.0.1:${port}`;
  t.teardown(async () => {
    await daemon.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const rpc = async (method: string, params: unknown, id: number) => {
    const res = await fetch(`${url}/api/nfs/${method}`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
    });
    t.equal(res.status, 200, 'JSON-RPC errors are HTTP 200');
    t.equal(res.headers.get('access-control-allow-origin'), '*');
    return { text: await res.clone().text(), body: (await res.json()) as any };
  };

  // Above the size kept inline in an entry, so the content lives in a chunk.
  const w = (await rpc('write', { path: '/damaged/file.txt', content: bytes('soon without its chunk. '.repeat(100)) }, 1)).body.result;
  // Remove the file's only chunk from the chunk store directly: the metadata still names it.
  const { store } = daemon.services;
  await store.transact(() => store.blobs.delete(w.etag));
  t.notOk(store.blobs.has(w.etag), 'the chunk is gone');

  const { text, body } = await rpc('read', { path: '/damaged/file.txt' }, 7);
  t.equal(body.id, 7, 'the id is echoed');
  t.equal(body.error.code, -32603);
  t.equal(body.error.message, 'Internal error');
  t.same(Object.keys(body.error.data), ['error_id'], 'data carries only the error_id');
  t.match(body.error.data.error_id, UUID);
  t.notMatch(text, /chunk|blob store|\bat \w|\.ts:|\.js:|node_modules|Error:/, 'no message, stack or file name leaks');

  const logged = logLines.find((l) => l.error_id === body.error.data.error_id);
  t.ok(logged, 'the error_id finds the log line');
  t.match(logged?.err?.stack ?? '', /chunk .* missing/, 'the log has the real cause with its stack');

  const ws = await connectWs(url);
  t.teardown(() => ws.close());
  const answer = await ws.request('read', { path: '/damaged/file.txt' }, 'ws-1');
  t.equal(answer.id, 'ws-1');
  t.equal(answer.error.code, -32603, 'the same over WebSocket');
  t.equal(answer.error.message, 'Internal error');
  t.match(answer.error.data.error_id, UUID);
  t.not(answer.error.data.error_id, body.error.data.error_id, 'each fault has its own id');

  // Other files and requests are unaffected.
  const ok = await rpc('write', { path: '/damaged/other.txt', content: bytes('fine') }, 8);
  t.equal(ok.body.result.version, 1, 'the daemon keeps serving');
  t.same((await ws.request('exists', { path: '/damaged/other.txt' })).result, { exists: true });
});
