// The wire codec end to end (spec §2.1, WIRE.md "Wire types"): timedelta as seconds or the tagged
// form, datetime as an ISO string or the tagged form, datetimes in results as ISO 8601 UTC, bytes
// both ways; malformed values are -32602 naming the parameter.
import t from 'tap';
import { startDaemon, bytes, unbytes } from '../helpers/daemon.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('wire codec over HTTP', async (t) => {
  const d = await startDaemon({ inProcess: true }, t);

  t.test('timedelta: a number of seconds, or {"__type__":"timedelta","seconds":n}', async (t) => {
    for (const [path, ttl, seconds] of [
      ['/codec/ws-number', 3600, 3600], ['/codec/ws-tagged', { __type__: 'timedelta', seconds: 90 }, 90], ['/codec/ws-frac', 1.5, 1.5],
    ] as const) {
      const ws = await d.call('register_workspace', { path, ttl });
      t.match(ws.created_at, ISO);
      t.match(ws.expires_at, ISO);
      t.equal(Date.parse(ws.expires_at) - Date.parse(ws.created_at), seconds * 1000, `${JSON.stringify(ttl)} → ${seconds} s`);
    }
    for (const ttl of ['3600', -1, { __type__: 'timedelta' }, { __type__: 'timedelta', seconds: 'x' }, { seconds: 5 }, [60]]) {
      const env = await d.rpc('register_workspace', { path: '/codec/ws-bad', ttl });
      t.equal(env.error?.code, -32602, `ttl ${JSON.stringify(ttl)}`);
      t.same(env.error?.data, { param: 'ttl' });
    }
  });

  t.test('datetime: an ISO string, or {"__type__":"datetime","data":iso}; results are ISO 8601 UTC', async (t) => {
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const plain = await d.call('rebac_create', {
      subject: ['user', 'u1'], relation: 'direct_viewer', object: ['file', '/codec/a'], expires_at: later,
    });
    const tagged = await d.call('rebac_create', {
      subject: ['user', 'u2'], relation: 'direct_viewer', object: ['file', '/codec/a'], expires_at: { __type__: 'datetime', data: later },
    });
    const tuples: any[] = await d.call('rebac_list_tuples', { object: ['file', '/codec/a'] });
    for (const id of [plain, tagged]) {
      const tuple = tuples.find((x) => x.tuple_id === id);
      t.equal(tuple?.expires_at, later, 'stored and returned as the same ISO instant');
      t.match(tuple?.created_at, ISO);
    }
    for (const expires_at of ['not a date', '', 12, { __type__: 'datetime', data: 'garbage' }, { __type__: 'datetime' }]) {
      const env = await d.rpc('rebac_create', {
        subject: ['user', 'u3'], relation: 'direct_viewer', object: ['file', '/codec/a'], expires_at,
      });
      t.equal(env.error?.code, -32602, `expires_at ${JSON.stringify(expires_at)}`);
      t.same(env.error?.data, { param: 'expires_at' });
    }
  });

  t.test('bytes both ways, binary-safe, and an empty file', async (t) => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await d.call('write', { path: '/codec/all-bytes.bin', content: bytes(all) });
    const back = await d.call('read', { path: '/codec/all-bytes.bin' });
    t.same(Object.keys(back).sort(), ['__type__', 'data']);
    t.ok(unbytes(back).equals(all), 'every byte value survives');
    await d.call('write', { path: '/codec/empty', content: { __type__: 'bytes', data: '' } });
    t.same(await d.call('read', { path: '/codec/empty' }), { __type__: 'bytes', data: '' });
    const meta = await d.call('read', { path: '/codec/all-bytes.bin', return_metadata: true });
    t.equal(meta.encoding, 'base64');
    t.ok(Buffer.from(meta.content, 'base64').equals(all), 'return_metadata content is a plain base64 string');
    t.match(meta.metadata.modified_at, ISO);
  });
});
