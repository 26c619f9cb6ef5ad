/**
 * The ReBAC methods on the wire (spec §4.11, WIRE.md): result shapes of create, check, expand,
 * explain, delete and list_tuples; list filters; tenant isolation; parameter validation; who may
 * change the graph when permissions are enforced.
 */
import t from 'tap';
import { open, user } from './fixture.js';

const alice = ['user', 'alice'];
const bob = ['user', 'bob'];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

t.test('result shapes', async (t) => {
  const { call } = open(t);
  const id = await call('rebac_create', { subject: alice, relation: 'direct_owner', object: ['file', '/proj'] });
  t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'tuple_id is a UUID (v7: ordered by creation)');
  await call('rebac_create', { subject: ['group', 'eng', 'member'], relation: 'direct_viewer', object: ['file', '/proj/docs'] });
  const membership = await call('rebac_create', { subject: bob, relation: 'member', object: ['group', 'eng'] });
  t.equal(await call('rebac_check', { subject: bob, permission: 'read', object: ['file', '/proj/docs/a.md'] }), true);
  t.equal(await call('rebac_check', { subject: bob, permission: 'write', object: ['file', '/proj/docs/a.md'] }), false);
  t.same(await call('rebac_expand', { permission: 'read', object: ['file', '/proj/docs/a.md'] }),
    { subjects: [['user', 'alice'], ['user', 'bob']] }, 'concrete subjects, the group replaced by its member, inherited owner included');
  t.same(await call('rebac_expand', { permission: 'owner', object: ['file', '/proj/docs'] }), { subjects: [['user', 'alice']] });
  t.same(await call('rebac_explain', { subject: bob, permission: 'read', object: ['file', '/proj/docs/a.md'] }), {
    allowed: true,
    path: [
      { subject: ['user', 'bob'], relation: 'member', object: ['group', 'eng'], tuple_id: membership },
      { subject: ['group', 'eng', 'member'], relation: 'direct_viewer', object: ['file', '/proj/docs'], tuple_id: (await call('rebac_list_tuples', { relation: 'direct_viewer' }) as { tuple_id: string }[])[0]!.tuple_id },
      { subject: ['file', '/proj/docs/a.md'], relation: 'parent', object: ['file', '/proj/docs'], implied: true },
    ],
  });
  t.same(await call('rebac_explain', { subject: bob, permission: 'delete', object: ['file', '/proj/docs/a.md'] }), { allowed: false, path: [] });
  const [tuple] = await call('rebac_list_tuples', { subject: alice }) as Record<string, unknown>[];
  t.same(Object.keys(tuple!).sort(), ['created_at', 'expires_at', 'object', 'relation', 'subject', 'tenant_id', 'tuple_id']);
  t.match(tuple, { tuple_id: id, subject: ['user', 'alice'], relation: 'direct_owner', object: ['file', '/proj'], tenant_id: 'default', expires_at: null });
  t.match(tuple!.created_at, ISO);
  t.equal(await call('rebac_delete', { tuple_id: id }), true);
  t.equal(await call('rebac_delete', { tuple_id: id }), false);
  t.equal(await call('rebac_delete', { tuple_id: 'no-such-id' }), false);
  t.equal(await call('rebac_check', { subject: alice, permission: 'read', object: ['file', '/proj'] }), false);
});

t.test('rebac_list_tuples filters by subject, relation and object, oldest first', async (t) => {
  const { call } = open(t);
  const made: string[] = [];
  for (const [subject, relation, object] of [
    [alice, 'direct_owner', ['file', '/a']],
    [alice, 'direct_viewer', ['file', '/b']],
    [bob, 'direct_viewer', ['file', '/a']],
    [['group', 'eng', 'member'], 'direct_editor', ['file', '/a']],
    [['group', 'eng'], 'direct_viewer', ['file', '/c']],
    [alice, 'member', ['group', 'eng']],
  ] as const) made.push(await call('rebac_create', { subject, relation, object }) as string);
  const ids = async (filter: object) => ((await call('rebac_list_tuples', filter)) as { tuple_id: string }[]).map((x) => x.tuple_id);
  t.same(await ids({}), made, 'everything, in creation order');
  t.same(await ids({ subject: alice }), [made[0], made[1], made[5]]);
  t.same(await ids({ subject: ['group', 'eng'] }), [made[3], made[4]], 'a [type, id] subject also matches its usersets');
  t.same(await ids({ subject: ['group', 'eng', 'member'] }), [made[3]]);
  t.same(await ids({ relation: 'direct_viewer' }), [made[1], made[2], made[4]]);
  t.same(await ids({ object: ['file', 'a'] }), [made[0], made[2], made[3]], 'object ids are normalised in filters');
  t.same(await ids({ subject: alice, object: ['file', '/a'] }), [made[0]]);
  t.same(await ids({ relation: 'direct_viewer', object: ['file', '/a'] }), [made[2]]);
  t.same(await ids({ subject: bob, relation: 'direct_owner' }), []);
  t.same(await ids({ object: ['workspace', '/b'] }), [made[1]], 'workspace means file in filters too');
});

