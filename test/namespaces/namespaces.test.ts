/**
 * Namespaces (spec §4.13): built-in configs for the object types of spec §2.4, validation of
 * custom configs (-32005 naming the bad reference), a custom config governing checks and
 * rebac_create, delete falling back to the built-in, and who may change them.
 */
import t from 'tap';
import { compileNamespace } from '../../src/namespaces/config.js';
import { BUILTIN_NAMESPACES } from '../../src/namespaces/builtin.js';
import { open, user } from '../rebac/fixture.js';

const alice = ['user', 'alice'] as const;

t.test('built-in namespaces exist for every object type of spec §2.4, and compile', async (t) => {
  const { call } = open(t);
  t.same(await call('get_available_namespaces', {}), { namespaces: ['agent', 'file', 'group', 'memory', 'tenant', 'user', 'workspace'] });
  for (const [type, config] of Object.entries(BUILTIN_NAMESPACES)) t.doesNotThrow(() => compileNamespace(type, config), type);
  const file = await call('namespace_get', { object_type: 'file' }) as { object_type: string; builtin: boolean; config: { relations: object; permissions: object } };
  t.equal(file.builtin, true);
  t.same(file.config.permissions, { read: ['viewer'], write: ['editor'], delete: ['owner'], share: ['owner'] });
  t.match(file.config.relations, {
    parent: { path_parent: true }, direct_owner: {}, owner: { union: ['direct_owner', 'parent_owner'] },
    parent_viewer: { tupleToUserset: { tupleset: 'parent', computedUserset: 'viewer' } },
  });
  t.match(await call('namespace_get', { object_type: 'workspace' }), { object_type: 'workspace', alias_of: 'file', config: file.config });
  t.match(await call('namespace_get', { object_type: 'group' }), { config: { relations: { member: {} } } });
  const list = await call('namespace_list', {}) as { object_type: string }[];
  t.same(list.map((n) => n.object_type), ['agent', 'file', 'group', 'memory', 'tenant', 'user', 'workspace']);
  await t.rejects(call('namespace_get', { object_type: 'doc' }), { code: -32000, message: 'Namespace not found: doc', data: { object_type: 'doc' } });
});

t.test('namespace_create validates and names the bad reference (-32005)', async (t) => {
  const { call } = open(t);
  const bad: [unknown, RegExp, string?][] = [
    [{}, /must have 'relations' and 'permissions'/],
    [{ relations: {} }, /must have 'relations' and 'permissions'/],
    [{ relations: {}, permissions: {} }, /at least one relation/],
    [{ relations: { owner: {} }, permissions: {}, extra: 1 }, /unknown key 'extra'/, 'extra'],
    [{ relations: { owner: { union: ['direct_owner'] } }, permissions: {} }, /relation 'owner' refers to undefined relation 'direct_owner'/, 'direct_owner'],
    [{ relations: { owner: {} }, permissions: { read: ['viewer'] } }, /permission 'read' refers to undefined relation 'viewer'/, 'viewer'],
    [{ relations: { owner: {} }, permissions: { read: [] } }, /non-empty array/],
    [{ relations: { owner: {}, p: { tupleToUserset: { tupleset: 'parent', computedUserset: 'owner' } } }, permissions: {} },
      /'p' \(tupleset\) refers to undefined relation 'parent'/, 'parent'],
    [{ relations: { owner: {}, v: { union: ['owner'] }, p: { tupleToUserset: { tupleset: 'v', computedUserset: 'owner' } } }, permissions: {} },
      /tupleset 'v' must be a concrete relation/, 'v'],
    [{ relations: { a: { union: ['b'] }, b: { union: ['a'] } }, permissions: {} }, /refers to itself \(a -> b -> a\)/],
    [{ relations: { owner: { exclusion: 'x' } }, permissions: {} }, /unknown key 'exclusion'/, 'exclusion'],
    [{ relations: { owner: { union: ['x'], intersection: ['y'] } }, permissions: {} }, /exactly one of/],
    [{ relations: { owner: {} }, permissions: { owner: ['owner'] } }, /both a relation and a permission/, 'owner'],
    [{ relations: { 'bad name': {} }, permissions: {} }, /not a valid relation name/],
    [{ relations: { owner: 'direct' }, permissions: {} }, /must be an object/],
  ];
  for (const [config, message, reference] of bad) {
    await t.rejects(call('namespace_create', { object_type: 'doc', config }),
      { code: -32005, message, data: reference ? { object_type: 'doc', reference } : { object_type: 'doc' } }, JSON.stringify(config));
  }
  await t.rejects(call('namespace_create', { object_type: 'doc', config: 'x' }), { code: -32602 }, 'config must be an object');
  await t.rejects(call('namespace_create', { object_type: 'bad type', config: {} }), { code: -32602 });
  await t.rejects(call('namespace_create', { object_type: 'workspace', config: BUILTIN_NAMESPACES.file }), { code: -32005, message: /alias of 'file'/ });
  t.same(await call('get_available_namespaces', {}), { namespaces: ['agent', 'file', 'group', 'memory', 'tenant', 'user', 'workspace'] },
    'nothing was stored');
});

