/**
 * Groups: a grant to a userset `[group, g, member]` or to a plain `[group, g]` reaches every
 * member; nested groups too; cycles terminate; other kinds of usersets are asked top-down.
 */
import t from 'tap';
import { open, testClock } from './fixture.js';

const carol = ['user', 'carol'] as const;
const dave = ['user', 'dave'] as const;

t.test('a grant to a group userset reaches its members, not others', async (t) => {
  const { s } = open(t);
  await s.rebac.create({ subject: ['group', 'eng', 'member'], relation: 'direct_editor', object: ['file', '/p'] });
  await s.rebac.create({ subject: carol, relation: 'member', object: ['group', 'eng'] });
  t.equal(s.rebac.check(carol, 'write', ['file', '/p/src/x.ts']), true);
  t.equal(s.rebac.check(carol, 'delete', ['file', '/p/src/x.ts']), false);
  t.equal(s.rebac.check(dave, 'read', ['file', '/p']), false);
  t.equal(s.rebac.check(['group', 'eng'], 'member', ['group', 'eng']), false, 'a group is not its own member');
});

t.test('a grant to a plain group subject stands for its members too', async (t) => {
  const { s } = open(t);
  await s.rebac.create({ subject: ['group', 'ops'], relation: 'direct_viewer', object: ['file', '/logs'] });
  await s.rebac.create({ subject: dave, relation: 'member', object: ['group', 'ops'] });
  t.equal(s.rebac.check(dave, 'read', ['file', '/logs/today']), true);
  t.equal(s.rebac.check(carol, 'read', ['file', '/logs/today']), false);
  t.equal(s.rebac.check(['group', 'ops'], 'read', ['file', '/logs']), true, 'the group entity holds it as well');
});

t.test('nested groups: members of A reach what B is granted when A is a member of B, at any depth', async (t) => {
  const { s } = open(t);
  await s.rebac.create({ subject: carol, relation: 'member', object: ['group', 'a'] });
  await s.rebac.create({ subject: ['group', 'a', 'member'], relation: 'member', object: ['group', 'b'] });
  await s.rebac.create({ subject: ['group', 'b'], relation: 'member', object: ['group', 'c'] });
  await s.rebac.create({ subject: ['group', 'c', 'member'], relation: 'direct_owner', object: ['file', '/vault'] });
  t.equal(s.rebac.check(carol, 'member', ['group', 'b']), true);
  t.equal(s.rebac.check(carol, 'member', ['group', 'c']), true);
  t.equal(s.rebac.check(carol, 'share', ['file', '/vault/k']), true, 'three groups deep, one directory down');
  t.equal(s.rebac.check(dave, 'read', ['file', '/vault/k']), false);
  const { path } = s.rebac.explain(carol, 'share', ['file', '/vault/k']);
  t.same(path.map((e) => [e.subject, e.relation, e.object]), [
    [['user', 'carol'], 'member', ['group', 'a']],
    [['group', 'a', 'member'], 'member', ['group', 'b']],
    [['group', 'b'], 'member', ['group', 'c']],
    [['group', 'c', 'member'], 'direct_owner', ['file', '/vault']],
    [['file', '/vault/k'], 'parent', ['file', '/vault']],
  ]);
});

t.test('membership cycles terminate and decide correctly', async (t) => {
  const { s } = open(t);
  await s.rebac.create({ subject: ['group', 'x', 'member'], relation: 'member', object: ['group', 'y'] });
  await s.rebac.create({ subject: ['group', 'y', 'member'], relation: 'member', object: ['group', 'x'] });
  await s.rebac.create({ subject: ['group', 'x'], relation: 'member', object: ['group', 'x'] });
  await s.rebac.create({ subject: ['group', 'x', 'member'], relation: 'direct_viewer', object: ['file', '/cyc'] });
  t.equal(s.rebac.check(dave, 'read', ['file', '/cyc']), false, 'nobody is in a cycle of empty groups');
  t.equal(s.rebac.explain(dave, 'read', ['file', '/cyc']).allowed, false);
  t.same(s.rebac.expand('read', ['file', '/cyc']), { subjects: [] });
  await s.rebac.create({ subject: carol, relation: 'member', object: ['group', 'y'] });
  t.equal(s.rebac.check(carol, 'read', ['file', '/cyc']), true, 'a member of y is in x through the cycle');
  t.equal(s.rebac.explain(carol, 'read', ['file', '/cyc']).allowed, true);
  t.same(s.rebac.expand('read', ['file', '/cyc']), { subjects: [['user', 'carol']] });
});

