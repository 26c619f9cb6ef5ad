/**
 * Computed relations and permissions (spec §2.4, WIRE.md "Settled details"), what rebac_create
 * accepts (concrete relations only, legacy names mapped), idempotent creation, id normalisation.
 */
import t from 'tap';
import { open } from './fixture.js';

const alice = ['user', 'alice'] as const;

t.test('each direct relation yields its computed relations and permissions, and no more', async (t) => {
  const { s } = open(t);
  await s.rebac.create({ subject: ['user', 'o'], relation: 'direct_owner', object: ['file', '/doc'] });
  await s.rebac.create({ subject: ['user', 'e'], relation: 'direct_editor', object: ['file', '/doc'] });
  await s.rebac.create({ subject: ['user', 'v'], relation: 'direct_viewer', object: ['file', '/doc'] });
  const names = ['owner', 'editor', 'viewer', 'direct_owner', 'direct_editor', 'direct_viewer', 'read', 'write', 'delete', 'share'];
  const expected: Record<string, string[]> = {
    o: ['owner', 'editor', 'viewer', 'direct_owner', 'read', 'write', 'delete', 'share'],
    e: ['editor', 'viewer', 'direct_editor', 'read', 'write'],
    v: ['viewer', 'direct_viewer', 'read'],
    nobody: [],
  };
  for (const [who, granted] of Object.entries(expected)) {
    for (const name of names) {
      t.equal(s.rebac.check(['user', who], name, ['file', '/doc']), granted.includes(name), `${who} ${name}`);
    }
  }
});

t.test('rebac_create takes concrete relations only (-32005 for computed ones and permissions)', async (t) => {
  const { call } = open(t);
  for (const relation of ['owner', 'editor', 'viewer', 'read', 'write', 'delete', 'share', 'parent_owner']) {
    await t.rejects(call('rebac_create', { subject: alice, relation, object: ['file', '/x'] }), { code: -32005 }, relation);
  }
  await t.rejects(call('rebac_create', { subject: alice, relation: 'owner', object: ['file', '/x'] }),
    { code: -32005, message: /'owner' is computed for 'file'.*here direct_owner/ });
  await t.rejects(call('rebac_create', { subject: alice, relation: 'bogus', object: ['file', '/x'] }),
    { code: -32005, message: /Unknown relation 'bogus'.*direct_owner/ });
  // member is a relation of groups, not of files
  await t.rejects(call('rebac_create', { subject: alice, relation: 'member', object: ['file', '/x'] }), { code: -32005 });
  for (const relation of ['direct_owner', 'direct_editor', 'direct_viewer']) {
    t.type(await call('rebac_create', { subject: alice, relation, object: ['file', '/x'] }), 'string', relation);
  }
  t.type(await call('rebac_create', { subject: alice, relation: 'member', object: ['group', 'eng'] }), 'string');
  t.type(await call('rebac_create', { subject: ['file', '/x/y'], relation: 'parent', object: ['file', '/x'] }), 'string');
  // A type without a namespace takes any relation but the spec's computed names.
  t.type(await call('rebac_create', { subject: alice, relation: 'reviewer', object: ['doc', 'd1'] }), 'string');
  await t.rejects(call('rebac_create', { subject: alice, relation: 'viewer', object: ['doc', 'd1'] }), { code: -32005 });
  t.equal(await call('rebac_check', { subject: alice, permission: 'reviewer', object: ['doc', 'd1'] }), true);
});

t.test('legacy relation names are accepted and stored as their replacements', async (t) => {
  const { s, call } = open(t);
  const pairs: [string, string, [string, string]][] = [
    ['member-of', 'member', ['group', 'eng']],
    ['owner-of', 'direct_owner', ['file', '/o']],
    ['viewer-of', 'direct_viewer', ['file', '/v']],
    ['editor-of', 'direct_editor', ['file', '/e']],
  ];
  for (const [legacy, current, object] of pairs) {
    const id = await call('rebac_create', { subject: alice, relation: legacy, object });
    t.equal(await call('rebac_create', { subject: alice, relation: current, object }), id, `${legacy} is ${current}`);
    t.equal(s.rebac.list({ object }).at(0)?.relation, current);
  }
  t.equal(s.rebac.check(alice, 'delete', ['file', '/o']), true);
  t.equal(s.rebac.check(alice, 'write', ['file', '/e']), true);
  t.equal(s.rebac.check(alice, 'write', ['file', '/v']), false);
  t.equal(s.rebac.check(alice, 'member', ['group', 'eng']), true);
  t.equal(s.rebac.check(alice, 'member-of', ['group', 'eng']), true, 'a legacy name also works in checks');
  t.equal(s.rebac.list({ relation: 'owner-of' }).length, 1, 'and in list filters');
});