t.test('a custom namespace for a new type governs its checks and which relations tuples may carry', async (t) => {
  const { s, call } = open(t);
  const config = {
    relations: {
      author: {}, reviewer: {}, blocked: {},
      approver: { intersection: ['reviewer', 'author'] },
      reader: { union: ['author', 'reviewer'] },
    },
    permissions: { read: ['reader'], approve: ['approver'] },
  };
  const rec = await call('namespace_create', { object_type: 'doc', config }) as Record<string, unknown>;
  t.match(rec, { object_type: 'doc', config, builtin: false });
  t.same(await call('namespace_get', { object_type: 'doc' }), rec);
  t.same((await call('get_available_namespaces', {}) as { namespaces: string[] }).namespaces.includes('doc'), true);
  await call('rebac_create', { subject: alice, relation: 'reviewer', object: ['doc', 'd1'] });
  await t.rejects(call('rebac_create', { subject: alice, relation: 'reader', object: ['doc', 'd1'] }), { code: -32005, message: /computed/ });
  await t.rejects(call('rebac_create', { subject: alice, relation: 'direct_owner', object: ['doc', 'd1'] }),
    { code: -32005, message: /concrete relations: author, reviewer, blocked/ });
  t.equal(s.rebac.check(alice, 'read', ['doc', 'd1']), true);
  t.equal(s.rebac.check(alice, 'approve', ['doc', 'd1']), false, 'intersection needs both');
  await call('rebac_create', { subject: alice, relation: 'author', object: ['doc', 'd1'] });
  t.equal(s.rebac.check(alice, 'approve', ['doc', 'd1']), true);
  t.same(s.rebac.expand('approve', ['doc', 'd1']), { subjects: [['user', 'alice']] });
  t.equal(s.rebac.explain(alice, 'approve', ['doc', 'd1']).path.length, 2, 'an intersection is explained by all of its parts');
  await t.rejects(call('rebac_check', { subject: alice, permission: 'write', object: ['doc', 'd1'] }), { code: -32005 });
});

t.test('replacing the file namespace changes file checks; deleting it falls back to the built-in', async (t) => {
  const { s, call } = open(t);
  await s.rebac.create({ subject: alice, relation: 'direct_owner', object: ['file', '/a'] });
  await s.rebac.create({ subject: ['user', 'bob'], relation: 'direct_viewer', object: ['file', '/a/b.txt'] });
  t.equal(s.rebac.check(alice, 'read', ['file', '/a/b.txt']), true);
  // no inheritance, and viewers may write
  await call('namespace_create', {
    object_type: 'file',
    config: {
      relations: { parent: {}, direct_owner: {}, direct_editor: {}, direct_viewer: {}, owner: { union: ['direct_owner'] },
        editor: { union: ['direct_editor', 'direct_viewer', 'owner'] }, viewer: { union: ['editor'] } },
      permissions: { read: ['viewer'], write: ['editor'], delete: ['owner'], share: ['owner'] },
    },
  });
  t.equal(s.rebac.check(alice, 'read', ['file', '/a/b.txt']), false, 'inheritance is gone');
  t.equal(s.rebac.check(alice, 'read', ['file', '/a']), true);
  t.equal(s.rebac.check(['user', 'bob'], 'write', ['file', '/a/b.txt']), true, 'viewers write now');
  t.equal(s.rebac.check(['user', 'bob'], 'write', ['workspace', '/a/b.txt']), true, 'workspace follows file');
  t.match(await call('namespace_get', { object_type: 'workspace' }), { builtin: false, alias_of: 'file' });
  t.equal(await call('namespace_delete', { object_type: 'file' }), true);
  t.equal(await call('namespace_delete', { object_type: 'file' }), false, 'the built-in cannot be deleted');
  t.equal(await call('namespace_delete', { object_type: 'nothing' }), false);
  t.equal(s.rebac.check(alice, 'read', ['file', '/a/b.txt']), true, 'the built-in rules are back');
  t.equal(s.rebac.check(['user', 'bob'], 'write', ['file', '/a/b.txt']), false);
  t.match(await call('namespace_get', { object_type: 'file' }), { builtin: true, updated_at: null });
});

t.test('a custom group namespace where member is computed: membership is asked top-down', async (t) => {
  const { s, call } = open(t);
  await call('namespace_create', {
    object_type: 'group',
    config: { relations: { admin: {}, direct_member: {}, member: { union: ['direct_member', 'admin'] } }, permissions: { read: ['member'] } },
  });
  await s.rebac.create({ subject: alice, relation: 'admin', object: ['group', 'eng'] });
  await s.rebac.create({ subject: ['group', 'eng', 'member'], relation: 'direct_viewer', object: ['file', '/p'] });
  t.equal(s.rebac.check(alice, 'read', ['file', '/p/x']), true, 'an admin of eng is a member');
  t.equal(s.rebac.check(['user', 'bob'], 'read', ['file', '/p/x']), false);
  t.equal(await call('namespace_delete', { object_type: 'group' }), true);
  t.equal(s.rebac.check(alice, 'read', ['file', '/p/x']), false, 'with the built-in, admin means nothing');
});

t.test('with enforcement on, only admins change namespaces; anyone may read them', async (t) => {
  const { call } = open(t, { enforcePermissions: true });
  const config = { relations: { owner: {} }, permissions: { read: ['owner'] } };
  await t.rejects(call('namespace_create', { object_type: 'doc', config }, user('carol')), { code: -32004, message: /admin/ });
  await call('namespace_create', { object_type: 'doc', config }, user('root', { admin: true }));
  await t.rejects(call('namespace_delete', { object_type: 'doc' }, user('carol')), { code: -32004 });
  t.match(await call('namespace_get', { object_type: 'doc' }, user('carol')), { config });
  t.equal(await call('namespace_delete', { object_type: 'doc' }, user('root', { admin: true })), true);
});
