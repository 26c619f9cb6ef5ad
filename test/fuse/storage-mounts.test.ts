/**
 * @module test/fuse/storage-mounts
 * Storage mounts (`local` host directories) changed through the daemon's FUSE mount and on the host:
 * file modes both ways, a host directory removed and made again, a host file replaced by a
 * directory and back, and a mount activated again after such a change (found by an audit of what
 * svc adds around files, seen through the mount).
 */
import t from 'tap';
import { mkdirSync, rmSync, statSync, writeFileSync, chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, fuseSkipReason, sh, startMountedDaemon, tempDir, type DaemonMount } from './harness.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let n = 0;
const unique = (tag: string) => `/${tag}-${process.pid}-${n++}`;

t.test('storage mounts through the FUSE mount', { skip }, async (t) => {
  const d: DaemonMount = await startMountedDaemon(t);
  const base = tempDir('svc-storage-mounts-host-');
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  /** The host directory `name` (made, then filled by `fill`), mounted at a new mount point; its paths. */
  const mountHost = async (name: string, fill: (host: string) => void = () => undefined) => {
    const host = join(base, name);
    mkdirSync(host);
    fill(host);
    const point = unique(`st-${name}`);
    await d.rpc('add_mount', { mount_point: point, backend_type: 'local', backend_config: { data_dir: host } });
    return { host, point };
  };

  t.test('editing a host executable through the mount keeps it executable on the host', async (t) => {
    // `sed -i`, an editor or `echo >>` through the mount rewrote the host file as a new 0644 file
    // (temp file + rename), so a script the host had as 0755 was no longer executable there.
    const { host, point } = await mountHost('exec', (host) => {
      writeFileSync(join(host, 'run.sh'), '#!/bin/sh\necho one\n');
      chmodSync(join(host, 'run.sh'), 0o755);
    });
    await sh(`echo 'echo two' >> '${d.mnt}${point}/run.sh'`);
    t.equal(readFileSync(join(host, 'run.sh'), 'utf8'), '#!/bin/sh\necho one\necho two\n', 'the edit reached the host');
    t.equal((statSync(join(host, 'run.sh')).mode & 0o777).toString(8), '755', 'still executable on the host');
  });

  t.test('a file written through the mount with mode 0755 is executable on the host', async (t) => {
    const { host, point } = await mountHost('newexec');
    await sh(`printf '#!/bin/sh\\necho hi\\n' > '${d.mnt}${point}/tool.sh' && chmod 755 '${d.mnt}${point}/tool.sh'`);
    await sh(`install -m 755 /bin/true '${d.mnt}${point}/true'`);
    t.equal((statSync(join(host, 'true')).mode & 0o777).toString(8), '755', 'install -m 755: executable on the host');
    t.ok(await eventually(async () => (statSync(join(host, 'tool.sh')).mode & 0o777) === 0o755, 1500),
      `chmod 755 through the mount reaches the host: ${(statSync(join(host, 'tool.sh')).mode & 0o777).toString(8)}`);
  });

  t.test("a host file's mode shows in the mount", async (t) => {
    // The host is the truth for a storage mount, its modes too: a script the host has as 0755
    // showed as 0644, and `./run.sh` in the mount was refused (EACCES).
    const { host, point } = await mountHost('hostmode', (host) => {
      writeFileSync(join(host, 'before.sh'), '#!/bin/sh\necho before\n');
      chmodSync(join(host, 'before.sh'), 0o755);
    });
    t.equal((await sh(`stat -c %a '${d.mnt}${point}/before.sh'`)).stdout.trim(), '755', 'a file there at activation');
    t.equal((await sh(`'${d.mnt}${point}/before.sh'`)).stdout, 'before\n', 'runs from the mount');
    writeFileSync(join(host, 'after.sh'), '#!/bin/sh\necho after\n', { mode: 0o750 });
    chmodSync(join(host, 'after.sh'), 0o750);
    t.ok(await eventually(async () => (await sh(`stat -c %a '${d.mnt}${point}/after.sh'`)).stdout.trim() === '750', 3000, 100),
      `a file made on the host later: ${(await sh(`stat -c %a '${d.mnt}${point}/after.sh'`)).stdout.trim()}`);
  });

  t.test('a host file replaced by a directory (and back) shows in the mount', async (t) => {
    // `rm f && mkdir f && echo > f/in` on the host: the watcher's unlink of f found a directory
    // there and was dropped, the directory's mkdir then failed on svc's file (ExistsError, logged),
    // and f/in with it: the mount showed the old file until the mount was activated again.
    const { host, point } = await mountHost('filedir', (host) => {
      writeFileSync(join(host, 'f'), 'a file\n');
      writeFileSync(join(host, 'g'), 'a file too\n');
      mkdirSync(join(host, 'h'));
      writeFileSync(join(host, 'h', 'x'), 'x\n');
    });
    t.equal((await sh(`cat '${d.mnt}${point}/f'`)).stdout, 'a file\n');
    await sh(`rm '${host}/f' && mkdir '${host}/f' && echo in > '${host}/f/in'`);
    await sh(`rm '${host}/g' && mkdir -p '${host}/g/deeper' && echo deep > '${host}/g/deeper/in'`);
    await sh(`rm -r '${host}/h' && echo now a file > '${host}/h'`);
    const shown = async () => (await sh(`cat '${d.mnt}${point}/f/in' '${d.mnt}${point}/g/deeper/in' '${d.mnt}${point}/h'`)).stdout;
    t.ok(await eventually(async () => (await shown()) === 'in\ndeep\nnow a file\n', 5000, 100),
      `the mount shows the host's tree: ${JSON.stringify(await shown())}, svc: ${JSON.stringify(await d.rpc('list', { path: point }))} ${d.output().split('\n').filter((l) => l.includes('filedir')).map((l) => l.slice(0, 300)).join('\n')}`);
  });

  t.test('a mount activated again after the host replaced a directory by a file', async (t) => {
    // svc still held dir/x from the last activation; the host now has a file named dir. The
    // activation removed svc's stale dir/x, whose mirror unlinked <host>/dir/x: ENOTDIR, and
    // add_mount (and so a saved mount at daemon start) failed: "Cannot mount …: ENOTDIR".
    const { host, point } = await mountHost('reactivate', (host) => {
      mkdirSync(join(host, 'dir'));
      writeFileSync(join(host, 'dir', 'x'), 'x\n');
    });
    t.equal((await sh(`cat '${d.mnt}${point}/dir/x'`)).stdout, 'x\n');
    await d.rpc('remove_mount', { mount_point: point });
    rmSync(join(host, 'dir'), { recursive: true });
    writeFileSync(join(host, 'dir'), 'now a file\n');
    const added = await d.rpc('add_mount', { mount_point: point, backend_type: 'local', backend_config: { data_dir: host } })
      .then(() => 'ok', (err: Error) => err.message);
    t.equal(added, 'ok', 'activated again');
    t.equal((await sh(`cat '${d.mnt}${point}/dir'`)).stdout, 'now a file\n', 'the host\'s file shows in the mount');
    t.equal(readFileSync(join(host, 'dir'), 'utf8'), 'now a file\n', 'the host file is untouched');
  });

  t.test('the host directory removed and made again: what programs put there still shows in the mount', async (t) => {
    // A build tool's `rm -rf out && mkdir out` on the host: the watcher stopped with the old
    // directory, so nothing made in the new one was ever imported (until the mount was activated
    // again), while svc's writes still went there.
    const { host, point } = await mountHost('recreated', (host) => writeFileSync(join(host, 'a'), 'a\n'));
    t.equal((await sh(`cat '${d.mnt}${point}/a'`)).stdout, 'a\n');
    rmSync(host, { recursive: true, force: true });
    await sleep(1500);
    mkdirSync(host);
    writeFileSync(join(host, 'b'), 'b\n');
    const seen = await eventually(async () => (await sh(`cat '${d.mnt}${point}/b'`)).stdout === 'b\n', 3000, 100);
    t.ok(seen, `a file made in the new host directory shows in the mount: ${JSON.stringify(await d.rpc('list', { path: point }))}`);
  });
});
