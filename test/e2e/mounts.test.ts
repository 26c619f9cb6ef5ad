// Mounts and workspaces over HTTP against the real daemon process (spec §4.5, §4.6): a local
// mount's host directory and svc stay in step both ways, read-only mounts refuse changes, and a
// saved mount comes back after a restart.
import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { startDaemon, bytes, unbytes, tempDir } from '../helpers/daemon.js';

function hostDir(t: Test): string {
  const dir = tempDir('svc-e2e-host-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

async function eventually<T>(probe: () => Promise<T>, ok: (v: T) => boolean, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  let v = await probe();
  while (!ok(v) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    v = await probe();
  }
  return v;
}

t.test('local mount over RPC', async (t) => {
  const d = await startDaemon({}, t);
  const host = hostDir(t);
  writeFileSync(join(host, 'notes.txt'), 'from disk\n');
  t.equal(await d.call('add_mount', { mount_point: '/disk', backend_type: 'local', backend_config: { data_dir: host } }), '/disk');
  t.equal(unbytes(await d.call('read', { path: '/disk/notes.txt' })).toString(), 'from disk\n');

  await d.call('write', { path: '/disk/out.txt', content: bytes('from svc') });
  t.equal(readFileSync(join(host, 'out.txt'), 'utf8'), 'from svc', 'an acknowledged write is a plain file');

  writeFileSync(join(host, 'notes.txt'), 'edited by another program\n');
  const meta = await eventually(() => d.call('get_metadata', { path: '/disk/notes.txt' }), (m) => m?.etag === sha('edited by another program\n'));
  t.equal(meta.etag, sha('edited by another program\n'), 'an outside edit shows up over RPC with the right etag');
  t.equal(meta.version, 2, 'as a new version');

  t.equal((await d.rpc('add_mount', { mount_point: '/ro', backend_type: 'local', backend_config: { data_dir: hostDir(t) }, readonly: true })).error, undefined);
  const refused = await d.rpc('write', { path: '/ro/x.txt', content: bytes('x') });
  t.equal(refused.error?.code, -32004);
  t.match(refused.error?.message, /\/ro\/x\.txt/);
  const unknown = await d.rpc('add_mount', { mount_point: '/b', backend_type: 'ftp', backend_config: {} });
  t.equal(unknown.error?.code, -32602, 'an unknown backend_type is a schema violation');

  t.match(await d.call('save_mount', { mount_point: '/saved', backend_type: 'local', backend_config: { data_dir: host } }), /^[0-9a-f-]{36}$/);
  t.equal(await d.call('has_mount', { mount_point: '/saved' }), false, 'save does not activate');
  t.equal(await d.stop(), 0, 'SIGTERM with active mounts: exit code 0');
  await d.restart();
  t.equal(await d.call('has_mount', { mount_point: '/saved' }), true, 'saved mounts are activated at start');
  t.equal(unbytes(await d.call('read', { path: '/saved/out.txt' })).toString(), 'from svc');
  t.equal(await d.call('has_mount', { mount_point: '/disk' }), false, 'an unsaved mount is gone after a restart');
  const missing = await d.rpc('load_mount', { mount_point: '/nowhere' });
  t.same(missing.error && { code: missing.error.code, message: missing.error.message }, { code: -32000, message: 'Mount not found in database: /nowhere' });
});

t.test('workspace snapshot and restore over RPC', async (t) => {
  const d = await startDaemon({}, t);
  await d.call('write', { path: '/proj/a.txt', content: bytes('a1') });
  t.match(await d.call('register_workspace', { path: '/proj', name: 'P', ttl: 3600 }), { path: '/proj', name: 'P' });
  t.equal((await d.rpc('register_workspace', { path: '/proj' })).error?.code, -32001);
  t.match(await d.call('workspace_snapshot', { workspace_path: '/proj', description: 'one' }), { snapshot_number: 1, file_count: 1, total_size: 2 });
  await d.call('write', { path: '/proj/a.txt', content: bytes('a2') });
  await d.call('write', { path: '/proj/b.txt', content: bytes('b') });
  t.match(await d.call('workspace_snapshot', { workspace_path: '/proj' }), { snapshot_number: 2 });
  t.same(await d.call('workspace_diff', { workspace_path: '/proj', snapshot_1: 1, snapshot_2: 2 }), {
    added: ['/proj/b.txt'], modified: ['/proj/a.txt'], deleted: [], summary: { added_count: 1, modified_count: 1, deleted_count: 0 },
  });
  t.match(await d.call('workspace_restore', { workspace_path: '/proj', snapshot_number: 1 }), {
    restored: true, files_restored: 1, files_deleted: 1, snapshot_number: 1,
  });
  t.equal(unbytes(await d.call('read', { path: '/proj/a.txt' })).toString(), 'a1');
  t.same((await d.call('list_versions', { path: '/proj/a.txt' })).map((v: { version: number }) => v.version), [3, 2, 1]);
  t.same((await d.call('workspace_log', { workspace_path: '/proj' })).map((s: { snapshot_number: number }) => s.snapshot_number), [2, 1]);
  const unregistered = await d.rpc('workspace_snapshot', { workspace_path: '/nope' });
  t.same(unregistered.error && [unregistered.error.code, unregistered.error.message], [-32000, 'Workspace not registered: /nope']);
  t.equal(await d.call('get_workspace_info', { path: '/nope' }), null);
});

t.test('a read-only mount refuses every mutating method with -32004 naming the path', async (t) => {
  const d = await startDaemon({}, t);
  const host = hostDir(t);
  writeFileSync(join(host, 'f.txt'), 'original');
  await d.call('add_mount', { mount_point: '/area/ro', backend_type: 'local', backend_config: { data_dir: host }, readonly: true });
  await d.call('write', { path: '/other/x.txt', content: bytes('x') });
  // history for rollback: the file's version 1 comes from the host directory
  t.equal((await d.call('get_metadata', { path: '/area/ro/f.txt' })).version, 1);
  await d.call('register_workspace', { path: '/area/ro' });
  await d.call('workspace_snapshot', { workspace_path: '/area/ro' });
  await d.call('register_workspace', { path: '/area' });
  await d.call('workspace_snapshot', { workspace_path: '/area' });

  const attempts: [string, Record<string, unknown>, RegExp][] = [
    ['write', { path: '/area/ro/f.txt', content: bytes('changed') }, /\/area\/ro\/f\.txt/],
    ['write', { path: '/area/ro/new.txt', content: bytes('new') }, /\/area\/ro\/new\.txt/],
    ['write', { path: '/area/ro/deep/er/new.txt', content: bytes('new') }, /\/area\/ro\/deep\/er\/new\.txt/],
    ['delete', { path: '/area/ro/f.txt' }, /\/area\/ro\/f\.txt/],
    ['rename', { old_path: '/area/ro/f.txt', new_path: '/area/ro/g.txt' }, /\/area\/ro\/f\.txt/],
    ['rename', { old_path: '/area/ro/f.txt', new_path: '/other/f.txt' }, /\/area\/ro\/f\.txt/],
    ['rename', { old_path: '/other/x.txt', new_path: '/area/ro/x.txt' }, /\/area\/ro\/x\.txt/],
    ['rename', { old_path: '/other/x.txt', new_path: '/area/ro/f.txt', overwrite: true }, /\/area\/ro\/f\.txt/],
    ['rename', { old_path: '/area', new_path: '/moved' }, /\/area\/ro/],
    ['mkdir', { path: '/area/ro/d' }, /\/area\/ro\/d/],
    ['mkdir', { path: '/area/ro/d/e', parents: true }, /\/area\/ro\/d\/e/],
    ['rmdir', { path: '/area/ro', recursive: true }, /\/area\/ro/],
    ['rmdir', { path: '/area', recursive: true }, /\/area\/ro/],
    ['rollback', { path: '/area/ro/f.txt', version: 1 }, /\/area\/ro\/f\.txt/],
    ['set_attributes', { path: '/area/ro/f.txt', mode: 0o600 }, /\/area\/ro\/f\.txt/],
    ['symlink', { path: '/area/ro/link', target: 'f.txt' }, /\/area\/ro\/link/],
    ['workspace_restore', { workspace_path: '/area/ro', snapshot_number: 1 }, /\/area\/ro/],
    ['workspace_restore', { workspace_path: '/area', snapshot_number: 1 }, /\/area\/ro/],
  ];
  for (const [method, params, names] of attempts) {
    const res = await d.rpc(method, params);
    t.equal(res.error?.code, -32004, `${method} ${JSON.stringify(params)} refused`);
    t.match(res.error?.message ?? '', names, `${method}: the message names the path`);
  }
  t.equal(unbytes(await d.call('read', { path: '/area/ro/f.txt' })).toString(), 'original', 'nothing changed in svc');
  t.equal((await d.call('get_metadata', { path: '/area/ro/f.txt' })).version, 1, 'no version was added');
  t.same(await d.call('list', { path: '/area/ro' }), ['/area/ro/f.txt'], 'nothing created');
  t.equal(readFileSync(join(host, 'f.txt'), 'utf8'), 'original', 'nothing changed on disk');
  t.equal(unbytes(await d.call('read', { path: '/other/x.txt' })).toString(), 'x');
  // reads still work, and an outside change still arrives
  writeFileSync(join(host, 'f.txt'), 'changed outside');
  const meta = await eventually(() => d.call('get_metadata', { path: '/area/ro/f.txt' }), (m) => m?.etag === sha('changed outside'));
  t.equal(meta.version, 2);
});

t.test('escapes refused over RPC', async (t) => {
  const d = await startDaemon({}, t);
  const host = hostDir(t);
  const outside = hostDir(t);
  writeFileSync(join(outside, 'secret.txt'), 'secret');
  await d.call('add_mount', { mount_point: '/j', backend_type: 'local', backend_config: { data_dir: host } });
  // a link made by another program after the mount was activated
  symlinkSync(outside, join(host, 'out'));
  symlinkSync(join(outside, 'secret.txt'), join(host, 'secret-link.txt'));
  // Imported as the links they are: their text, never what they point at.
  for (const path of ['/j/secret-link.txt', '/j/out']) await eventually(() => d.call('exists', { path }), (r) => r.exists === true);
  t.equal(unbytes(await d.call('read', { path: '/j/secret-link.txt' })).toString(), join(outside, 'secret.txt'),
    'a link to a file outside is its target\'s path');
  t.same(await d.call('exists', { path: '/j/out/secret.txt' }), { exists: false }, 'a link to a directory outside is not followed');
  const through = await d.rpc('write', { path: '/j/out/evil.txt', content: bytes('x') });
  t.equal(through.error?.code, -32004);
  t.match(through.error?.message, /escapes/);
  t.notOk(existsSync(join(outside, 'evil.txt')), 'nothing written outside');
  const dots = await d.rpc('write', { path: '/j/../etc/x', content: bytes('x') });
  t.equal(dots.error?.code, -32002, '.. segments are malformed paths');
  const mkdirThrough = await d.rpc('mkdir', { path: '/j/out/d', parents: true });
  t.equal(mkdirThrough.error?.code, -32004);
  t.notOk(existsSync(join(outside, 'd')));
});
