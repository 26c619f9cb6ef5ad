/**
 * @module test/fuse/lifecycle
 * A mount's life: SIGTERM and SIGINT unmount and exit cleanly; kill -9 leaves a stale mount
 * ("Transport endpoint is not connected") that the next start clears, with every acknowledged write
 * intact; `svc unmount` detaches a stale mount and says so when nothing is mounted; a missing mount
 * point is created. The same for a remote mount (`svc mount`), which also exits when it is
 * unmounted from outside, and answers EIO at once while its daemon is down, then serves again when
 * the daemon is back; a daemon whose mount is unmounted from outside keeps serving RPC.
 */
import t from 'tap';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { rm } from 'node:fs/promises';
import { fuseSkipReason, isMounted, MountProcess, sh, shOk, startMountedDaemon, startRemoteMount, tempDir } from './harness.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'svc');

t.test('mount lifecycle', { skip }, async (t) => {
  const base = tempDir('svc-fuse-life-');
  const dataDir = join(base, 'data');
  const mnt = join(base, 'deep', 'mnt'); // missing: created at start
  const daemon = new MountProcess(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--mount', mnt, '--log-level', 'warn'], mnt);
  t.teardown(async () => {
    await daemon.cleanup();
    await rm(base, { recursive: true, force: true });
  });

  t.test('SIGTERM commits, unmounts and exits 0', async (t) => {
    await daemon.start();
    t.ok(isMounted(mnt), 'mounted (the missing mount point was created)');
    await shOk(`echo kept > '${mnt}/kept.txt'`);
    t.equal(await daemon.stop(), 0, 'exit code 0');
    t.notOk(isMounted(mnt), 'no mount left behind');
  });

  t.test('SIGINT unmounts and exits 0 too, with what was written kept', async (t) => {
    await daemon.start();
    await shOk(`echo interrupted > '${mnt}/int.txt'`);
    t.equal(await daemon.stop('SIGINT'), 0, 'exit code 0');
    t.notOk(isMounted(mnt), 'no mount left behind');
  });

  t.test('after kill -9 the mount is stale; the next start clears it and the data is there', async (t) => {
    await daemon.start();
    await shOk(`mkdir '${mnt}/d' && seq 1 10000 > '${mnt}/d/numbers.txt'`);
    // Closed (not fsynced) just before the kill: the mount answers once a change is committed,
    // not once flushed, and a committed change must survive the daemon's death.
    await shOk(`cd '${mnt}/d' && for i in $(seq 1 150); do echo "file $i" > f$i; done && rm f7 && mv f8 g8 && mkdir e && chmod 600 f9`);
    // A burst of closes with nothing after them: answered once journaled, committed in batches;
    // whatever the kill catches before its batch is committed is replayed from the journal.
    await shOk(`mkdir '${mnt}/burst' && cd '${mnt}/burst' && for i in $(seq 1 400); do echo "burst $i" > b$i; done && echo one > v && echo two > v && echo three > v`);
    // Directories made and removed, and times and modes set on files just closed: journaled with
    // the closes (no commit of their own), so the kill catches them queued too.
    await shOk(`cd '${mnt}/burst' && mkdir -p x/y && echo in > x/y/z && touch -d '2003-04-05 06:07:08 UTC' x/y/z && chmod 604 x/y/z`
      + ` && mkdir gone && echo tmp > gone/t && rm gone/t && rmdir gone`
      // Renames of files just closed (rsync's and editors' temporary files): journaled too.
      + ` && echo new > .w.tmp && mv .w.tmp w && echo replaced > .b2.tmp && mv .b2.tmp b2`
      // Made, or emptied, and closed without a write: stored within close(2) (at the flush), not
      // only at the release the kernel sends after it.
      + ` && touch made-empty && : > b3`);
    await daemon.kill9();
    t.ok(isMounted(mnt), 'the dead daemon left its mount');
    t.match((await sh(`ls '${mnt}'`)).stderr, /Transport endpoint is not connected/, 'and it is stale');
    await daemon.start();
    t.equal(await shOk(`cat '${mnt}/kept.txt'`), 'kept\n');
    t.equal(await shOk(`cat '${mnt}/int.txt'`), 'interrupted\n', 'written before SIGINT');
    t.equal((await shOk(`wc -l < '${mnt}/d/numbers.txt'`)).trim(), '10000', 'acknowledged writes survived');
    const names = (await shOk(`ls '${mnt}/d'`)).split('\n').filter(Boolean).sort();
    const expected = ['e', 'g8', 'numbers.txt', ...Array.from({ length: 150 }, (_, i) => `f${i + 1}`).filter((n) => n !== 'f7' && n !== 'f8')].sort();
    t.same(names, expected, 'every file closed before the kill is there, and the unlink, rename and mkdir too');
    t.equal(await shOk(`cat '${mnt}/d/f150'`), 'file 150\n', 'the last file closed before the kill');
    t.equal(await shOk(`cat '${mnt}/d/g8'`), 'file 8\n');
    t.equal((await shOk(`stat -c %a '${mnt}/d/f9'`)).trim(), '600', 'and the chmod');
    const burst = (await shOk(`ls '${mnt}/burst'`)).split('\n').filter(Boolean).sort();
    t.same(burst, [...Array.from({ length: 400 }, (_, i) => `b${i + 1}`), 'made-empty', 'v', 'w', 'x'].sort(), 'every file of the burst closed before the kill is there, and the directory removed is not');
    t.equal((await shOk(`stat -c %s '${mnt}/burst/made-empty' '${mnt}/burst/b3'`)).trim(), '0\n0', 'the file made empty and the one emptied, right before the kill');
    t.equal((await shOk(`ls '${mnt}/.versions/burst/b3'`)).split('\n').filter(Boolean).length, 2, 'the emptying one version');
    t.equal(await shOk(`cat '${mnt}/burst/w' '${mnt}/burst/b2'`), 'new\nreplaced\n', 'the files renamed right after their close, one over another');
    t.equal((await shOk(`ls -A '${mnt}/burst' | grep -c tmp || true`)).trim(), '0', 'and no temporary name left');
    t.equal((await shOk(`stat -c '%a %Y' '${mnt}/burst/x/y/z'`)).trim(), `604 ${Date.UTC(2003, 3, 5, 6, 7, 8) / 1000}`, 'the time and mode set after the close');
    t.equal(await shOk(`cat '${mnt}/burst/x/y/z'`), 'in\n');
    t.equal(await shOk(`cat '${mnt}/burst/b1' '${mnt}/burst/b400'`), 'burst 1\nburst 400\n', 'with its content');
    t.equal(await shOk(`cat '${mnt}/burst/v'`), 'three\n', 'the last of three closes of one file wins');
    t.equal((await shOk(`ls '${mnt}/.versions/burst/v'`)).split('\n').filter(Boolean).length, 3, 'and each close made one version');
    t.match(daemon.output(), /clearing a stale mount/, 'said what it did');
  });

  t.test('started again at once after kill -9, while the kernel still caches the root\'s attributes, it clears the stale mount', async (t) => {
    // The daemon the test before started is serving.
    // The stat comes last: a change in the root would drop the attributes it caches.
    await shOk(`echo soon > '${mnt}/soon.txt' && stat '${mnt}' > /dev/null`);
    await daemon.kill9();
    // A stat of the mount point is answered from the kernel's cache here, as if the server lived.
    t.equal((await sh(`stat -c %i '${mnt}'`)).code, 0, 'the dead mount still answers a stat from the cache');
    const cleared = () => daemon.output().match(/clearing a stale mount/g)?.length ?? 0;
    const before = cleared();
    await daemon.start();
    t.equal(cleared(), before + 1, 'the stale mount is cleared, not taken for a live server');
    t.equal(await shOk(`cat '${mnt}/soon.txt'`), 'soon\n');
  });

  t.test('a file made, or emptied, and closed without a write survives a kill -9 right after close(2)', async (t) => {
    // The daemon the test before started is serving. Such a file used to be stored at its release
    // only, which the kernel sends after close(2) has returned: a kill in between lost it.
    await shOk(`echo full > '${mnt}/full.txt'`);
    await shOk(`python3 -c "import os; os.close(os.open('${mnt}/made.txt', os.O_CREAT | os.O_WRONLY, 0o644)); `
      + `os.close(os.open('${mnt}/full.txt', os.O_WRONLY | os.O_TRUNC)); os.kill(${daemon.pid}, 9)"`);
    await daemon.kill9();
    await daemon.start();
    t.equal((await shOk(`stat -c '%n %s' '${mnt}/made.txt' '${mnt}/full.txt'`)).trim(), `${mnt}/made.txt 0\n${mnt}/full.txt 0`, 'both there, empty');
  });

  t.test('svc unmount detaches a stale mount, and says when nothing is mounted', async (t) => {
    await daemon.kill9();
    const out = await sh(`node '${BIN}' unmount '${mnt}'`);
    t.equal(out.code, 0, out.stderr);
    t.match(out.stdout, /unmounted/);
    t.notOk(isMounted(mnt));
    const again = await sh(`node '${BIN}' unmount '${mnt}'`);
    t.equal(again.code, 1);
    t.match(again.stderr, /nothing is mounted/);
  });
});

t.test('a mount point another server still answers on is refused, and that mount keeps working', { skip }, async (t) => {
  const a = await startMountedDaemon(t);
  await shOk(`echo from-a > '${a.mnt}/a.txt'`);
  const base = tempDir('svc-fuse-second-');
  const second = new MountProcess(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', join(base, 'data'), '--mount', a.mnt, '--log-level', 'warn'], a.mnt);
  // Not cleanup(): that would detach the mount point, which is the first daemon's.
  t.teardown(async () => {
    await second.stop().catch(() => undefined);
    await rm(base, { recursive: true, force: true });
  });
  await t.rejects(second.start(), /exited with 1 before mounting/);
  t.match(second.output(), /already mounted and its server answers/, 'says why');
  t.equal(await shOk(`cat '${a.mnt}/a.txt'`), 'from-a\n', 'the first daemon still serves its mount');
  const remote = new MountProcess(['mount', a.mnt, '--remote-url', a.url, '--log-level', 'warn'], a.mnt);
  t.teardown(() => remote.stop().catch(() => undefined));
  await t.rejects(remote.start(), /exited with 1 before mounting/, 'svc mount refuses it too');
  t.equal(await shOk(`cat '${a.mnt}/a.txt'`), 'from-a\n');
});

t.test('a mount point that holds files is refused, saying why, and is left as it was', { skip }, async (t) => {
  const base = tempDir('svc-fuse-nonempty-');
  const mnt = join(base, 'mnt');
  t.teardown(() => rm(base, { recursive: true, force: true }));
  await shOk(`mkdir -p '${mnt}' && echo mine > '${mnt}/keep.txt'`);
  const daemon = new MountProcess(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', join(base, 'data'), '--mount', mnt, '--log-level', 'warn'], mnt);
  t.teardown(() => daemon.stop().catch(() => undefined));
  await t.rejects(daemon.start(), /exited with 1 before mounting/);
  t.match(daemon.output(), /the directory is not empty \(1 entry, such as "keep.txt"\)/, 'says why');
  t.notOk(isMounted(mnt), 'nothing mounted');
  t.equal(await shOk(`cat '${mnt}/keep.txt'`), 'mine\n', 'the file is untouched');
  const inside = new MountProcess(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', join(base, 'm2', 'data'), '--mount', join(base, 'm2'), '--log-level', 'warn'], join(base, 'm2'));
  t.teardown(() => inside.stop().catch(() => undefined));
  await t.rejects(inside.start(), /exited with 2 before mounting/, 'a configuration error');
  t.match(inside.output(), /the data directory .* is inside the mount point/, 'a data directory inside the mount point is refused too');
});

t.test('a remote mount acts with its API key; a wrong key is refused at start', { skip }, async (t) => {
  const d = await startMountedDaemon(t, { extraArgs: ['--api-key', 'sekret-key-1'] });
  await shOk(`echo guarded > '${d.mnt}/g.txt'`);
  const r = await startRemoteMount(t, d.url, ['--api-key', 'sekret-key-1']);
  t.equal(await shOk(`cat '${r.mnt}/g.txt'`), 'guarded\n');
  await shOk(`echo back > '${r.mnt}/back.txt'`);
  t.equal(await shOk(`cat '${d.mnt}/back.txt'`), 'back\n');
  t.equal((await shOk(`stat -f -c '%l %T' '${r.mnt}'`)).trim(), '255 fuseblk', 'statfs answers');
  const base = tempDir('svc-fuse-badkey-');
  const bad = new MountProcess(['mount', join(base, 'mnt'), '--remote-url', d.url, '--api-key', 'wrong'], join(base, 'mnt'));
  t.teardown(async () => {
    await bad.cleanup();
    await rm(base, { recursive: true, force: true });
  });
  await t.rejects(bad.start(), /exited with 1 before mounting/);
  t.match(bad.output(), /refused the credentials/, 'says why');
  t.notOk(isMounted(join(base, 'mnt')), 'nothing mounted');
});

t.test('remote mount lifecycle: svc unmount ends the client, kill -9 leaves a stale mount the next start clears', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const r = await startRemoteMount(t, d.url);
  await shOk(`echo via-remote > '${r.mnt}/r.txt'`);
  const out = await sh(`node '${BIN}' unmount '${r.mnt}'`);
  t.equal(out.code, 0, out.stderr);
  t.equal(await r.exitWithin(10_000), 0, 'the svc mount process noticed and exited 0');
  t.notOk(isMounted(r.mnt));
  t.equal(await shOk(`cat '${d.mnt}/r.txt'`), 'via-remote\n', 'what it wrote is stored');

  await r.start();
  await shOk(`echo second > '${r.mnt}/second.txt'`);
  await r.kill9();
  t.ok(isMounted(r.mnt), 'the killed client left its mount');
  t.match((await sh(`ls '${r.mnt}'`)).stderr, /Transport endpoint is not connected/, 'stale');
  await r.start();
  t.match(r.output(), /clearing a stale mount/, 'the next start cleared it');
  t.equal(await shOk(`cat '${r.mnt}/second.txt'`), 'second\n', 'and serves the daemon\'s tree again');
  t.equal(await r.stop('SIGINT'), 0, 'SIGINT: clean exit');
  t.notOk(isMounted(r.mnt));
});

/** A TCP port free right now (the daemon must come back on the same one). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

t.test('a remote mount answers EIO while its daemon is down and serves again once it is back', { skip }, async (t) => {
  const port = await freePort();
  const d = await startMountedDaemon(t, { port });
  t.equal(d.port, port);
  const r = await startRemoteMount(t, d.url);
  await shOk(`echo kept > '${r.mnt}/kept.txt'`);
  t.equal(await d.stop(), 0);
  const started = Date.now();
  t.match((await sh(`cat '${r.mnt}/kept.txt'`)).stderr, /Input\/output error/, 'a read fails with EIO');
  t.match((await sh(`echo x > '${r.mnt}/new.txt'`)).stderr, /Input\/output error/, 'so does a create');
  t.ok(Date.now() - started < 10_000, 'at once, not after a hang');
  t.ok(isMounted(r.mnt), 'the client stays mounted');
  await d.start();
  t.equal(d.port, port, 'the daemon is back on its port');
  t.equal(await shOk(`cat '${r.mnt}/kept.txt'`), 'kept\n', 'what was written before is read again');
  await shOk(`echo after > '${r.mnt}/after.txt'`);
  t.equal((await d.rpc('read', { path: '/after.txt' })).data, Buffer.from('after\n').toString('base64'), 'and writes reach the daemon');
  t.equal(await r.stop(), 0);
});

t.test('a daemon whose mount is unmounted from outside keeps serving RPC and stops cleanly', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  await shOk(`echo x > '${d.mnt}/x.txt'`);
  t.equal((await sh(`node '${BIN}' unmount '${d.mnt}'`)).code, 0);
  t.equal(await d.exitWithin(2500), 'running', 'still running');
  t.equal((await d.rpc('get_metadata', { path: '/x.txt' })).size, 2, 'RPC still answers');
  t.equal(await d.stop(), 0, 'SIGTERM afterwards: exit 0');
  t.match(d.output(), /unmounted from outside/, 'logged what happened');
  t.notMatch(d.output(), /unmount failed/, 'no spurious unmount failure');
});
