// Permission enforcement (issue 3 §5, spec §5.3): an authorization matrix over real HTTP against
// an in-process daemon in static key mode. Every denial is asserted by its code (-32004) and every
// filter by what is missing, so each assertion fails if enforcement stops working.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestClock, bearer, startAuthDaemon, tempDir, type AuthDaemon } from '../auth/harness.js';
import { bytes } from '../helpers/daemon.js';

const KEYS = {
  alice: 'sk-enf-alice-0123456789abcdef0001',
  bob: 'sk-enf-bob-0123456789abcdef000002',
  carol: 'sk-enf-carol-0123456789abcdef0003',
  dave: 'sk-enf-dave-0123456789abcdef00004',
  eve: 'sk-enf-eve-0123456789abcdef000005',
  root: 'sk-enf-root-0123456789abcdef00006',
} as const;
const A = bearer(KEYS.alice);
const B = bearer(KEYS.bob);
const CAROL = bearer(KEYS.carol);
const DAVE = bearer(KEYS.dave);
const EVE = bearer(KEYS.eve); // tenant acme
const ROOT = bearer(KEYS.root);

const text = (v: { data: string }) => Buffer.from(v.data, 'base64').toString();

function authFile(t: { teardown(fn: () => unknown): void }): string {
  const file = join(tempDir(t, 'svc-enf-cfg-'), 'auth.json');
  writeFileSync(file, JSON.stringify({
    api_keys: {
      [KEYS.alice]: { user_id: 'alice' },
      [KEYS.bob]: { user_id: 'bob' },
      [KEYS.carol]: { user_id: 'carol' },
      [KEYS.dave]: { user_id: 'dave' },
      [KEYS.eve]: { user_id: 'eve', tenant_id: 'acme' },
      [KEYS.root]: { user_id: 'root', is_admin: true },
    },
  }));
  return file;
}

/** The error code of a call (undefined when it succeeded). */
async function code(d: AuthDaemon, method: string, params: Record<string, unknown>, headers: Record<string, string>): Promise<number | undefined> {
  return (await d.rpc(method, params, headers)).error?.code;
}

/** Homes: the admin makes /home/<u> and gives it to <u> (as an admin would provision users). */
async function provision(d: AuthDaemon, users: string[], tenant = 'default'): Promise<void> {
  for (const u of users) {
    await d.call('mkdir', { path: `/home/${u}`, parents: true, exist_ok: true }, ROOT);
    await d.call('rebac_create', { subject: ['user', u], relation: 'direct_owner', object: ['file', `/home/${u}`], tenant_id: tenant }, ROOT);
  }
}

