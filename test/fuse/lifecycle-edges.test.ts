/**
 * @module test/fuse/lifecycle-edges
 * The mount's lifecycle, CLI and identity at their edges: `svc unmount` of what is not a FUSE
 * mount, storage mounts around the daemon's own mount point, a mount point below a symbolic link,
 * a remote mount's refusals at open(2), its exit code and a daemon that stops answering, and one
 * daemon per data directory. Each test failed on the code before its fix (the comment on each
 * says what happened then).
 */
import t from 'tap';
import { writeFile, mkdir, rm, symlink, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { fuseSkipReason, isMounted, MountProcess, sh, shOk, startMountedDaemon, startRemoteMount, tempDir } from './harness.js';
import { bytes } from '../helpers/daemon.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'svc');
const isRoot = process.getuid?.() === 0;

/** errno name of one os.open(path, flags) in a child (never touching a mount from this process). */
async function openErrno(path: string, flags: string): Promise<string> {
  const r = await sh(`python3 -c "
import os, errno, sys
try:
    fd = os.open(sys.argv[1], ${flags}, 0o644)
    os.close(fd)
    print('OK')
except OSError as e:
    print(errno.errorcode[e.errno])
" '${path}'`, { timeoutMs: 15_000 });
  return r.stdout.trim() || `failed: ${r.stderr}`;
}

t.test('svc unmount refuses a mount point that is not a FUSE mount, and leaves it mounted', { skip: skip ?? (isRoot ? undefined : 'needs root to mount a tmpfs') }, async (t) => {
  // Before the fix: forceUnmount (src/native/fuse.ts) runs `fusermount -uz DIR` then `umount -l DIR`; run as
  // root, fusermount detaches any file system (a tmpfs, a bind mount, /home ...), so
  // `svc unmount ~/data` — "Unmount an svc FUSE mount" — lazily unmounts whatever is there.
  const base = tempDir('svc-edges-tmpfs-');
  const dir = join(base, 'tmpfs');
  await mkdir(dir);
  await shOk(`mount -t tmpfs svc-edges-tmpfs '${dir}' && echo precious > '${dir}/f'`);
  t.teardown(async () => {
    if (isMounted(dir)) await sh(`umount '${dir}'`);
    await rm(base, { recursive: true, force: true });
  });
  const out = await sh(`node '${BIN}' unmount '${dir}'`);
  t.not(out.code, 0, `svc unmount fails (stdout: ${out.stdout.trim()})`);
  t.ok(isMounted(dir), 'the tmpfs is still mounted');
  t.equal((await sh(`cat '${dir}/f'`)).stdout, 'precious\n', 'and its file still reachable');
});

t.test('a storage mount whose host directory is inside the daemon\'s own FUSE mount does not deadlock the daemon', { skip }, async (t) => {
  // Before the fix: add_mount accepts a host directory inside the daemon's own mount point; the mount guard
  // then calls LocalMount.checkInside (src/mounts/local.ts, realpathSync) on the main thread for
  // every change under the storage mount: a synchronous fs call into the daemon's own FUSE
  // mount, which only that thread can answer. The daemon hangs for good (RPC, /health, the mount;
  // a program writing there is stuck in D state) until kill -9.
  const d = await startMountedDaemon(t);
  await shOk(`mkdir '${d.mnt}/hostdir' && echo x > '${d.mnt}/hostdir/a'`);
  let added = true;
  try {
    await d.rpc('add_mount', { mount_point: '/loop', backend_type: 'local', backend_config: { data_dir: join(d.mnt, 'hostdir') } });
  } catch {
    added = false; // refusing such a host directory is a fine answer too
  }
  if (added) {
    const write = fetch(`${d.url}/api/nfs/write`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: AbortSignal.timeout(8000),
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'write', params: { path: '/loop/c.txt', content: bytes('c\n') } }),
    }).then(async (r) => (await r.json()) as { result?: unknown; error?: unknown }, (err: Error) => ({ hung: err.name }));
    const answer = await write;
    t.notOk('hung' in answer, `an RPC write under the storage mount is answered (got ${JSON.stringify(answer)})`);
  }
  const health = await fetch(`${d.url}/health`, { signal: AbortSignal.timeout(3000) }).then((r) => r.status, (err: Error) => err.name);
  t.equal(health, 200, 'the daemon still answers /health');
  if (health !== 200) await d.kill9(); // else teardown waits 15 s for SIGTERM to be ignored
});