t.test('tenants never see each other\'s tuples', async (t) => {
  const { call } = open(t);
  const acme = user('root', { tenant: 'acme', admin: true });
  const id = await call('rebac_create', { subject: alice, relation: 'direct_owner', object: ['file', '/x'], tenant_id: 'acme' });
  t.equal(await call('rebac_check', { subject: alice, permission: 'read', object: ['file', '/x'] }), false, 'not in the default tenant');
  t.equal(await call('rebac_check', { subject: alice, permission: 'read', object: ['file', '/x'], tenant_id: 'acme' }), true);
  t.equal(await call('rebac_check', { subject: alice, permission: 'read', object: ['file', '/x'] }, acme), true, 'the context tenant');
  t.same(await call('rebac_list_tuples', {}), []);
  t.equal((await call('rebac_list_tuples', {}, acme) as unknown[]).length, 1);
  t.same(await call('rebac_expand', { permission: 'read', object: ['file', '/x'] }), { subjects: [] });
  t.same(await call('rebac_expand', { permission: 'read', object: ['file', '/x'] }, acme), { subjects: [['user', 'alice']] });
  t.equal((await call('rebac_explain', { subject: alice, permission: 'read', object: ['file', '/x'] }) as { allowed: boolean }).allowed, false);
  t.equal(await call('rebac_delete', { tuple_id: id }), false, 'another tenant cannot delete it');
  t.equal(await call('rebac_check', { subject: alice, permission: 'read', object: ['file', '/x'] }, acme), true, 'still there');
  // group memberships do not cross tenants either
  await call('rebac_create', { subject: bob, relation: 'member', object: ['group', 'eng'], tenant_id: 'acme' });
  await call('rebac_create', { subject: ['group', 'eng', 'member'], relation: 'direct_viewer', object: ['file', '/g'] });
  t.equal(await call('rebac_check', { subject: bob, permission: 'read', object: ['file', '/g'] }), false);
  t.equal(await call('rebac_delete', { tuple_id: id }, acme), true);
});

t.test('parameters are validated (-32602)', async (t) => {
  const { call } = open(t);
  const bad: [string, object, string][] = [
    ['rebac_create', { subject: ['user'], relation: 'direct_owner', object: ['file', '/x'] }, 'subject'],
    ['rebac_create', { subject: 'user:alice', relation: 'direct_owner', object: ['file', '/x'] }, 'subject'],
    ['rebac_create', { subject: alice, relation: 'direct_owner', object: ['file', '/x', 'extra'] }, 'object'],
    ['rebac_create', { subject: alice, relation: 'direct_owner', object: ['file', ''] }, 'object'],
    ['rebac_create', { subject: ['user', 'a\u0000b'], relation: 'direct_owner', object: ['file', '/x'] }, 'subject'],
    ['rebac_create', { subject: ['user', 'a\u001fb'], relation: 'direct_owner', object: ['file', '/x'] }, 'subject'],
    ['rebac_create', { subject: ['user', '\ud800'], relation: 'direct_owner', object: ['file', '/x'] }, 'subject'],
    ['rebac_create', { subject: alice, relation: 'direct_owner', object: ['file', '/x'], expires_at: 'soon' }, 'expires_at'],
    ['rebac_create', { subject: alice, object: ['file', '/x'] }, 'relation'],
    ['rebac_check', { subject: ['group', 'eng', 'member'], permission: 'read', object: ['file', '/x'] }, 'subject'],
    ['rebac_check', { subject: alice, permission: 'read' }, 'object'],
    ['rebac_explain', { subject: alice, permission: 'read', object: ['file', '/x'], extra: 1 }, 'extra'],
    ['rebac_delete', {}, 'tuple_id'],
    ['rebac_list_tuples', { relation: 5 }, 'relation'],
  ];
  for (const [method, params, param] of bad) {
    await t.rejects(call(method, params), { code: -32602, data: { param: new RegExp(`^${param}`) } }, `${method} ${JSON.stringify(params)}`);
  }
  // 1,895 bytes: within a path's limit (core/paths, 1,900), past what a tuple's keys can hold.
  const long = '/' + Array.from({ length: 9 }, () => 'x'.repeat(200)).join('/') + '/' + 'x'.repeat(85);
  await t.rejects(call('rebac_create', { subject: alice, relation: 'direct_owner', object: ['file', long] }), { code: -32602, message: /too long/ });
  t.equal(await call('rebac_check', { subject: alice, permission: 'read', object: ['file', long + '/y'] }), false, 'a check on a very long path is just false');
  t.same(await call('rebac_list_tuples', { object: ['file', long] }), []);
});

