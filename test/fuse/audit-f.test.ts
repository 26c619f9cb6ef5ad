/**
 * @module test/fuse/audit-f
 * Audit of what svc adds around files, seen through the daemon's own mount: the read-only
 * /.versions tree next to the files it shows the history of, and storage mounts (`local` host
 * directories) changed through the mount and on the host.
 */
import t from 'tap';
import { mkdirSync, rmSync, statSync, writeFileSync, chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, fuseSkipReason, sh, startMountedDaemon, tempDir, type DaemonMount } from './harness.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A shell command writing `$1\n` to `$2` in one open, write and close (a shell's `>` may make two versions: docs/fuse.md). */
const write = `python3 -c 'import sys; open(sys.argv[2], "w").write(sys.argv[1] + "\\n")'`;

let n = 0;
const unique = (tag: string) => `/${tag}-${process.pid}-${n++}`;

t.test('/.versions next to the files it shows', { skip }, async (t) => {
  const d: DaemonMount = await startMountedDaemon(t);

  t.test('a version written through the mount can be opened at once, even after a lookup found it missing', async (t) => {
    // A program checks for the next version, writes the file, then opens the version: `ls` of the
    // history lists it, so an open must find it too (as on any file system, where a name a
    // directory lists can be opened). The kernel kept the failed lookup as a negative entry for
    // 0.5 s and nothing dropped it: stat answered ENOENT while readdir listed the name.
    const dir = unique('vneg');
    // One version, whatever the timing (a shell's `echo >` can make two: docs/fuse.md, provisional closes).
    await d.rpc('write', { path: `${dir}/f.txt`, content: { __type__: 'bytes', data: Buffer.from('one\n').toString('base64') } });
    const r1 = await sh(`stat '${d.mnt}/.versions${dir}/f.txt/2'`);
    t.not(r1.code, 0, 'version 2 does not exist yet');
    const r2 = await sh(`${write} two '${d.mnt}${dir}/f.txt' && cat '${d.mnt}/.versions${dir}/f.txt/2' && ls '${d.mnt}/.versions${dir}/f.txt'`);
    t.equal(r2.code, 0, `opened right after the write: ${r2.stderr}`);
    t.equal(r2.stdout, 'two\n1\n2\n');
  });

  t.test("a file's history can be opened at once after the file is made, even after a lookup found it missing", async (t) => {
    const dir = unique('vneg-new');
    await sh(`mkdir -p '${d.mnt}${dir}'`);
    const r1 = await sh(`ls '${d.mnt}/.versions${dir}/new.txt'`);
    t.not(r1.code, 0, 'no history yet');
    const r2 = await sh(`${write} hello '${d.mnt}${dir}/new.txt' && cat '${d.mnt}/.versions${dir}/new.txt/1'`);
    t.equal(r2.code, 0, `opened right after the write: ${r2.stderr}`);
    t.equal(r2.stdout, 'hello\n');
  });

  t.test('a version written over RPC can be opened at once, even after a lookup found it missing', async (t) => {
    const dir = unique('vneg-rpc');
    await d.rpc('write', { path: `${dir}/f.txt`, content: { __type__: 'bytes', data: Buffer.from('one\n').toString('base64') } });
    t.not((await sh(`stat '${d.mnt}/.versions${dir}/f.txt/2'`)).code, 0, 'version 2 does not exist yet');
    await d.rpc('write', { path: `${dir}/f.txt`, content: { __type__: 'bytes', data: Buffer.from('two\n').toString('base64') } });
    const r = await sh(`cat '${d.mnt}/.versions${dir}/f.txt/2'`);
    t.equal(r.code, 0, `opened right after the RPC write: ${r.stderr}`);
    t.equal(r.stdout, 'two\n');
  });

  t.test('reading every version of a file with a long history costs about what reading as many files does', async (t) => {
    // Each lookup and open of /.versions/f/N listed all of f's versions to find N: `cp -r` of a
    // 2,000-version history took 10.2 s against 1.2 s for 2,000 files, and grew with the square.
    const dir = unique('vmany');
    const count = 2000;
    await sh(`mkdir -p '${d.mnt}${dir}/plain' && python3 -c '
import sys
d = sys.argv[1]
for i in range(${count}):
    with open(d + "/f.txt", "w") as f: f.write("v%d\\n" % i)
    with open(d + "/plain/%d" % i, "w") as f: f.write("v%d\\n" % i)
' '${d.mnt}${dir}'`, { timeoutMs: 120_000 });
    const listed = (await sh(`ls '${d.mnt}/.versions${dir}/f.txt' | wc -l`)).stdout.trim();
    t.ok(Number(listed) >= count, `${listed} versions`);
    const timed = async (cmd: string) => {
      const start = process.hrtime.bigint();
      const r = await sh(cmd, { timeoutMs: 120_000 });
      t.equal(r.code, 0, r.stderr);
      return Number(process.hrtime.bigint() - start) / 1e6;
    };
    const plain = await timed(`cat '${d.mnt}${dir}/plain/'* > /dev/null`);
    const versions = await timed(`cat '${d.mnt}/.versions${dir}/f.txt/'* > /dev/null`);
    t.ok(versions < plain * 3 + 300, `${listed} versions read in ${versions.toFixed(0)} ms, ${count} files in ${plain.toFixed(0)} ms`);
  });
});