t.test('a mount point reached through a symbolic link stays mounted', { skip }, async (t) => {
  // Before the fix: FuseMount keeps path.resolve(dir) (src/transports/fuse/mount.ts, constructor), which
  // does not resolve symbolic links, while /proc/self/mountinfo names the real path; the detach
  // watcher (isMountPoint) then finds nothing mounted at "dir" one second after the start and
  // stops the mount as "unmounted from outside" (`svc mount` exits 0). The same look-up misses a
  // stale mount at such a path at start. A symlinked home or data disk is common.
  const base = await realpath(tempDir('svc-edges-link-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  await mkdir(join(base, 'real'));
  await symlink(join(base, 'real'), join(base, 'link'));
  const mnt = join(base, 'link', 'mnt');
  const realMnt = join(base, 'real', 'mnt');
  const daemon = new MountProcess(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', join(base, 'data'), '--mount', mnt, '--log-level', 'warn'], realMnt);
  t.teardown(() => daemon.cleanup());
  await daemon.start();
  await new Promise((r) => setTimeout(r, 2500));
  t.ok(isMounted(realMnt), 'the daemon\'s mount is still there after 2.5 s');
  t.notMatch(daemon.output(), /unmounted from outside/, 'and not taken for an unmount from outside');
  await daemon.rpc('write', { path: '/seen.txt', content: bytes('seen\n') });
  t.equal((await sh(`cat '${mnt}/seen.txt'`, { timeoutMs: 10_000 })).stdout, 'seen\n', 'the mount serves the tree');

  const remoteMnt = join(base, 'link', 'rmnt');
  const remote = new MountProcess(['mount', remoteMnt, '--remote-url', daemon.url, '--log-level', 'warn'], join(base, 'real', 'rmnt'));
  t.teardown(() => remote.cleanup());
  await remote.start();
  t.equal(await remote.exitWithin(2500), 'running', 'svc mount through the link keeps running');
  t.ok(isMounted(join(base, 'real', 'rmnt')), 'and stays mounted');
});

t.test('a storage mount whose host directory holds the daemon\'s own mount point does not mirror the mount into itself', { skip }, async (t) => {
  // Same cause as above, the other way round: add_mount accepts a host directory that contains
  // the daemon's mount point; its initial scan walks into the FUSE mount, which shows the storage
  // mount, which holds the FUSE mount...: within seconds the store holds /outer/mnt/outer/mnt/…
  // about a hundred levels deep (until a path is too long), a copy of every host file at each.
  const base = tempDir('svc-edges-outer-');
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const host = join(base, 'host');
  await mkdir(host);
  await writeFile(join(host, 'hf.txt'), 'host file\n');
  const d = await startMountedDaemon(t, { mnt: join(host, 'mnt') });
  let added = true;
  try {
    await d.rpc('add_mount', { mount_point: '/outer', backend_type: 'local', backend_config: { data_dir: host } });
  } catch {
    added = false; // refusing it is a fine answer
  }
  if (added) {
    await new Promise((r) => setTimeout(r, 2000));
    t.equal(await d.rpc('exists', { path: '/outer/mnt/outer' }), false, 'the storage mount does not hold a copy of itself through the FUSE mount');
    const all = (await d.rpc('list', { path: '/', recursive: true })) as unknown[] | { entries: unknown[] };
    const n = Array.isArray(all) ? all.length : all.entries.length;
    t.ok(n < 10, `the tree stays small (${n} entries)`);
  }
});

const KEYS = { alice: 'sk-edges-alice-0123456789abcdef0001', root: 'sk-edges-root-0123456789abcdef00003' };
const as = (key: string) => ({ Authorization: `Bearer ${key}` });

t.test('a remote mount refuses at open(2) what its key may not write, as a local disk does', { skip }, async (t) => {
  // Before the fix: RemoteBackend.checkWritable (src/transports/fuse/remote.ts) does nothing, so open(O_CREAT)
  // and open(O_WRONLY) of a path the key may only read succeed; the refusal comes only at
  // close(2) (the commit's upload_begin). Programs that do not check close() — a shell's
  // `echo x > f` among them — exit 0 and the data is silently gone. The same for EROFS under a
  // read-only storage mount. The in-process mount refuses at open (FuseLocalBackend.checkWritable).
  const cfgDir = tempDir('svc-edges-auth-');
  t.teardown(() => rm(cfgDir, { recursive: true, force: true }));
  const cfg = join(cfgDir, 'auth.json');
  await writeFile(cfg, JSON.stringify({ api_keys: { [KEYS.alice]: { user_id: 'alice' }, [KEYS.root]: { user_id: 'root', is_admin: true } } }));
  const d = await startMountedDaemon(t, { extraArgs: ['--auth-type', 'static', '--auth-config', cfg] });
  await d.rpc('write', { path: '/shared/doc.txt', content: bytes('shared\n') }, as(KEYS.root));
  await d.rpc('rebac_create', { subject: ['user', 'alice'], relation: 'direct_viewer', object: ['file', '/shared'] }, as(KEYS.root));
  await mkdir(join(cfgDir, 'rohost'));
  await writeFile(join(cfgDir, 'rohost', 'r.txt'), 'ro\n');
  await d.rpc('add_mount', { mount_point: '/ro', backend_type: 'local', backend_config: { data_dir: join(cfgDir, 'rohost') }, readonly: true }, as(KEYS.root));
  await d.rpc('rebac_create', { subject: ['user', 'alice'], relation: 'direct_owner', object: ['file', '/ro'] }, as(KEYS.root));

  const r = await startRemoteMount(t, d.url, ['--api-key', KEYS.alice]);
  t.equal(await shOk(`cat '${r.mnt}/shared/doc.txt'`), 'shared\n', 'alice reads the shared file');
  t.equal(await openErrno(`${r.mnt}/shared/new.txt`, 'os.O_CREAT | os.O_WRONLY'), 'EACCES', 'creating a file where alice may not write: EACCES at open');
  t.equal(await openErrno(`${r.mnt}/shared/doc.txt`, 'os.O_WRONLY | os.O_APPEND'), 'EACCES', 'opening the read-only-to-her file for writing: EACCES at open');
  const echo = await sh(`echo lost > '${r.mnt}/shared/echo.txt'`);
  t.not(echo.code, 0, 'a shell redirection into it fails (it exited 0 and the bytes were dropped)');
  t.equal(await openErrno(`${r.mnt}/ro/new.txt`, 'os.O_CREAT | os.O_WRONLY'), 'EROFS', 'under a read-only storage mount: EROFS at open');
  t.equal(await openErrno(`${r.mnt}/ro/r.txt`, 'os.O_WRONLY'), 'EROFS', 'and for an existing file there');
  t.equal(await shOk(`cat '${r.mnt}/shared/doc.txt'`), 'shared\n', 'nothing changed');
});

t.test('svc mount exits 3 when the daemon cannot be reached, as the README says of every command', { skip }, async (t) => {
  // Before the fix: src/cli/mount.ts exits 1 for every start failure; README "The command line": exit codes
  // 1 an RPC error, 2 a usage error, 3 the daemon cannot be reached (what `svc ls` does).
  const base = tempDir('svc-edges-unreach-');
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const ls = await sh(`node '${BIN}' ls / --url http://127.0.0.1:1`);
  t.equal(ls.code, 3, 'svc ls: 3');
  const out = await sh(`node '${BIN}' mount '${join(base, 'mnt')}' --remote-url http://127.0.0.1:1`, { timeoutMs: 20_000 });
  t.match(out.stderr, /cannot reach/);
  t.equal(out.code, 3, 'svc mount: 3 too');
  t.notOk(isMounted(join(base, 'mnt')));
});

t.test('a remote mount whose daemon stops answering fails fast instead of hanging every access', { skip }, async (t) => {
  // Before the fix: docs/fuse.md: "A remote mount whose daemon is down or unreachable answers EIO at once
  // (nothing hangs)". That holds only when the connection is refused. A daemon that is hung (as
  // the storage-mount deadlock above leaves it), stopped, or behind a network that drops packets
  // leaves every request waiting for SvcClient's 120 s timeout (src/client/index.ts, timeoutMs):
  // `ls` of the mount blocks for two minutes, in the kernel, where Ctrl-C and timeout(1) cannot
  // end it, and each further access does the same.
  const d = await startMountedDaemon(t);
  await shOk(`mkdir -p '${d.mnt}/dir/sub' && echo x > '${d.mnt}/dir/sub/f'`);
  const r = await startRemoteMount(t, d.url);
  t.equal(await shOk(`cat '${r.mnt}/dir/sub/f'`), 'x\n');
  await new Promise((res) => setTimeout(res, 1500)); // past the kernel's and the mount's caches
  process.kill(d.pid!, 'SIGSTOP');
  let resumed = false;
  const resume = () => {
    if (!resumed) process.kill(d.pid!, 'SIGCONT');
    resumed = true;
  };
  t.teardown(resume);
  // Let the stuck request go after 15 s, so that a failing run ends.
  const release = setTimeout(resume, 15_000);
  const started = Date.now();
  const ls = await sh(`ls '${r.mnt}/dir/sub'`, { timeoutMs: 60_000 });
  const took = Date.now() - started;
  clearTimeout(release);
  resume();
  t.ok(took < 10_000, `ls of the remote mount answered within 10 s (took ${took} ms, exit ${ls.code}, ${ls.stderr.trim()})`);
});

t.test('a second daemon on the same data directory is refused, and cannot wipe the first one\'s journal', { skip }, async (t) => {
  // Before the fix: nothing keeps a second `svc serve` off a data directory a daemon is using (LMDB opens
  // it in both), and both use the one <data-dir>/fuse-journal: the second replays the first's
  // queued closes at its start and empties the file whenever its own queue is applied
  // (FuseJournal: recover(), and #truncate() when !#unapplied) and at its stop, so the closes the
  // first daemon answered but had not committed yet are gone when it is killed: not replayed.
  // (A second `svc serve` started by mistake on the default data directory gets as far as the
  // journal replay even when its port is taken.)
  const a = await startMountedDaemon(t);
  const base = tempDir('svc-edges-second-');
  const b = new MountProcess(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', a.dataDir, '--mount', join(base, 'mnt'), '--log-level', 'warn'], join(base, 'mnt'));
  t.teardown(async () => {
    await b.cleanup();
    await rm(base, { recursive: true, force: true });
  });
  const secondStarted = await b.start().then(() => true, () => false);
  t.notOk(secondStarted, 'the second daemon on the same data directory is refused');
  // Closes answered (journaled, committed within ~10 ms), then the first daemon dies at once.
  await shOk(`python3 -c "
import os
for i in range(200):
    with open('${a.mnt}/f%d' % i, 'w') as f: f.write('file %d\\n' % i)
os.kill(${a.pid}, 9)"`);
  await a.kill9();
  if (secondStarted) t.equal(await b.stop(), 0, 'the second daemon stops');
  await a.start();
  const names = (await shOk(`ls '${a.mnt}'`)).split('\n').filter(Boolean);
  t.equal(names.length, 200, 'every file closed before the kill is there after the restart');
});
