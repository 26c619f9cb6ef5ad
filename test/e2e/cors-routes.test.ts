// HTTP routes and CORS (spec §4.1, §4.2; WIRE.md "HTTP routes").
import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { startDaemon, tempDir, bytes } from '../helpers/daemon.js';

/**
 * Every method of the daemon's method table, from the composition root the child daemon runs
 * (dist/, like bin/svc), so a stale build cannot make the comparison lie either way.
 */
async function tableMethods(): Promise<string[]> {
  const { buildServices } = await import('../../dist/daemon.js');
  const { createLogger } = await import('../../dist/core/log.js');
  const dir = tempDir('svc-e2e-table-');
  const services = buildServices(dir, createLogger('silent'));
  try {
    return Object.keys(services.methods);
  } finally {
    await (services as { mounts?: { close(): Promise<void> } }).mounts?.close();
    await services.store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function assertCors(t: Test, res: Response, what: string): void {
  t.equal(res.headers.get('access-control-allow-origin'), '*', `${what}: Allow-Origin`);
  t.equal(res.headers.get('access-control-allow-methods'), 'GET, POST, OPTIONS', `${what}: Allow-Methods`);
  const allowed = (res.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim().toLowerCase());
  for (const h of ['content-type', 'authorization', 'x-svc-subject', 'x-svc-tenant-id', 'x-api-key']) {
    t.ok(allowed.includes(h), `${what}: Allow-Headers has ${h}`);
  }
  t.equal(res.headers.get('access-control-max-age'), '86400', `${what}: Max-Age`);
}

t.test('routes and CORS', async (t) => {
  const d = await startDaemon({}, t);

  t.test('GET /health', async (t) => {
    const res = await d.raw('/health');
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type'), /^application\/json/);
    assertCors(t, res, 'health');
    t.same(await res.json(), { status: 'healthy', service: 'svc-rpc' });
    t.equal((await d.raw('/health?probe=1')).status, 200, 'a query string does not change the route');
  });

  t.test('GET /api/auth/whoami without auth configured', async (t) => {
    const res = await d.raw('/api/auth/whoami');
    t.equal(res.status, 200);
    assertCors(t, res, 'whoami');
    const body = await res.json();
    t.same(Object.keys(body).sort(), ['authenticated', 'is_admin', 'subject_id', 'subject_type', 'tenant_id']);
    t.match(body, { authenticated: false, tenant_id: 'default', is_admin: false });

    const as = await (await d.raw('/api/auth/whoami', { headers: { 'X-Svc-Subject': 'agent:bot-7', 'X-Svc-Tenant-ID': 'acme' } })).json();
    t.same(as, { authenticated: false, subject_type: 'agent', subject_id: 'bot-7', tenant_id: 'acme', is_admin: false });
  });

  t.test('GET /api/nfs/status lists every method, sorted', async (t) => {
    const res = await d.raw('/api/nfs/status');
    t.equal(res.status, 200);
    assertCors(t, res, 'status');
    const body = await res.json();
    t.match(body, {
      status: 'running', service: 'svc-rpc', version: /^\d+\.\d+\.\d+/, methods: Array,
      backend: { type: String }, metadata_store: { type: String, instance: String },
    });
    t.same(body.methods, [...body.methods].sort(), 'sorted');
    t.equal(new Set(body.methods).size, body.methods.length, 'no duplicates');
    const missing = (await tableMethods()).filter((m) => !body.methods.includes(m));
    t.same(missing, [], 'every method of the table is listed');
    for (const m of ['read', 'write', 'delete', 'rename', 'exists', 'get_metadata', 'mkdir', 'rmdir', 'list', 'is_directory',
      'glob', 'grep', 'get_version', 'list_versions', 'rollback', 'diff_versions']) {
      t.ok(body.methods.includes(m), m);
    }
  });

  t.test('OPTIONS answers 204 with the CORS headers, anywhere', async (t) => {
    for (const path of ['/api/nfs/write', '/health', '/anything/at/all']) {
      const res = await d.raw(path, {
        method: 'OPTIONS',
        headers: { Origin: 'https://example.test', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization' },
      });
      t.equal(res.status, 204, path);
      assertCors(t, res, `OPTIONS ${path}`);
      t.equal(await res.text(), '');
    }
  });

  t.test('unknown routes are 404 {"error":"Not Found"} with CORS headers', async (t) => {
    for (const [method, path] of [
      ['GET', '/'], ['GET', '/nope'], ['GET', '/api/nfs/read'], ['POST', '/api/other/read'], ['PUT', '/health'],
      ['DELETE', '/api/nfs/delete'], ['POST', '/api/nfs/read/extra'], ['POST', '/health'],
    ]) {
      const res = await d.raw(path, { method, headers: { 'Content-Type': 'application/json' }, ...(method === 'GET' ? {} : { body: '{}' }) });
      t.equal(res.status, 404, `${method} ${path}`);
      assertCors(t, res, `${method} ${path}`);
      t.same(await res.json(), { error: 'Not Found' });
    }
  });

  t.test('a request HTTP cannot parse gets 400 (431 for huge headers), JSON, with CORS headers; the daemon keeps serving', async (t) => {
    /** Send raw bytes, read until the server closes the connection. */
    const rawExchange = (bytes: string) => new Promise<string>((resolve, reject) => {
      const sock = connect(d.port, '127.0.0.1');
      let got = '';
      sock.on('data', (c) => (got += c.toString()));
      sock.on('end', () => resolve(got));
      sock.on('error', reject);
      sock.write(bytes);
    });
    for (const [label, bytes, status] of [
      ['a garbage request line', 'THIS IS NOT HTTP\r\n\r\n', 400],
      ['a header without a colon', 'POST /api/nfs/read HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', 400],
      ['headers over the limit', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`, 431],
    ] as const) {
      const answer = await rawExchange(bytes);
      const [head = '', body = ''] = answer.split('\r\n\r\n');
      t.match(head, new RegExp(`^HTTP/1.1 ${status} `), `${label}: ${status}`);
      t.match(head, /\r\nAccess-Control-Allow-Origin: \*\r\n/i, `${label}: CORS`);
      t.match(head, /\r\nAccess-Control-Allow-Methods: GET, POST, OPTIONS\r\n/i, `${label}: CORS methods`);
      t.match(JSON.parse(body), { error: String }, `${label}: a JSON body`);
    }
    const res = await d.raw('/health');
    t.equal(res.status, 200, 'still serving');
  });

  t.test('RPC answers carry the CORS headers, successes and errors alike', async (t) => {
    const ok = await d.raw('/api/nfs/write', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'write', params: { path: '/c.txt', content: bytes('c') } }),
    });
    t.equal(ok.status, 200);
    assertCors(t, ok, 'rpc success');
    const bad = await d.raw('/api/nfs/read', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{oops' });
    t.equal(bad.status, 200);
    assertCors(t, bad, 'rpc parse error');
    t.equal(((await bad.json()) as { error: { code: number } }).error.code, -32700);
  });
});