t.test('the same tuple again returns the same id; its expiry becomes the new one', async (t) => {
  const { s } = open(t);
  const a = await s.rebac.create({ subject: alice, relation: 'direct_viewer', object: ['file', '/a'] });
  t.equal(await s.rebac.create({ subject: alice, relation: 'direct_viewer', object: ['file', 'a/'] }), a, 'normalised object');
  t.equal(await s.rebac.create({ subject: alice, relation: 'viewer-of', object: ['workspace', '/a'] }), a, 'alias and legacy name');
  t.not(await s.rebac.create({ subject: alice, relation: 'direct_editor', object: ['file', '/a'] }), a, 'another relation');
  t.not(await s.rebac.create({ subject: alice, relation: 'direct_viewer', object: ['file', '/a'], tenantId: 't2' }), a, 'another tenant');
  const later = new Date(Date.now() + 3_600_000);
  t.equal(await s.rebac.create({ subject: alice, relation: 'direct_viewer', object: ['file', '/a'], expiresAt: later }), a);
  t.equal(s.rebac.get(a)?.expires_at?.getTime(), later.getTime(), 'expiry updated');
  t.equal(await s.rebac.create({ subject: alice, relation: 'direct_viewer', object: ['file', '/a'] }), a);
  t.equal(s.rebac.get(a)?.expires_at, null, 'granted again without expiry: permanent');
  t.equal(s.rebac.list({ relation: 'direct_viewer' }).length, 1);
});

t.test('file ids are normalised to a leading slash; workspace is an alias of file', async (t) => {
  const { s, call } = open(t);
  await call('rebac_create', { subject: alice, relation: 'direct_owner', object: ['file', 'proj//src/'] });
  const [tuple] = s.rebac.list();
  t.same(tuple?.object, ['file', '/proj/src']);
  t.equal(await call('rebac_check', { subject: alice, permission: 'write', object: ['file', 'proj/src/a.ts'] }), true);
  t.equal(await call('rebac_check', { subject: alice, permission: 'write', object: ['workspace', '/proj/src'] }), true);
  await call('rebac_create', { subject: ['user', 'bob'], relation: 'direct_viewer', object: ['workspace', 'ws1'] });
  t.same(s.rebac.list({ subject: ['user', 'bob'] })[0]?.object, ['file', '/ws1'], 'stored as file');
  t.equal(s.rebac.check(['user', 'bob'], 'read', ['file', '/ws1/notes.md']), true);
  await t.rejects(call('rebac_create', { subject: alice, relation: 'direct_owner', object: ['file', '/a/../b'] }), { code: -32002 });
  t.throws(() => s.rebac.check(alice, 'read', ['file', '/a/./b']), { code: -32002 });
  // other types keep their ids as given
  await call('rebac_create', { subject: alice, relation: 'direct_owner', object: ['memory', 'm/1'] });
  t.same(s.rebac.list({ object: ['memory', 'm/1'] }).length, 1);
});

t.test('a name the object type does not define: -32005 from the methods, false from check()', async (t) => {
  const { s, call } = open(t);
  await s.rebac.create({ subject: alice, relation: 'direct_owner', object: ['file', '/a'] });
  await t.rejects(call('rebac_check', { subject: alice, permission: 'reed', object: ['file', '/a'] }),
    { code: -32005, message: /Unknown permission or relation 'reed'.*read, write, delete, share/ });
  await t.rejects(call('rebac_explain', { subject: alice, permission: 'reed', object: ['file', '/a'] }), { code: -32005 });
  await t.rejects(call('rebac_expand', { permission: 'reed', object: ['file', '/a'] }), { code: -32005 });
  t.equal(s.rebac.check(alice, 'reed', ['file', '/a']), false);
  t.equal(await call('rebac_check', { subject: alice, permission: 'parent', object: ['file', '/a'] }), false, 'a relation is a valid name');
});

t.test('every built-in type has the same owner/editor/viewer rules', async (t) => {
  const { s } = open(t);
  for (const type of ['memory', 'agent', 'user', 'group', 'tenant']) {
    await s.rebac.create({ subject: ['user', 'e'], relation: 'direct_editor', object: [type, 'x'] });
    t.equal(s.rebac.check(['user', 'e'], 'write', [type, 'x']), true, `${type} write`);
    t.equal(s.rebac.check(['user', 'e'], 'read', [type, 'x']), true, `${type} read`);
    t.equal(s.rebac.check(['user', 'e'], 'share', [type, 'x']), false, `${type} share`);
  }
  await s.rebac.create({ subject: ['user', 'm'], relation: 'member', object: ['group', 'x'] });
  t.equal(s.rebac.check(['user', 'm'], 'read', ['group', 'x']), true, 'members may view their group');
  t.equal(s.rebac.check(['user', 'm'], 'write', ['group', 'x']), false);
});