t.test('other kinds of usersets are resolved top-down', async (t) => {
  const { s } = open(t);
  // "viewers of /spec may view /impl"
  await s.rebac.create({ subject: ['file', '/spec', 'viewer'], relation: 'direct_viewer', object: ['file', '/impl'] });
  await s.rebac.create({ subject: dave, relation: 'direct_owner', object: ['file', '/spec'] });
  t.equal(s.rebac.check(dave, 'read', ['file', '/impl/main.c']), true);
  t.equal(s.rebac.check(dave, 'write', ['file', '/impl/main.c']), false);
  // a membership whose subject is a userset of a type without a namespace
  await s.rebac.create({ subject: ['team', 't1', 'lead'], relation: 'member', object: ['group', 'leads'] });
  await s.rebac.create({ subject: ['group', 'leads', 'member'], relation: 'direct_editor', object: ['file', '/roadmap'] });
  await s.rebac.create({ subject: carol, relation: 'lead', object: ['team', 't1'] });
  t.equal(s.rebac.check(carol, 'write', ['file', '/roadmap']), true);
  t.equal(s.rebac.check(dave, 'write', ['file', '/roadmap']), false);
  t.same(s.rebac.expand('write', ['file', '/roadmap']), { subjects: [['user', 'carol']] });
});

t.test('a userset must name a relation its type defines', async (t) => {
  const { call } = open(t);
  await t.rejects(call('rebac_create', { subject: ['group', 'eng', 'membr'], relation: 'direct_viewer', object: ['file', '/p'] }),
    { code: -32005, message: /Unknown relation 'membr'/ });
  await t.rejects(call('rebac_create', { subject: ['group', 'eng', ''], relation: 'direct_viewer', object: ['file', '/p'] }), { code: -32602 });
  t.type(await call('rebac_create', { subject: ['group', 'eng', 'member-of'], relation: 'direct_viewer', object: ['file', '/p'] }), 'string',
    'legacy names map in usersets too');
});

t.test('deleting a membership or a group grant takes the access away', async (t) => {
  const { s, call } = open(t);
  const grant = await s.rebac.create({ subject: ['group', 'eng', 'member'], relation: 'direct_viewer', object: ['file', '/p'] });
  const membership = await s.rebac.create({ subject: carol, relation: 'member', object: ['group', 'eng'] });
  t.equal(s.rebac.check(carol, 'read', ['file', '/p']), true);
  t.equal(await call('rebac_delete', { tuple_id: membership }), true);
  t.equal(await call('rebac_delete', { tuple_id: membership }), false);
  t.equal(s.rebac.check(carol, 'read', ['file', '/p']), false);
  await s.rebac.create({ subject: carol, relation: 'member', object: ['group', 'eng'] });
  t.equal(s.rebac.check(carol, 'read', ['file', '/p']), true);
  await s.rebac.delete(grant);
  t.equal(s.rebac.check(carol, 'read', ['file', '/p']), false);
  t.same([...s.store.table('rebac_sets').keys({})], [], 'no set entry left behind');
});

t.test('many groups on one object, few for the subject, and the reverse', async (t) => {
  const clock = testClock();
  const { s } = open(t, { clock: clock.now });
  for (let i = 0; i < 60; i++) {
    await s.rebac.create({ subject: ['group', `g${i}`, 'member'], relation: 'direct_viewer', object: ['file', '/busy'] });
  }
  await s.rebac.create({ subject: carol, relation: 'member', object: ['group', 'g42'] });
  t.equal(s.rebac.check(carol, 'read', ['file', '/busy/x']), true, 'found by point lookups');
  for (let i = 0; i < 20; i++) await s.rebac.create({ subject: ['group', `p${i}`], relation: 'direct_editor', object: ['file', '/busy2'] });
  await s.rebac.create({ subject: carol, relation: 'member', object: ['group', 'p7'] });
  t.equal(s.rebac.check(carol, 'write', ['file', '/busy2/x']), true, 'a plain group grant found by point lookups');
  await s.rebac.create({ subject: ['group', 'g42'], relation: 'direct_owner', object: ['file', '/busy'], expiresAt: new Date(clock.now() + 60_000) });
  t.equal(s.rebac.check(carol, 'delete', ['file', '/busy/x']), true);
  clock.advance(60_001);
  t.equal(s.rebac.check(carol, 'delete', ['file', '/busy/x']), false, 'an expired group grant found by lookup grants nothing');
  t.equal(s.rebac.check(carol, 'read', ['file', '/busy/x']), true, 'the other form still does');
  for (let i = 0; i < 60; i++) await s.rebac.create({ subject: dave, relation: 'member', object: ['group', `h${i}`] });
  await s.rebac.create({ subject: ['group', 'h7'], relation: 'direct_viewer', object: ['file', '/quiet'] });
  t.equal(s.rebac.check(dave, 'read', ['file', '/quiet/y']), true, 'found by scanning the object\'s sets');
  t.equal(s.rebac.check(dave, 'read', ['file', '/busy/x']), false);
});