t.test('enforcement on (the default with auth)', async (t) => {
  const clock = new TestClock();
  const d = await startAuthDaemon(t, { authType: 'static', authConfig: authFile(t) }, undefined, { clock });
  await provision(d, ['alice', 'bob', 'carol', 'dave']);
  await provision(d, ['eve'], 'acme');
  await d.call('write', { path: '/home/bob/secret.txt', content: bytes('bob secret\n') }, B);
  await d.call('write', { path: '/home/bob/notes/n1.txt', content: bytes('bob note\n') }, B);
  await d.call('write', { path: '/home/alice/mine.txt', content: bytes('alice secret\n') }, A);

  t.test('whoami reports the resolved identity', async (t) => {
    t.same((await d.whoami(A)).body, { authenticated: true, subject_type: 'user', subject_id: 'alice', tenant_id: 'default', is_admin: false });
    t.same((await d.whoami(EVE)).body, { authenticated: true, subject_type: 'user', subject_id: 'eve', tenant_id: 'acme', is_admin: false });
  });

  t.test('A on B\'s files: every operation refused', async (t) => {
    const f = '/home/bob/secret.txt';
    t.equal(await code(d, 'read', { path: f }, A), -32004, 'read');
    t.equal(await code(d, 'get_metadata', { path: f }, A), -32004, 'get_metadata');
    t.equal(await code(d, 'is_directory', { path: '/home/bob/notes' }, A), -32004, 'is_directory');
    t.equal(await code(d, 'list_versions', { path: f }, A), -32004, 'list_versions');
    t.equal(await code(d, 'get_version', { path: f, version: 1 }, A), -32004, 'get_version');
    t.equal(await code(d, 'diff_versions', { path: f, v1: 1, v2: 1 }, A), -32004, 'diff_versions');
    t.equal(await code(d, 'write', { path: f, content: bytes('pwned') }, A), -32004, 'overwrite');
    t.equal(await code(d, 'write', { path: '/home/bob/new.txt', content: bytes('x') }, A), -32004, 'create in B\'s directory');
    t.equal(await code(d, 'rollback', { path: f, version: 1 }, A), -32004, 'rollback');
    t.equal(await code(d, 'delete', { path: f }, A), -32004, 'delete');
    t.equal(await code(d, 'rename', { old_path: f, new_path: '/home/alice/stolen.txt' }, A), -32004, 'rename out of B\'s home');
    t.equal(await code(d, 'rename', { old_path: '/home/alice/mine.txt', new_path: '/home/bob/gift.txt' }, A), -32004, 'rename into B\'s home');
    t.equal(await code(d, 'mkdir', { path: '/home/bob/sub' }, A), -32004, 'mkdir');
    t.equal(await code(d, 'rmdir', { path: '/home/bob/notes', recursive: true }, A), -32004, 'rmdir');
    t.equal(await code(d, 'read_range', { path: f, offset: 0, length: 4 }, A), -32004, 'read_range');
    t.equal(await code(d, 'stat', { path: f }, A), -32004, 'stat');
    t.equal(await code(d, 'set_attributes', { path: f, mode: 0o777 }, A), -32004, 'set_attributes');
    t.equal(await code(d, 'mkdir', { path: '/top' }, A), -32004, 'mkdir at the root (nobody granted /)');
    t.equal(await code(d, 'rebac_create', { subject: ['user', 'alice'], relation: 'direct_viewer', object: ['file', '/home/bob'] }, A), -32004,
      'granting herself B\'s directory');
    t.equal(await code(d, 'rebac_create', { subject: ['file', '/home/bob'], relation: 'parent', object: ['file', '/home/alice'] }, A), -32004,
      'adopting B\'s directory under her own (a parent tuple)');
    t.same(await d.call('exists', { path: f }, A), { exists: false }, 'exists: false, not an error');
    t.same(await d.call('exists', { path: '/home/bob' }, A), { exists: false });
    // Nothing changed.
    t.equal(text(await d.call('read', { path: f }, B)), 'bob secret\n');
    t.same((await d.call('list_versions', { path: f }, B)).length, 1);
  });

  t.test('list, glob, grep show only what A may read', async (t) => {
    const all = await d.call('list', { path: '/' }, A);
    t.ok(all.includes('/home/alice/mine.txt'), 'own file listed');
    t.ok(all.includes('/home/') && all.includes('/home/alice/'), 'ancestors of readable entries listed');
    t.notOk(all.some((p: string) => p.startsWith('/home/bob')), 'nothing of bob\'s');
    t.same(await d.call('list', { path: '/home/bob' }, A), [], 'listing B\'s home: empty');
    t.same(await d.call('list', { path: '/home', recursive: false }, A), ['/home/alice/'], 'non-recursive: only directories with readable content');
    const details = await d.call('list', { path: '/home', details: true }, A);
    t.notOk(details.some((e: { path: string }) => e.path.startsWith('/home/bob')), 'details too');
    t.same(await d.call('glob', { pattern: '**/*.txt' }, A), ['/home/alice/mine.txt']);
    t.same(await d.call('glob', { pattern: 'home/*' }, A), ['/home/alice/'], 'directories of others are not matched');
    t.ok((await d.call('glob', { pattern: 'home/*' }, ROOT)).includes('/home/bob/'), '(they exist)');
    const hits = await d.call('grep', { pattern: 'secret' }, A);
    t.same(hits.map((h: { file: string }) => h.file), ['/home/alice/mine.txt']);
    const readdir = await d.call('readdir', { path: '/home' }, A);
    t.same(readdir.map((e: { path: string }) => e.path), ['/home/alice']);
    // B sees its own.
    t.same((await d.call('grep', { pattern: 'secret' }, B)).map((h: { file: string }) => h.file), ['/home/bob/secret.txt']);
    t.ok((await d.call('list', { path: '/' }, B)).includes('/home/bob/notes/n1.txt'));
  });

  t.test('A\'s own files: everything allowed; creators become owners', async (t) => {
    const r = await d.call('write', { path: '/home/alice/w/deep/x.txt', content: bytes('v1') }, A);
    t.equal(r.version, 1);
    await d.call('write', { path: '/home/alice/w/deep/x.txt', content: bytes('v2') }, A);
    t.equal(text(await d.call('read', { path: '/home/alice/w/deep/x.txt' }, A)), 'v2');
    t.equal((await d.call('list_versions', { path: '/home/alice/w/deep/x.txt' }, A)).length, 2);
    await d.call('rollback', { path: '/home/alice/w/deep/x.txt', version: 1 }, A);
    await d.call('rename', { old_path: '/home/alice/w/deep/x.txt', new_path: '/home/alice/y.txt' }, A);
    t.same(await d.call('exists', { path: '/home/alice/y.txt' }, A), { exists: true });
    await d.call('mkdir', { path: '/home/alice/d1/d2', parents: true }, A);
    await d.call('rmdir', { path: '/home/alice/d1', recursive: true }, A);
    await d.call('delete', { path: '/home/alice/y.txt' }, A);
    t.same(await d.call('exists', { path: '/home/alice/y.txt' }, A), { exists: false });
    // The creator of a file is its direct_owner (a tuple in its tenant).
    const owner = (p: string, u: string) => d.call('rebac_check', { subject: ['user', u], permission: 'direct_owner', object: ['file', p] }, ROOT);
    t.equal(await owner('/home/alice/mine.txt', 'alice'), true, 'file creator owns it');
    await d.call('mkdir', { path: '/home/alice/made' }, A);
    t.equal(await owner('/home/alice/made', 'alice'), true, 'directory creator owns it');
    t.equal(await owner('/home/bob/secret.txt', 'alice'), false);
  });

  t.test('a creator owns what it created even where it only edits', async (t) => {
    // bob lets carol edit /home/bob/shared; carol's new file there is carol's: she can delete it, not bob's files.
    await d.call('write', { path: '/home/bob/shared/b.txt', content: bytes('b') }, B);
    await d.call('rebac_create', { subject: ['user', 'carol'], relation: 'direct_editor', object: ['file', '/home/bob/shared'] }, B);
    await d.call('write', { path: '/home/bob/shared/c.txt', content: bytes('c') }, CAROL);
    await d.call('write', { path: '/home/bob/shared/b.txt', content: bytes('b2') }, CAROL);
    t.equal(await code(d, 'delete', { path: '/home/bob/shared/b.txt' }, CAROL), -32004, 'delete needs owner: an editor may not');
    t.equal(await code(d, 'delete', { path: '/home/bob/shared/c.txt' }, CAROL), undefined, 'but may delete what it created');
    t.equal(await code(d, 'read', { path: '/home/bob/secret.txt' }, CAROL), -32004, 'the grant is on shared/ only');
  });

  t.test('a grant to a group reaches its members, not a non-member; nested directory grant', async (t) => {
    await d.call('write', { path: '/proj/eng/spec/design.md', content: bytes('# design\nplan\n') }, ROOT);
    await d.call('write', { path: '/proj/other.md', content: bytes('plan\n') }, ROOT);
    await d.call('rebac_create', { subject: ['user', 'carol'], relation: 'member', object: ['group', 'eng'] }, ROOT);
    await d.call('rebac_create', { subject: ['group', 'eng', 'member'], relation: 'direct_viewer', object: ['file', '/proj/eng'] }, ROOT);
    t.equal(text(await d.call('read', { path: '/proj/eng/spec/design.md' }, CAROL)), '# design\nplan\n', 'member reads two levels below the grant');
    t.equal(await code(d, 'read', { path: '/proj/eng/spec/design.md' }, DAVE), -32004, 'non-member refused');
    t.equal(await code(d, 'write', { path: '/proj/eng/spec/design.md', content: bytes('x') }, CAROL), -32004, 'viewer may not write');
    t.equal(await code(d, 'read', { path: '/proj/other.md' }, CAROL), -32004, 'sibling of the granted directory');
    t.same((await d.call('grep', { pattern: 'plan', path: '/proj' }, CAROL)).map((h: { file: string }) => h.file), ['/proj/eng/spec/design.md']);
    t.same(await d.call('grep', { pattern: 'plan', path: '/proj' }, DAVE), []);
    t.same(await d.call('list', { path: '/proj' }, CAROL), ['/proj/eng/', '/proj/eng/spec/', '/proj/eng/spec/design.md']);
    t.same(await d.call('list', { path: '/proj' }, DAVE), []);
    t.same(await d.call('is_directory', { path: '/proj' }, CAROL), { is_directory: true }, 'a directory with readable content');
    // A nested editor grant for dave, below the directory.
    await d.call('rebac_create', { subject: ['user', 'dave'], relation: 'direct_editor', object: ['file', '/proj/eng/spec'] }, ROOT);
    t.equal(await code(d, 'write', { path: '/proj/eng/spec/dave.md', content: bytes('d') }, DAVE), undefined, 'editor of the nested dir creates');
    t.equal(await code(d, 'write', { path: '/proj/eng/dave.md', content: bytes('d') }, DAVE), -32004, 'but not one level up');
  });

  t.test('an expired tuple grants nothing', async (t) => {
    await d.call('write', { path: '/tmp-share/f.txt', content: bytes('soon gone') }, ROOT);
    const expires = new Date(clock.now() + 60_000).toISOString();
    await d.call('rebac_create', { subject: ['user', 'dave'], relation: 'direct_viewer', object: ['file', '/tmp-share'], expires_at: expires }, ROOT);
    t.equal(await code(d, 'read', { path: '/tmp-share/f.txt' }, DAVE), undefined, 'granted before expiry');
    clock.advance(60_001); // the daemon's clock: no sleeping
    t.equal(await code(d, 'read', { path: '/tmp-share/f.txt' }, DAVE), -32004, 'refused after expiry');
    t.same(await d.call('exists', { path: '/tmp-share/f.txt' }, DAVE), { exists: false });
  });

  t.test('tenants never see each other\'s grants', async (t) => {
    // A grant to eve in the default tenant means nothing to eve, who acts in acme.
    await d.call('write', { path: '/pub/doc.txt', content: bytes('pub') }, ROOT);
    await d.call('rebac_create', { subject: ['user', 'eve'], relation: 'direct_viewer', object: ['file', '/pub'] }, ROOT);
    t.equal(await code(d, 'read', { path: '/pub/doc.txt' }, EVE), -32004, 'grant in another tenant');
    t.equal(await code(d, 'read', { path: '/home/bob/secret.txt' }, EVE), -32004);
    // eve's own home (granted in acme) works; her files are hers in acme only.
    await d.call('write', { path: '/home/eve/e.txt', content: bytes('eve') }, EVE);
    t.equal(text(await d.call('read', { path: '/home/eve/e.txt' }, EVE)), 'eve');
    t.equal(await d.call('rebac_check', { subject: ['user', 'eve'], permission: 'read', object: ['file', '/home/eve/e.txt'] }, A), false,
      'the default tenant does not see acme\'s owner tuple');
    t.equal(await d.call('rebac_check', { subject: ['user', 'eve'], permission: 'read', object: ['file', '/home/eve/e.txt'], tenant_id: 'acme' }, ROOT), true);
    t.equal(await code(d, 'rebac_create', { subject: ['user', 'alice'], relation: 'direct_owner', object: ['file', '/home/eve'], tenant_id: 'acme' }, A), -32004,
      'a user may not write tuples into another tenant');
    t.equal(await code(d, 'read', { path: '/home/eve/e.txt' }, { ...A, 'X-Svc-Tenant-ID': 'acme' }), -32004, 'nor act in it');
    const tuples: { tenant_id: string; subject: string[]; relation: string }[] = await d.call('rebac_list_tuples', {}, A);
    t.ok(tuples.length > 0 && tuples.every((x) => x.tenant_id === 'default'), 'alice lists her tenant\'s tuples only');
    t.notOk(tuples.some((x) => x.subject[1] === 'eve' && x.relation === 'direct_owner'), 'not eve\'s owner tuples (acme)');
    t.ok((await d.call('rebac_list_tuples', { subject: ['user', 'eve'] }, { ...ROOT, 'X-Svc-Tenant-ID': 'acme' })).length >= 2, '(they exist in acme)');
    t.same(await d.call('glob', { pattern: 'home/eve/**' }, A), [], 'alice does not see eve\'s files');
  });

  t.test('identity header: a user may not act as another user', async (t) => {
    t.equal(await code(d, 'read', { path: '/home/bob/secret.txt' }, { ...A, 'X-Svc-Subject': 'user:bob' }), -32004);
  });

  t.test('admins act for anyone', async (t) => {
    t.equal(text(await d.call('read', { path: '/home/bob/secret.txt' }, ROOT)), 'bob secret\n');
    t.ok((await d.call('list', { path: '/' }, ROOT)).includes('/home/bob/secret.txt'));
    t.equal(text(await d.call('read', { path: '/home/bob/secret.txt' }, { ...ROOT, 'X-Svc-Subject': 'user:alice' })), 'bob secret\n',
      'also while acting as a user');
    // An admin creating as alice makes alice the owner.
    await d.call('write', { path: '/given/to-alice.txt', content: bytes('g') }, { ...ROOT, 'X-Svc-Subject': 'user:alice' });
    t.equal(text(await d.call('read', { path: '/given/to-alice.txt' }, A)), 'g');
    t.equal(await code(d, 'delete', { path: '/home/alice/mine.txt' }, { ...ROOT, 'X-Svc-Subject': 'user:bob' }), undefined);
  });

  t.test('workspaces: register grants ownership; snapshot/restore need read and write', async (t) => {
    await d.call('write', { path: '/home/alice/ws/a.txt', content: bytes('a1') }, A);
    await d.call('register_workspace', { path: '/home/alice/ws' }, A);
    t.equal(await d.call('rebac_check', { subject: ['user', 'alice'], permission: 'direct_owner', object: ['file', '/home/alice/ws'] }, ROOT), true);
    t.equal(await code(d, 'register_workspace', { path: '/home/bob/notes' }, A), -32004, 'registering B\'s directory');
    t.equal(await code(d, 'workspace_snapshot', { workspace_path: '/home/alice/ws' }, B), -32004, 'B snapshots A\'s workspace');
    const snap = await d.call('workspace_snapshot', { workspace_path: '/home/alice/ws' }, A);
    await d.call('write', { path: '/home/alice/ws/a.txt', content: bytes('a2') }, A);
    t.equal(await code(d, 'workspace_restore', { workspace_path: '/home/alice/ws', snapshot_number: snap.snapshot_number }, B), -32004);
    t.equal(await code(d, 'workspace_log', { workspace_path: '/home/alice/ws' }, B), -32004);
    t.equal(await code(d, 'get_workspace_info', { path: '/home/alice/ws' }, B), -32004);
    t.equal(await code(d, 'unregister_workspace', { path: '/home/alice/ws' }, B), -32004);
    t.same(await d.call('list_workspaces', {}, B), [], 'B lists none of A\'s');
    t.equal((await d.call('list_workspaces', {}, A)).length, 1);
    // Viewer on the workspace: read but not write → restore refused.
    await d.call('rebac_create', { subject: ['user', 'bob'], relation: 'direct_viewer', object: ['file', '/home/alice/ws'] }, A);
    t.equal(await code(d, 'workspace_restore', { workspace_path: '/home/alice/ws', snapshot_number: snap.snapshot_number }, B), -32004, 'read only');
    t.equal(await code(d, 'workspace_log', { workspace_path: '/home/alice/ws' }, B), undefined, 'log needs read only');
    await d.call('workspace_restore', { workspace_path: '/home/alice/ws', snapshot_number: snap.snapshot_number }, A);
    t.equal(text(await d.call('read', { path: '/home/alice/ws/a.txt' }, A)), 'a1');
  });

  t.test('mounts: admin only', async (t) => {
    const dir = tempDir(t, 'svc-enf-mnt-');
    const spec = { mount_point: '/home/alice/mnt', backend_type: 'local', backend_config: { root_path: dir } };
    t.equal(await code(d, 'add_mount', spec, A), -32004, 'even on the user\'s own directory');
    t.equal(await code(d, 'save_mount', spec, A), -32004);
    t.equal(await code(d, 'load_mount', { mount_point: '/home/alice/mnt' }, A), -32004);
    t.equal(await code(d, 'remove_mount', { mount_point: '/home/alice/mnt' }, A), -32004);
    t.equal(await code(d, 'delete_saved_mount', { mount_point: '/home/alice/mnt' }, A), -32004);
    // A saved configuration's credentials are for admins only.
    await d.call('save_mount', {
      mount_point: '/drive', backend_type: 'cloud_drive', backend_config: { access_token: 'at-secret-1', refresh_token: 'rt-secret-2' }, tenant_id: 'default',
    }, ROOT);
    const seen = JSON.stringify(await d.call('list_saved_mounts', {}, A));
    t.ok(seen.includes('/drive') && seen.includes('<redacted>'), 'listed for the user, credentials redacted');
    t.notOk(seen.includes('at-secret-1') || seen.includes('rt-secret-2'), 'no token reaches a non-admin');
    t.ok(JSON.stringify(await d.call('list_saved_mounts', {}, ROOT)).includes('at-secret-1'), 'the admin sees them');
  });
});

