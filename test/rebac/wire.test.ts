/**
 * ReBAC and namespace methods over HTTP against an in-process daemon, through the typed client:
 * dispatch, result encoding (booleans, datetimes), status.methods, and a rename over the wire
 * keeping a grant. Identity comes from X-Svc-Subject / X-Svc-Tenant-ID (no auth configured).
 */
import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { SvcClient } from '../../src/client/index.js';

const METHODS = [
  'get_available_namespaces', 'namespace_create', 'namespace_delete', 'namespace_get', 'namespace_list',
  'rebac_check', 'rebac_create', 'rebac_delete', 'rebac_expand', 'rebac_explain', 'rebac_list_tuples',
];

t.test('the methods over HTTP with the typed client', async (t) => {
  const d = await startDaemon({ inProcess: true }, t);
  const client = new SvcClient({ url: d.url });
  const status = await client.status();
  for (const m of METHODS) t.ok(status.methods.includes(m), m);

  const id = await client.call('rebac_create', { subject: ['user', 'alice'], relation: 'direct_owner', object: ['file', 'docs'] });
  t.type(id, 'string');
  t.equal(await client.call('rebac_check', { subject: ['user', 'alice'], permission: 'write', object: ['file', '/docs/a/b.md'] }), true);
  t.equal(await client.call('rebac_check', { subject: ['user', 'bob'], permission: 'read', object: ['file', '/docs/a/b.md'] }), false,
    'false is a result, not {success:true}');
  const [tuple] = await client.call('rebac_list_tuples', { object: ['file', '/docs'] });
  t.match(tuple, { tuple_id: id, object: ['file', '/docs'], expires_at: null });
  t.match(tuple?.created_at, /Z$/);
  t.same(await client.call('rebac_expand', { permission: 'read', object: ['file', '/docs/x'] }), { subjects: [['user', 'alice']] });
  t.match(await client.call('rebac_explain', { subject: ['user', 'alice'], permission: 'read', object: ['file', '/docs/x'] }),
    { allowed: true, path: [{ relation: 'direct_owner', tuple_id: id }, { relation: 'parent', implied: true }] });
  await t.rejects(client.call('rebac_create', { subject: ['user', 'alice'], relation: 'owner', object: ['file', '/docs'] }),
    { code: -32005, data: { relation: 'owner', object_type: 'file' } }, 'a computed relation');

  // a rename through the RPC face keeps the grant
  await client.call('write', { path: '/docs/a/b.md', content: Buffer.from('# b') });
  await client.call('rename', { old_path: '/docs', new_path: '/papers' });
  t.equal(await client.call('rebac_check', { subject: ['user', 'alice'], permission: 'write', object: ['file', '/papers/a/b.md'] }), true);

  // identity headers choose the tenant for methods without tenant_id
  const acme = new SvcClient({ url: d.url, subject: 'user:root', tenantId: 'acme' });
  await acme.call('rebac_create', { subject: ['user', 'zed'], relation: 'direct_viewer', object: ['file', '/z'] });
  t.equal((await acme.call('rebac_list_tuples', {})).length, 1);
  t.equal((await client.call('rebac_list_tuples', { subject: ['user', 'zed'] })).length, 0);

  t.same(await client.call('get_available_namespaces', {}), { namespaces: ['agent', 'file', 'group', 'memory', 'tenant', 'user', 'workspace'] });
  const ns = await client.call('namespace_create', { object_type: 'doc', config: { relations: { author: {} }, permissions: { read: ['author'] } } });
  t.match(ns, { object_type: 'doc', builtin: false });
  t.match(ns.updated_at, /Z$/);
  await t.rejects(client.call('namespace_get', { object_type: 'nope' }), { code: -32000 });
  t.equal(await client.call('namespace_delete', { object_type: 'doc' }), true);
  t.equal(await client.call('rebac_delete', { tuple_id: id }), true);
});
