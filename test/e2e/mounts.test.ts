// Mounts and workspaces over HTTP against the real daemon process (spec §4.5, §4.6): a local
// mount's host directory and svc stay in step both ways, read-only mounts refuse changes, and a
// saved mount comes back after a restart.
import t from 'tap';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
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
