/**
 * @module test/fuse/renamed-elsewhere
 * Another face (RPC) renaming or deleting what a mount is using: a remote mount's open files follow
 * such a change even moments after the mount itself changed the path, and a shell whose working
 * directory is renamed elsewhere still knows where it is (both mounts).
 */
import t from 'tap';
import { mkdir, open, readdir, rename } from 'node:fs/promises';
import { fuseSkipReason, sh, shOk, startMountedDaemon, startRemoteMount } from './harness.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readStored(d: { rpc: (m: string, p: Record<string, unknown>) => Promise<any> }, path: string): Promise<string | undefined> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const st = await d.rpc('stat', { path });
  if (!st) return undefined;
  const r = await d.rpc('read', { path });
  return Buffer.from(r.data, 'base64').toString();
}

t.test('another face\'s rename or delete moments after the remote mount wrote the path is followed by its open files', { skip }, async (t) => {
  // Before the fix: a remote mount takes every change event of a path as its own for 2 s after its
  // own change to that path (OwnChanges, OWN_WINDOW_MS in src/transports/fuse/kernel-cache.ts),
  // whatever the change: a rename or delete by another face of a file the mount wrote (or a
  // directory it made) a moment before is then not followed by the open files (#onChange in
  // src/transports/fuse/operations.ts). Their next write fails with ENOENT, their close stores the
  // bytes at the old name (which comes back) or brings a deleted file back. docs/fuse.md's limit
  // is only the moment between the rename's commit and its event reaching the mount; here the
  // close comes a second after the event.
  const d = await startMountedDaemon(t);
  const r = await startRemoteMount(t, d.url);
  const m = r.mnt;

  await t.test('a file renamed by RPC while open for writing', async (t) => {
    const fh0 = await open(`${m}/f.txt`, 'w');
    await fh0.write('orig\n');
    await fh0.close();
    await sleep(300);
    const fh = await open(`${m}/f.txt`, 'r+');
    await d.rpc('rename', { old_path: '/f.txt', new_path: '/g.txt' });
    await sleep(1000);
    let err = '';
    await fh.write('more\n', 4).catch((e: NodeJS.ErrnoException) => (err = e.code ?? String(e)));
    await fh.close().catch((e: NodeJS.ErrnoException) => (err ||= `close ${e.code}`));
    t.equal(err, '', 'the write through the open descriptor works (was ENOENT)');
    t.equal(await readStored(d, '/g.txt'), 'origmore\n', 'the renamed file holds the write');
    t.equal(await readStored(d, '/f.txt'), undefined, 'the old name does not come back');
  });

  await t.test('a directory the mount made, renamed by RPC while a file in it is open', async (t) => {
    await mkdir(`${m}/dir-a`);
    const w = await open(`${m}/dir-a/f.txt`, 'w');
    await w.write('NEW\n');
    await d.rpc('rename', { old_path: '/dir-a', new_path: '/dir-b' });
    await sleep(1000);
    await w.write('more\n');
    await w.close();
    await sleep(200);
    t.equal(await d.rpc('stat', { path: '/dir-a' }), null, 'the old directory does not come back');
    t.equal(await readStored(d, '/dir-b/f.txt'), 'NEW\nmore\n', 'the file in the renamed directory holds everything written');
    t.same(await readdir(m).then((l) => l.filter((n) => n.startsWith('dir-'))), ['dir-b'], 'the mount shows the same');
  });

  await t.test('a file deleted by RPC while open', async (t) => {
    const fh0 = await open(`${m}/del.txt`, 'w');
    await fh0.write('orig\n');
    await fh0.close();
    await sleep(300);
    const fh = await open(`${m}/del.txt`, 'r+');
    await fh.write('NEW\n', 0);
    await d.rpc('delete', { path: '/del.txt' });
    await sleep(1000);
    await fh.write('more\n').catch(() => undefined);
    await fh.close().catch(() => undefined);
    await sleep(200);
    t.equal(await readStored(d, '/del.txt'), undefined, 'the acknowledged delete is not undone by the close');
  });

  await t.test('the mount\'s own rename is still its own: a file made at the old name right after is left alone', async (t) => {
    const a = await open(`${m}/own-a.txt`, 'w');
    await a.write('first\n');
    await a.close();
    await rename(`${m}/own-a.txt`, `${m}/own-b.txt`);
    const again = await open(`${m}/own-a.txt`, 'w');
    await again.write('second\n');
    await sleep(1000); // the rename's event has come meanwhile
    await again.write('more\n');
    await again.close();
    t.equal(await readStored(d, '/own-a.txt'), 'second\nmore\n', 'the new file keeps its name');
    t.equal(await readStored(d, '/own-b.txt'), 'first\n', 'the renamed one is as it was');
  });
});

t.test('a shell whose working directory another face renames still knows where it is', { skip }, async (t) => {
  // Before the fix: on a local disk, a directory renamed by another program stays the working directory
  // of a shell in it, and getcwd(2) (`pwd -P`, git, make, every tool that resolves a relative
  // path to an absolute one) answers its new path. In both mounts, another face's rename is
  // pushed to the kernel as FUSE_NOTIFY_INVAL_ENTRY of the old name (src/transports/fuse/kernel-cache.ts,
  // notificationsFor), which unhashes the directory's dentry: getcwd then fails with ENOENT
  // ("cannot access parent directories"; git: "Unable to read current working directory") until
  // something happens to look the new name up, when the kernel splices the same node's dentry in
  // under it (d_splice_alias). The notifier's worker now looks the new name up (an lstat through
  // the mount) after the notifications of a rename of a node the kernel holds.
  const d = await startMountedDaemon(t);
  const r = await startRemoteMount(t, d.url);
  for (const [face, m] of [['daemon\'s own mount', d.mnt], ['remote mount', r.mnt]] as const) {
    const dir = face === 'remote mount' ? '/cwd-r' : '/cwd-d';
    await d.rpc('mkdir', { path: `${dir}/x`, parents: true });
    await sleep(1200);
    const shell = sh(`cd '${m}${dir}/x' && sleep 1.5 && pwd -P`);
    await sleep(500);
    await d.rpc('rename', { old_path: `${dir}/x`, new_path: `${dir}/y` });
    const out = await shell;
    t.equal(out.code, 0, `${face}: getcwd works in the renamed directory (${out.stderr.trim()})`);
    t.equal(out.stdout.trim(), `${m}${dir}/y`, `${face}: and names its new path`);
  }
  t.equal(await shOk(`ls '${r.mnt}/cwd-r'`), 'y\n');
});