t.test('with enforcement on, a non-admin needs share on the object to create or delete tuples, in its own tenant', async (t) => {
  const { call } = open(t, { enforcePermissions: true });
  const admin = user('root', { admin: true });
  const carol = user('carol');
  const dave = user('dave');
  await t.rejects(call('rebac_create', { subject: ['user', 'carol'], relation: 'direct_owner', object: ['file', '/'] }, carol),
    { code: -32004, message: /needs share on file:\// }, 'nobody grants themselves what they do not own');
  await call('rebac_create', { subject: ['user', 'carol'], relation: 'direct_owner', object: ['file', '/carol'] }, admin);
  const grant = await call('rebac_create', { subject: ['user', 'dave'], relation: 'direct_viewer', object: ['file', '/carol/shared'] }, carol);
  t.type(grant, 'string', 'an owner shares below what she owns');
  await t.rejects(call('rebac_create', { subject: ['user', 'dave'], relation: 'direct_owner', object: ['file', '/carol/shared'] }, dave),
    { code: -32004 }, 'a viewer may not share');
  await t.rejects(call('rebac_delete', { tuple_id: grant }, dave), { code: -32004 });
  await t.rejects(call('rebac_create', { subject: ['user', 'dave'], relation: 'direct_viewer', object: ['file', '/carol/x'], tenant_id: 'other' }, carol),
    { code: -32004, message: /tenant other/ });
  await t.rejects(call('rebac_check', { subject: ['user', 'dave'], permission: 'read', object: ['file', '/x'], tenant_id: 'other' }, carol), { code: -32004 });
  t.equal(await call('rebac_check', { subject: ['user', 'dave'], permission: 'read', object: ['file', '/carol/shared/f'] }, carol), true);
  t.equal(await call('rebac_delete', { tuple_id: grant }, carol), true);
  // A parent tuple puts its subject under the object's owners: the subject's owner must agree too.
  await call('rebac_create', { subject: ['user', 'dave'], relation: 'direct_owner', object: ['file', '/dave'] }, admin);
  await t.rejects(call('rebac_create', { subject: ['file', '/dave'], relation: 'parent', object: ['file', '/carol'] }, carol),
    { code: -32004, message: /needs share on file:\/dave/ }, 'carol may not adopt dave\'s directory into hers');
  t.equal(await call('rebac_check', { subject: ['user', 'carol'], permission: 'read', object: ['file', '/dave/f'] }, carol), false, 'no escalation');
  await t.rejects(call('rebac_create', { subject: ['file', '/dave'], relation: 'parent-of-nothing', object: ['file', '/carol'] }, carol), { code: -32005 });
  await t.rejects(call('rebac_create', { subject: ['file', '/dave'], relation: 'parent', object: ['file', '/carol'] }, dave),
    { code: -32004, message: /needs share on file:\/carol/ }, 'nor dave put his under hers without her');
  await call('rebac_create', { subject: ['user', 'carol'], relation: 'direct_owner', object: ['file', '/carol2'] }, admin);
  t.type(await call('rebac_create', { subject: ['file', '/carol2'], relation: 'parent', object: ['file', '/carol'] }, carol), 'string',
    'an owner of both links them');
  t.equal(await call('rebac_check', { subject: ['user', 'dave'], permission: 'read', object: ['file', '/dave/f'] }, dave), true);
  t.type(await call('rebac_create', { subject: ['user', 'x'], relation: 'direct_owner', object: ['file', '/y'], tenant_id: 'other' }, admin), 'string',
    'an admin may act anywhere');
  // without enforcement, or without authentication, the graph is open
  const open2 = open(t, { enforcePermissions: false });
  t.type(await open2.call('rebac_create', { subject: ['user', 'dave'], relation: 'direct_owner', object: ['file', '/'] }, dave), 'string');
  t.type(await call('rebac_create', { subject: ['user', 'eve'], relation: 'direct_owner', object: ['file', '/'] }), 'string', 'no auth: taken as given');
});

t.test('canAccessPath, requirePath and pathFilter: the check the faces call', async (t) => {
  const { s } = open(t);
  await s.rebac.create({ subject: ['user', 'carol'], relation: 'direct_editor', object: ['file', '/team'] });
  await s.rebac.create({ subject: ['agent', 'bot'], relation: 'direct_viewer', object: ['file', '/team/readme.md'], tenantId: 'acme' });
  const carol = user('carol');
  t.equal(s.rebac.canAccessPath(carol, 'write', '/team/a/b.txt'), true);
  t.equal(s.rebac.canAccessPath(carol, 'delete', '/team/a/b.txt'), false);
  t.equal(s.rebac.canAccessPath(carol, 'read', 'team'), true, 'paths are normalised');
  t.equal(s.rebac.canAccessPath(user('root', { admin: true }), 'delete', '/anything'), true, 'admins may do anything');
  t.equal(s.rebac.canAccessPath(user('bot', { type: 'agent', tenant: 'acme' }), 'read', '/team/readme.md'), true, 'subject type and tenant from the context');
  t.equal(s.rebac.canAccessPath(user('bot', { type: 'agent' }), 'read', '/team/readme.md'), false);
  t.throws(() => s.rebac.requirePath(carol, 'delete', '/team/x'), { code: -32004, data: { path: '/team/x', permission: 'delete' } });
  t.doesNotThrow(() => s.rebac.requirePath(carol, 'write', '/team/x'));
  const readable = s.rebac.pathFilter(carol, 'read');
  t.same(['/team/a', '/team/b/c', '/other/d', '/team'].filter(readable), ['/team/a', '/team/b/c', '/team']);
});
