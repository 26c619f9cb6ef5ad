/**
 * @module test/fuse/owners
 * Who owns what the mount makes: a new file, directory or symbolic link carries the calling
 * process's uid and gid (the request's FUSE context, on svc's libfuse 3 binding; the daemon's ids
 * where the binding gives none), and the group of a parent directory with the set-group-ID bit
 * (a new directory then carries the bit too), as on a local disk. In process, then through the
 * kernel with a caller that changed only its file-system ids (setfsuid, root only).
 */
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { chmodSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuseSupport, type FuseCaller, type FuseStat } from '../../src/native/fuse.js';
import { call, inProcessMount } from '../helpers/fuse-ops.js';
import { fuseSkipReason, shOk, startMountedDaemon, tempDir } from './harness.js';

const DAEMON = { uid: 4000, gid: 4001 };

function inProcess(t: Test) {
  const { ops } = inProcessMount(t, DAEMON);
  /** Run an operation that takes a caller after its callback; rejects on an errno. */
  const as = (caller: FuseCaller | undefined, op: (...args: never[]) => void, ...args: unknown[]) => new Promise<unknown>((resolve, reject) => {
    (op as (...a: unknown[]) => void)(...args, (code: number, value?: unknown) => (code < 0 ? reject(new Error(`errno ${code}`)) : resolve(value)), caller);
  });
  const owner = async (path: string) => {
    const [code, st] = await call<FuseStat>(ops.getattr, path);
    if (code !== 0) throw new Error(`getattr ${path}: ${code}`);
    return { uid: st!.uid, gid: st!.gid, mode: st!.mode & 0o7777 };
  };
  const make = async (caller: FuseCaller | undefined, dir: string) => {
    const fd = await as(caller, ops.create, `${dir}/file`, 0o100644);
    await call(ops.release, `${dir}/file`, fd);
    await as(caller, ops.mkdir, `${dir}/dir`, 0o755);
    await as(caller, ops.symlink, 'file', `${dir}/link`);
  };
  return { ops, as, owner, make };
}

t.test('in process: new entries carry the caller\'s ids, or the daemon\'s when the binding gives none', async (t) => {
  const { owner, make, as, ops } = inProcess(t);
  await as(undefined, ops.mkdir, '/a', 0o777);
  await make({ uid: 1234, gid: 5678 }, '/a');
  for (const name of ['file', 'dir', 'link']) t.same(await owner(`/a/${name}`).then(({ uid, gid }) => ({ uid, gid })), { uid: 1234, gid: 5678 }, name);
  t.equal((await owner('/a/dir')).mode, 0o755, 'no set-group-ID bit from an ordinary parent');
  t.same(await owner('/a').then(({ uid, gid }) => ({ uid, gid })), DAEMON, 'no caller (fuse-native): the daemon\'s ids');
});

t.test('in process: under a set-group-ID directory the group is the directory\'s, and new directories keep the bit', async (t) => {
  const { owner, make, as, ops } = inProcess(t);
  await as({ uid: 10, gid: 20 }, ops.mkdir, '/shared', 0o777);
  t.equal((await call(ops.chown, '/shared', 10, 777))[0], 0);
  t.equal((await call(ops.chmod, '/shared', 0o2775))[0], 0);
  await make({ uid: 1234, gid: 5678 }, '/shared');
  for (const name of ['file', 'dir', 'link']) t.same(await owner(`/shared/${name}`).then(({ uid, gid }) => ({ uid, gid })), { uid: 1234, gid: 777 }, name);
  t.equal((await owner('/shared/dir')).mode, 0o2755, 'the new directory carries the bit');
  await make(undefined, '/shared/dir');
  t.same(await owner('/shared/dir/file').then(({ uid, gid }) => ({ uid, gid })), { uid: DAEMON.uid, gid: 777 }, 'inherited a level down, also without a caller');
});

const skip = fuseSkipReason() ?? (process.getuid?.() !== 0 ? 'changing file-system ids needs root' : undefined);
t.test('through the kernel: a caller that changed its file-system ids owns what it makes', { skip }, async (t) => {
  const build = tempDir('svc-as-fsuid-');
  t.teardown(() => rmSync(build, { recursive: true, force: true }));
  const helper = join(build, 'as-fsuid');
  execFileSync('cc', ['-O2', '-o', helper, join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'as-fsuid.c')]);
  const d = await startMountedDaemon(t);
  // The caller's ids reach the mount only through directories it may search.
  chmodSync(dirname(d.mnt), 0o755);
  const dir = join(d.mnt, 'open');
  await shOk(`mkdir '${dir}' && chmod 777 '${dir}'`);
  execFileSync(helper, ['1234', '5678', dir]);
  const ids = (await shOk(`stat -c '%n %u %g' '${dir}/file' '${dir}/dir' '${dir}/link'`)).trim().split('\n');
  // fuse-native gives no context: the daemon's ids (root's here), as docs/fuse.md says.
  const support = fuseSupport();
  const [uid, gid] = support.available && support.binding === 'libfuse3' ? [1234, 5678] : [0, 0];
  t.same(ids, ['file', 'dir', 'link'].map((n) => `${dir}/${n} ${uid} ${gid}`));
  const shared = join(d.mnt, 'shared');
  await shOk(`mkdir '${shared}' && chgrp 777 '${shared}' && chmod 2777 '${shared}'`);
  execFileSync(helper, ['1234', '5678', shared]);
  t.equal((await shOk(`stat -c '%g %a' '${shared}/file' '${shared}/dir'`)).trim(), '777 644\n777 2755', 'the set-group-ID directory\'s group, and the bit on the new directory');
});