t.test('enforcement off: every authenticated caller may touch every file', async (t) => {
  const d = await startAuthDaemon(t, { authType: 'static', authConfig: authFile(t), enforcePermissions: false });
  await d.call('write', { path: '/home/bob/secret.txt', content: bytes('bob secret\n') }, B);
  t.equal(text(await d.call('read', { path: '/home/bob/secret.txt' }, A)), 'bob secret\n');
  t.same(await d.call('exists', { path: '/home/bob/secret.txt' }, A), { exists: true });
  t.ok((await d.call('list', { path: '/' }, A)).includes('/home/bob/secret.txt'));
  t.same((await d.call('grep', { pattern: 'secret' }, EVE)).map((h: { file: string }) => h.file), ['/home/bob/secret.txt']);
  await d.call('write', { path: '/home/bob/secret.txt', content: bytes('changed') }, A);
  await d.call('rename', { old_path: '/home/bob/secret.txt', new_path: '/x.txt' }, A);
  await d.call('mkdir', { path: '/top' }, A);
  await d.call('delete', { path: '/x.txt' }, A);
  t.same(await d.call('exists', { path: '/x.txt' }, B), { exists: false });
  t.same(await d.call('rebac_list_tuples', {}, ROOT), [], 'no owner tuples are written without enforcement');
});
