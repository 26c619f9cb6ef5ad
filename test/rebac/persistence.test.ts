/**
 * Restart persistence: tuples (direct, group, expiring, explicit parent), their indexes, and
 * custom namespaces survive closing the store and opening the same data directory again.
 */
import t from 'tap';
import { open } from './fixture.js';

t.test('tuples and custom namespaces survive a restart', async (t) => {
  const fx = open(t);
  const { rebac, namespaces, fs } = fx.s;
  await fs.write('/proj/a/b.txt', Buffer.from('x'));
  const owner = await rebac.create({ subject: ['user', 'alice'], relation: 'direct_owner', object: ['file', '/proj'] });
  await rebac.create({ subject: ['group', 'eng', 'member'], relation: 'direct_editor', object: ['file', '/proj/a'] });
  await rebac.create({ subject: ['user', 'bob'], relation: 'member', object: ['group', 'eng'] });
  await rebac.create({ subject: ['file', '/inbox'], relation: 'parent', object: ['file', '/proj'] });
  await rebac.create({ subject: ['user', 'carol'], relation: 'direct_viewer', object: ['file', '/tmp'], expiresAt: new Date(Date.now() + 3_600_000) });
  await rebac.create({ subject: ['user', 'dave'], relation: 'direct_viewer', object: ['file', '/x'], tenantId: 'acme' });
  await namespaces.create('doc', { relations: { author: {} }, permissions: { read: ['author'] } });
  await rebac.create({ subject: ['user', 'alice'], relation: 'author', object: ['doc', 'd1'] });
  await namespaces.create('file', {
    relations: { parent: { path_parent: true }, direct_owner: {}, direct_editor: {}, direct_viewer: {},
      parent_owner: { tupleToUserset: { tupleset: 'parent', computedUserset: 'owner' } },
      owner: { union: ['direct_owner', 'parent_owner'] }, editor: { union: ['direct_editor', 'owner'] }, viewer: { union: ['direct_viewer', 'editor'] } },
    permissions: { read: ['viewer'], write: ['editor'], delete: ['owner'], share: ['owner'] },
  });
  const before = { tuples: rebac.list(), acme: rebac.list({}, 'acme'), namespaces: namespaces.list() };

  await fx.reopen();
  const after = fx.s;
  t.same(after.rebac.list(), before.tuples, 'the same tuples, ids, times and expiry');
  t.same(after.rebac.list({}, 'acme'), before.acme);
  t.same(after.namespaces.list(), before.namespaces, 'the same namespaces');
  t.equal(after.rebac.check(['user', 'alice'], 'delete', ['file', '/proj/a/b.txt']), true, 'inherited ownership');
  t.equal(after.rebac.check(['user', 'bob'], 'write', ['file', '/proj/a/b.txt']), false, 'the custom file namespace no longer inherits editor');
  t.equal(after.rebac.check(['user', 'bob'], 'write', ['file', '/proj/a']), true, 'group grant');
  t.equal(after.rebac.check(['user', 'alice'], 'write', ['file', '/inbox/mail']), true, 'explicit parent');
  t.equal(after.rebac.check(['user', 'carol'], 'read', ['file', '/tmp']), true, 'not yet expired');
  t.equal(after.rebac.check(['user', 'dave'], 'read', ['file', '/x'], 'acme'), true);
  t.equal(after.rebac.check(['user', 'alice'], 'read', ['doc', 'd1']), true, 'a custom namespace still governs');
  t.equal(await after.rebac.create({ subject: ['user', 'alice'], relation: 'direct_owner', object: ['file', '/proj'] }), owner, 'idempotent across restarts');
  t.equal(await after.namespaces.delete('file'), true);
  t.equal(after.rebac.check(['user', 'bob'], 'write', ['file', '/proj/a/b.txt']), true, 'the built-in is back');
  await after.fs.rename('/proj', '/work');
  await fx.reopen();
  t.equal(fx.s.rebac.check(['user', 'alice'], 'delete', ['file', '/work/a/b.txt']), true, 'a rename before the restart is kept');
  t.equal(fx.s.rebac.check(['user', 'alice'], 'delete', ['file', '/proj/a/b.txt']), false);
});
