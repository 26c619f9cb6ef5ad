/**
 * Directory inheritance (a relation on `/a` holds on everything below it), explicit `parent`
 * tuples and their cycle check, tuples following renames, and expiry.
 */
import t from 'tap';
import { open, testClock } from './fixture.js';

const alice = ['user', 'alice'] as const;
const bob = ['user', 'bob'] as const;

t.test('an owner of /a may read, write, delete and share /a/b/c.txt (three levels down) without tuples', async (t) => {
  const { s } = open(t);
  await s.rebac.create({ subject: alice, relation: 'direct_owner', object: ['file', '/a'] });
  for (const perm of ['read', 'write', 'delete', 'share']) {
    t.equal(s.rebac.check(alice, perm, ['file', '/a/b/c.txt']), true, perm);
    t.equal(s.rebac.check(alice, perm, ['file', '/a/b']), true, `${perm} on the middle directory`);
  }
  t.equal(s.rebac.check(alice, 'read', ['file', '/ab/c.txt']), false, '/ab is not below /a');
  t.equal(s.rebac.check(alice, 'read', ['file', '/']), false, 'nor is the root');
  t.equal(s.rebac.check(bob, 'read', ['file', '/a/b/c.txt']), false);
  t.equal(s.rebac.list().length, 1, 'no tuples were created for the descendants');
});

t.test('each inherited relation keeps its strength; grants deeper add to those above', async (t) => {
  const { s } = open(t);
  await s.rebac.create({ subject: bob, relation: 'direct_viewer', object: ['file', '/p'] });
  await s.rebac.create({ subject: bob, relation: 'direct_editor', object: ['file', '/p/drafts'] });
  t.equal(s.rebac.check(bob, 'read', ['file', '/p/x/y/z.md']), true);
  t.equal(s.rebac.check(bob, 'write', ['file', '/p/x/y/z.md']), false, 'a viewer above does not write below');
  t.equal(s.rebac.check(bob, 'write', ['file', '/p/drafts/d1/v2.md']), true);
  t.equal(s.rebac.check(bob, 'delete', ['file', '/p/drafts/d1/v2.md']), false);
  t.equal(s.rebac.check(bob, 'write', ['file', '/p']), false, 'nothing flows upwards');
});

t.test('a grant on / reaches every path', async (t) => {
  const { s } = open(t);
  await s.rebac.create({ subject: alice, relation: 'direct_viewer', object: ['file', '/'] });
  t.equal(s.rebac.check(alice, 'read', ['file', '/x/y/z']), true);
  t.equal(s.rebac.check(alice, 'read', ['file', '/']), true);
  t.equal(s.rebac.check(alice, 'write', ['file', '/x']), false);
});

t.test('explicit parent tuples link objects outside the path hierarchy', async (t) => {
  const { s } = open(t);
  await s.rebac.create({ subject: alice, relation: 'direct_owner', object: ['file', '/shared'] });
  t.equal(s.rebac.check(alice, 'read', ['file', '/inbox/report.pdf']), false);
  await s.rebac.create({ subject: ['file', '/inbox'], relation: 'parent', object: ['file', '/shared'] });
  t.equal(s.rebac.check(alice, 'write', ['file', '/inbox/report.pdf']), true, 'through the explicit parent of /inbox');
  t.equal(s.rebac.check(['file', '/inbox'], 'parent', ['file', '/shared']), true);
  t.equal(s.rebac.check(['file', '/a/b'], 'parent', ['file', '/a']), true, 'implied parent');
  t.equal(s.rebac.check(['file', '/a/b/c'], 'parent', ['file', '/a']), false, 'only the containing directory');
  // an explicit parent on a node whose path parent also holds: both are followed
  await s.rebac.create({ subject: bob, relation: 'direct_viewer', object: ['file', '/'] });
  t.equal(s.rebac.check(bob, 'read', ['file', '/inbox/x']), true);
});

t.test('a parent tuple that would close a loop is refused (-32005)', async (t) => {
  const { s, call } = open(t);
  await t.rejects(call('rebac_create', { subject: ['file', '/a'], relation: 'parent', object: ['file', '/a/b'] }),
    { code: -32005, message: /Cycle detected/ }, 'against the path hierarchy');
  await t.rejects(call('rebac_create', { subject: ['file', '/a'], relation: 'parent', object: ['file', '/a'] }), { code: -32005 }, 'self');
  await call('rebac_create', { subject: ['file', '/x'], relation: 'parent', object: ['file', '/y'] });
  await call('rebac_create', { subject: ['file', '/y'], relation: 'parent', object: ['file', '/z'] });
  await t.rejects(call('rebac_create', { subject: ['file', '/z'], relation: 'parent', object: ['file', '/x/deep'] }),
    { code: -32005 }, 'through explicit tuples and the hierarchy');
  t.equal(s.rebac.list({ relation: 'parent' }).length, 2, 'nothing stored by the refused creates');
});