t.test('storage mounts through the FUSE mount', { skip }, async (t) => {
  const d: DaemonMount = await startMountedDaemon(t);
  const base = tempDir('svc-audit-f-host-');
  t.teardown(() => rmSync(base, { recursive: true, force: true }));

  t.test('editing a host executable through the mount keeps it executable on the host', async (t) => {
    // `sed -i`, an editor or `echo >>` through the mount rewrote the host file as a new 0644 file
    // (temp file + rename), so a script the host had as 0755 was no longer executable there.
    const host = join(base, 'exec');
    mkdirSync(host);
    writeFileSync(join(host, 'run.sh'), '#!/bin/sh\necho one\n');
    chmodSync(join(host, 'run.sh'), 0o755);
    const point = unique('st-exec');
    await d.rpc('add_mount', { mount_point: point, backend_type: 'local', backend_config: { data_dir: host } });
    await sh(`echo 'echo two' >> '${d.mnt}${point}/run.sh'`);
    t.equal(readFileSync(join(host, 'run.sh'), 'utf8'), '#!/bin/sh\necho one\necho two\n', 'the edit reached the host');
    t.equal((statSync(join(host, 'run.sh')).mode & 0o777).toString(8), '755', 'still executable on the host');
  });

  t.test('a file written through the mount with mode 0755 is executable on the host', async (t) => {
    const host = join(base, 'newexec');
    mkdirSync(host);
    const point = unique('st-newexec');
    await d.rpc('add_mount', { mount_point: point, backend_type: 'local', backend_config: { data_dir: host } });
    await sh(`printf '#!/bin/sh\\necho hi\\n' > '${d.mnt}${point}/tool.sh' && chmod 755 '${d.mnt}${point}/tool.sh'`);
    await sh(`install -m 755 /bin/true '${d.mnt}${point}/true'`);
    t.equal((statSync(join(host, 'true')).mode & 0o777).toString(8), '755', 'install -m 755: executable on the host');
    t.ok(await eventually(async () => (statSync(join(host, 'tool.sh')).mode & 0o777) === 0o755, 1500),
      `chmod 755 through the mount reaches the host: ${(statSync(join(host, 'tool.sh')).mode & 0o777).toString(8)}`);
  });

  t.test("a host file's mode shows in the mount", async (t) => {
    // The host is the truth for a storage mount, its modes too: a script the host has as 0755
    // showed as 0644, and `./run.sh` in the mount was refused (EACCES).
    const host = join(base, 'hostmode');
    mkdirSync(host);
    writeFileSync(join(host, 'before.sh'), '#!/bin/sh\necho before\n');
    chmodSync(join(host, 'before.sh'), 0o755);
    const point = unique('st-hostmode');
    await d.rpc('add_mount', { mount_point: point, backend_type: 'local', backend_config: { data_dir: host } });
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
    const host = join(base, 'filedir');
    mkdirSync(host);
    writeFileSync(join(host, 'f'), 'a file\n');
    writeFileSync(join(host, 'g'), 'a file too\n');
    mkdirSync(join(host, 'h'));
    writeFileSync(join(host, 'h', 'x'), 'x\n');
    const point = unique('st-filedir');
    await d.rpc('add_mount', { mount_point: point, backend_type: 'local', backend_config: { data_dir: host } });
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
    const host = join(base, 'reactivate');
    mkdirSync(join(host, 'dir'), { recursive: true });
    writeFileSync(join(host, 'dir', 'x'), 'x\n');
    const point = unique('st-reactivate');
    await d.rpc('add_mount', { mount_point: point, backend_type: 'local', backend_config: { data_dir: host } });
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
    const host = join(base, 'recreated');
    mkdirSync(host);
    writeFileSync(join(host, 'a'), 'a\n');
    const point = unique('st-recreate');
    await d.rpc('add_mount', { mount_point: point, backend_type: 'local', backend_config: { data_dir: host } });
    t.equal((await sh(`cat '${d.mnt}${point}/a'`)).stdout, 'a\n');
    rmSync(host, { recursive: true, force: true });
    await sleep(1500);
    mkdirSync(host);
    writeFileSync(join(host, 'b'), 'b\n');
    const seen = await eventually(async () => (await sh(`cat '${d.mnt}${point}/b'`)).stdout === 'b\n', 3000, 100);
    t.ok(seen, `a file made in the new host directory shows in the mount: ${JSON.stringify(await d.rpc('list', { path: point }))}`);
  });
});
