// The JSON-RPC envelope over HTTP (spec §2.2, §7; WIRE.md "Envelope").
import t from 'tap';
import { startDaemon, type DaemonHandle, type Envelope } from '../helpers/daemon.js';

async function post(d: DaemonHandle, method: string, body: string): Promise<{ status: number; env: Envelope; type: string | null }> {
  const res = await d.raw(`/api/nfs/${method}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  return { status: res.status, type: res.headers.get('content-type'), env: (await res.json()) as Envelope };
}

t.test('envelope', async (t) => {
  const d = await startDaemon({}, t);

  t.test('a good request: HTTP 200, jsonrpc 2.0, id echoed, result', async (t) => {
    const { status, env, type } = await post(d, 'exists', JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'exists', params: { path: '/' } }));
    t.equal(status, 200);
    t.match(type, /^application\/json/);
    t.same(env, { jsonrpc: '2.0', id: 7, result: { exists: true } });
  });

  t.test('string ids are echoed', async (t) => {
    const { env } = await post(d, 'exists', JSON.stringify({ jsonrpc: '2.0', id: 'req-abc', method: 'exists', params: { path: '/' } }));
    t.equal(env.id, 'req-abc');
  });

  t.test('without id the request is answered with id null', async (t) => {
    const { env } = await post(d, 'exists', JSON.stringify({ jsonrpc: '2.0', method: 'exists', params: { path: '/' } }));
    t.same(env, { jsonrpc: '2.0', id: null, result: { exists: true } });
    const explicit = await post(d, 'exists', JSON.stringify({ jsonrpc: '2.0', id: null, method: 'exists', params: { path: '/' } }));
    t.equal(explicit.env.id, null);
  });

  t.test('ids are echoed on errors too', async (t) => {
    const { env } = await post(d, 'read', JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'read', params: { path: '/missing' } }));
    t.equal(env.id, 99);
    t.equal(env.error?.code, -32000);
    t.notOk('result' in env);
  });

  t.test('jsonrpc and method may be omitted (spec §2.2 examples; method from the URL)', async (t) => {
    const { env } = await post(d, 'exists', JSON.stringify({ id: 1, params: { path: '/' } }));
    t.same(env, { jsonrpc: '2.0', id: 1, result: { exists: true } });
  });

  t.test('params absent means {}', async (t) => {
    const { env } = await post(d, 'list', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'list' }));
    t.same(env.result, []);
  });

  t.test('invalid JSON is -32700 with id null, still HTTP 200', async (t) => {
    for (const body of ['{not json', '{"jsonrpc":"2.0","id":1,', "{'a':1}", '\u0000']) {
      const { status, env } = await post(d, 'exists', body);
      t.equal(status, 200);
      t.equal(env.error?.code, -32700, JSON.stringify(body));
      t.equal(env.id, null);
    }
  });

  t.test('an empty body is -32700', async (t) => {
    const { env } = await post(d, 'exists', '');
    t.equal(env.error?.code, -32700);
  });

  t.test('anything but one object is -32600', async (t) => {
    for (const body of ['[]', '[{"jsonrpc":"2.0","id":1,"method":"exists","params":{"path":"/"}}]', '"exists"', '42', 'null', 'true']) {
      const { status, env } = await post(d, 'exists', body);
      t.equal(status, 200);
      t.equal(env.error?.code, -32600, body);
      t.equal(env.id, null);
    }
  });

  t.test('jsonrpc other than "2.0" is -32600', async (t) => {
    for (const jsonrpc of ['1.0', 2, null, '2']) {
      const { env } = await post(d, 'exists', JSON.stringify({ jsonrpc, id: 3, method: 'exists', params: { path: '/' } }));
      t.equal(env.error?.code, -32600, JSON.stringify(jsonrpc));
      t.equal(env.id, 3);
    }
  });

  t.test('a body method that differs from the URL is -32600 Method mismatch', async (t) => {
    const { env } = await post(d, 'exists', JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'delete', params: { path: '/x' } }));
    t.equal(env.error?.code, -32600);
    t.match(env.error?.message, /^Method mismatch/);
    t.equal(env.id, 4);
  });

  t.test('a non-string method is -32600', async (t) => {
    const { env } = await post(d, 'exists', JSON.stringify({ jsonrpc: '2.0', id: 4, method: 5, params: { path: '/' } }));
    t.equal(env.error?.code, -32600);
  });

  t.test('an id that is neither number, string nor null is -32600', async (t) => {
    for (const id of [{}, [1], true]) {
      const { env } = await post(d, 'exists', JSON.stringify({ jsonrpc: '2.0', id, method: 'exists', params: { path: '/' } }));
      t.equal(env.error?.code, -32600, JSON.stringify(id));
    }
  });

  t.test('params that are not an object are -32602', async (t) => {
    for (const params of [[], ['/'], 'path', 5, true]) {
      const { env } = await post(d, 'exists', JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'exists', params }));
      t.equal(env.error?.code, -32602, JSON.stringify(params));
      t.equal(env.id, 5);
    }
  });

  t.test('an unknown method is -32601 Method not found: <name>', async (t) => {
    const { status, env } = await post(d, 'no_such_method', JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'no_such_method', params: {} }));
    t.equal(status, 200);
    t.equal(env.error?.code, -32601);
    t.equal(env.error?.message, 'Method not found: no_such_method');
    t.equal(env.id, 6);
  });

  t.test('prototype names are not methods', async (t) => {
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const { env } = await post(d, name, JSON.stringify({ jsonrpc: '2.0', id: 1, method: name, params: {} }));
      t.equal(env.error?.code, -32601, name);
    }
  });

  t.test('WebSocket-only methods are not served over HTTP POST', async (t) => {
    const { env } = await post(d, 'watch', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'watch', params: {} }));
    t.equal(env.error?.code, -32601);
  });

  t.test('errors carry {code, message} and data only when there is some', async (t) => {
    const { env } = await post(d, 'read', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'read', params: { path: '/missing' } }));
    t.same(Object.keys(env.error!).sort(), ['code', 'data', 'message']);
    t.type(env.error?.message, 'string');
  });
});