t.test('a rename moves the tuples on the file or directory and below it, and keeps checks true', async (t) => {
  const { s } = open(t);
  await s.fs.write('/a/b/c.txt', Buffer.from('c'));
  await s.fs.write('/a/b/d/e.txt', Buffer.from('e'));
  await s.rebac.create({ subject: alice, relation: 'direct_owner', object: ['file', '/a/b'] });
  await s.rebac.create({ subject: bob, relation: 'direct_viewer', object: ['file', '/a/b/d/e.txt'] });
  await s.rebac.create({ subject: ['file', '/a/b/d'], relation: 'parent', object: ['file', '/elsewhere'] });
  await s.rebac.create({ subject: bob, relation: 'direct_viewer', object: ['file', '/a/bc'] });
  await s.fs.rename('/a/b', '/z/q');
  t.equal(s.rebac.check(alice, 'write', ['file', '/z/q/c.txt']), true, 'inheritance at the new place, right after the answer');
  t.equal(s.rebac.check(alice, 'write', ['file', '/a/b/c.txt']), false, 'nothing left at the old place');
  t.equal(s.rebac.check(bob, 'read', ['file', '/z/q/d/e.txt']), true);
  t.same(s.rebac.list({ subject: alice }).map((x) => x.object), [['file', '/z/q']]);
  t.same(s.rebac.list({ relation: 'parent' }).map((x) => x.subject), [['file', '/z/q/d']], 'tuples with the path as subject move too');
  t.same(s.rebac.list({ object: ['file', '/a/bc'] }).length, 1, 'a sibling with a common prefix stays');
  // a file rename
  await s.fs.rename('/z/q/d/e.txt', '/z/e2.txt');
  t.equal(s.rebac.check(bob, 'read', ['file', '/z/e2.txt']), true);
  t.equal(s.rebac.check(bob, 'read', ['file', '/z/q/d/e.txt']), false);
});

t.test('a renamed tuple that duplicates one at the destination keeps the destination\'s', async (t) => {
  const { s } = open(t);
  await s.fs.write('/old.txt', Buffer.from('x'));
  const moving = await s.rebac.create({ subject: bob, relation: 'direct_viewer', object: ['file', '/old.txt'] });
  const staying = await s.rebac.create({ subject: bob, relation: 'direct_viewer', object: ['file', '/new.txt'] });
  await s.fs.rename('/old.txt', '/new.txt');
  const left = s.rebac.list({ subject: bob });
  t.same(left.map((x) => x.tuple_id), [staying]);
  t.equal(s.rebac.get(moving), undefined);
  t.same(s.store.table('rebac_grants').get(`default\u001ffile\u001f/old.txt\u001fuser\u001fbob\u001f`), undefined, 'no index entry left behind');
});

t.test('renames move tuples in every tenant', async (t) => {
  const { s } = open(t);
  await s.fs.write('/d/f', Buffer.from('x'));
  await s.rebac.create({ subject: alice, relation: 'direct_owner', object: ['file', '/d'], tenantId: 't1' });
  await s.rebac.create({ subject: alice, relation: 'direct_owner', object: ['file', '/d'], tenantId: 't2' });
  await s.fs.rename('/d', '/e');
  t.equal(s.rebac.check(alice, 'read', ['file', '/e/f'], 't1'), true);
  t.equal(s.rebac.check(alice, 'read', ['file', '/e/f'], 't2'), true);
  t.equal(s.rebac.check(alice, 'read', ['file', '/e/f']), false, 'and still not in the default tenant');
});

t.test('an expired tuple grants nothing and is not listed', async (t) => {
  const clock = testClock();
  const { s, call } = open(t, { clock: clock.now });
  const expires_at = new Date(clock.now() + 60_000).toISOString();
  const id = await call('rebac_create', { subject: alice, relation: 'direct_owner', object: ['file', '/tmp'], expires_at }) as string;
  await s.rebac.create({ subject: alice, relation: 'member', object: ['group', 'g'], expiresAt: new Date(clock.now() + 60_000) });
  await s.rebac.create({ subject: ['group', 'g', 'member'], relation: 'direct_viewer', object: ['file', '/gdoc'] });
  t.equal(s.rebac.check(alice, 'write', ['file', '/tmp/x']), true);
  t.equal(s.rebac.check(alice, 'read', ['file', '/gdoc']), true);
  t.same((await call('rebac_list_tuples', {}) as unknown[]).length, 3);
  t.match(s.rebac.get(id), { expires_at: new Date(expires_at) });
  clock.advance(60_001);
  t.equal(s.rebac.check(alice, 'write', ['file', '/tmp/x']), false, 'expired direct grant');
  t.equal(s.rebac.check(alice, 'read', ['file', '/gdoc']), false, 'expired membership');
  t.same(await call('rebac_explain', { subject: alice, permission: 'read', object: ['file', '/gdoc'] }), { allowed: false, path: [] });
  t.same(await call('rebac_expand', { permission: 'read', object: ['file', '/tmp'] }), { subjects: [] });
  t.same((await call('rebac_list_tuples', {}) as unknown[]).length, 1, 'only the group grant is listed');
  t.equal(await call('rebac_delete', { tuple_id: id }), false, 'deleting an expired tuple reports nothing there');
  const again = await s.rebac.create({ subject: alice, relation: 'direct_owner', object: ['file', '/tmp'] });
  t.not(again, id, 'an expired tuple is replaced by a new one');
  t.equal(s.rebac.check(alice, 'write', ['file', '/tmp/x']), true);
  await t.rejects(call('rebac_create', { subject: bob, relation: 'direct_owner', object: ['file', '/x'], expires_at: '2000-01-01T00:00:00Z' }),
    { code: -32005, message: /in the past/ });
  t.type(await call('rebac_create', { subject: bob, relation: 'direct_owner', object: ['file', '/x'], expires_at: null }), 'string');
});

t.test('deep paths: 400 levels are checked without exhausting the stack', async (t) => {
  const { s } = open(t);
  const deep = '/' + Array.from({ length: 400 }, (_, i) => `d${i}`).join('/');
  await s.rebac.create({ subject: alice, relation: 'direct_viewer', object: ['file', '/d0'] });
  t.equal(s.rebac.check(alice, 'read', ['file', deep]), true);
  t.equal(s.rebac.check(bob, 'read', ['file', deep]), false);
  t.equal(s.rebac.explain(alice, 'read', ['file', deep]).path.length, 400);
});
