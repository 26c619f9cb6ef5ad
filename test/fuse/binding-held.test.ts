/**
 * @module test/fuse/binding-held
 * The libfuse 3 binding's bookkeeping around requests JS is slow to answer, through the kernel,
 * with a small in-memory file system (written to a temporary directory at run time) whose renames
 * of names containing "slowren" answer late, and of names containing "failren" fail late:
 * - a request held behind an unlink or rename (a stat or close of a file below a directory being
 *   renamed) is answered within the mount's request timeout even when JS answers the rename much
 *   later: it used to wait for that answer, unkillable (D state), forever if it never came;
 * - NativeMount.unmount() called twice: both calls settle (the first used to hang);
 * - a rename over an open file slower than the request timeout, the file closed meanwhile: the file
 *   keeps a name until the rename settles (its hidden name was unlinked at the close, and when the
 *   rename failed, opening the file at its path answered ENOENT until the kernel's cache expired);
 *   one that succeeds unlinks the hidden name once it is done; so it does when the kernel forgot
 *   the file meanwhile, when its directory was removed meanwhile (its hidden name moved to the
 *   root), and when the hidden file was renamed over (hidden) again meanwhile; and the daemon
 *   survives the file renamed back to its name, closed and forgotten meanwhile; and a hide (of an
 *   unlink or a rename over an open file) slower than the timeout keeps the file, closed and
 *   forgotten meanwhile, until its hidden name is unlinked.
 * Found in reviews of the binding; each test failed before its fix.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuseSupport, fuseBinding } from '../../src/native/fuse.js';
import { fuseSkipReason, isMounted, sh, shOk, tempDir } from './harness.js';
import { collectLines } from '../helpers/lines.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TIMEOUT_MS = 400;

const support = fuseSupport();
const skip = !support.available ? `FUSE tests skipped: ${support.reason}`
  : fuseBinding() !== 'libfuse3' ? 'the libfuse 3 addon is not built' : fuseSkipReason();
if (skip) console.log(`# ${skip}`);

/** An in-memory file system whose renames of names containing "slowren" answer after `slowMs`. */
const PROBE = `
import { constants } from 'node:os';
import { NativeMount } from ${JSON.stringify(join(ROOT, 'src', 'native', 'fuse.js'))};
const [dir, timeoutArg, slowArg] = process.argv.slice(2);
const E = constants.errno;
const say = (line) => process.stdout.write(line + '\\n');
const files = new Map([['/', { mode: 0o040755, data: Buffer.alloc(0) }]]);
const handles = new Map();
const hides = new Map();
let nextFd = 10;
const statOf = (e) => ({ mode: e.mode, uid: 0, gid: 0, size: e.data.length, nlink: 1, mtime: 0, atime: 0, ctime: 0 });
const parent = (p) => p.slice(0, p.lastIndexOf('/')) || '/';
const ok = (cb) => cb(0);
const ops = {
  statfs: (_p, cb) => cb(0, { bsize: 4096, frsize: 4096, blocks: 1, bfree: 1, bavail: 1, files: 1, ffree: 1, favail: 1, fsid: 1, flag: 0, namemax: 255 }),
  getattr: (p, cb) => (files.has(p) ? cb(0, statOf(files.get(p))) : cb(-E.ENOENT)),
  readdir: (p, cb) => {
    const names = [...files.keys()].filter((q) => q !== '/' && parent(q) === p).map((q) => q.slice(q.lastIndexOf('/') + 1));
    cb(0, ['.', '..', ...names]);
  },
  open: (p, _f, cb) => { if (!files.has(p)) return cb(-E.ENOENT); handles.set(nextFd, p); cb(0, nextFd++); },
  create: (p, mode, cb) => { files.set(p, { mode, data: Buffer.alloc(0) }); handles.set(nextFd, p); cb(0, nextFd++, statOf(files.get(p))); },
  read: (_p, _fd, _b, _l, _pos, cb) => cb(0),
  write: (_p, _fd, _b, len, _pos, cb) => cb(len),
  truncate: (_p, _s, cb) => ok(cb), ftruncate: (_p, _fd, _s, cb) => ok(cb),
  flush: (_p, _fd, cb) => ok(cb), fsync: (_p, _d, _fd, cb) => ok(cb), fsyncdir: (_p, _d, _fd, cb) => ok(cb),
  release: (_p, fd, cb) => { handles.delete(fd); cb(0); },
  unlink: (p, cb) => { if (p.includes('.fuse_hidden')) say('unlinked ' + p); cb(files.delete(p) ? 0 : -E.ENOENT); },
  rename: (src, dest, cb, hiding) => {
    // A hide (the binding renaming an open target aside) is remembered, to be undone as svc's
    // operations undo it when the rename it was for fails (even if the hidden name was unlinked).
    // A file hidden again keeps the name it was first hidden from.
    if (dest.includes('.fuse_hidden') && files.has(src)) {
      const earlier = hides.get(src);
      hides.delete(src);
      hides.set(dest, { from: earlier ? earlier.from : src, entry: files.get(src) });
    }
    // A hide for a rename leaves the file at its name too, as svc's operations leave the stored
    // file there until the rename replaces it: a lookup of the name while the rename is under way
    // (the kernel's cached entry expired) finds it, as in svc.
    const keep = hiding === 'rename';
    const run = () => {
      say('renamed ' + src + ' ' + dest);
      for (const [p, f] of [...files]) {
        if (p !== src && !p.startsWith(src + '/')) continue;
        if (!keep) files.delete(p);
        files.set(dest + p.slice(src.length), f);
      }
      cb(0);
    };
    const fail = () => {
      for (const [hidden, { from, entry }] of hides) {
        if (from !== dest) continue;
        files.delete(hidden);
        files.set(from, entry);
        hides.delete(hidden);
      }
      say('refused ' + src + ' ' + dest);
      cb(-E.EACCES);
    };
    if (src.includes('failren')) return void setTimeout(fail, Number(slowArg));
    if (src.includes('slowren')) return void setTimeout(run, Number(slowArg));
    run();
  },
  link: (_s, _d, cb) => cb(-E.EPERM), mknod: (_p, _m, _d, cb) => cb(-E.EPERM), symlink: (_t, _p, cb) => cb(-E.EPERM),
  readlink: (_p, cb) => cb(-E.EINVAL),
  mkdir: (p, mode, cb) => { files.set(p, { mode: 0o040000 | mode, data: Buffer.alloc(0) }); cb(0); },
  rmdir: (p, cb) => { say('rmdir ' + p); cb(files.delete(p) ? 0 : -E.ENOENT); },
  chmod: (_p, _m, cb) => ok(cb), chown: (_p, _u, _g, cb) => ok(cb), utimens: (_p, _a, _m, cb) => ok(cb),
};
const mount = new NativeMount(dir, ops, { cacheSeconds: 0.5, defaultPermissions: true, fsname: 'svc:review', requestTimeoutMs: Number(timeoutArg), spinMicros: 30 });
process.on('SIGTERM', () => void mount.unmount().then(() => say('unmounted')));
process.on('SIGHUP', () => {
  void mount.unmount().then(() => say('unmount1 resolved'));
  void mount.unmount().then(() => say('unmount2 resolved'));
});
// Keeps the process alive after the unmount, so an unsettled promise is told from an exit.
setInterval(() => {}, 1000);
await mount.mount();
say('ready ' + mount.binding);
`;

/** Python for the probe scripts: `opens(name)`, whether `name` in the mount opens ('opens') or why not. */
const pyOpens = (mnt: string) => `def opens(name):
    try:
        os.close(os.open('${mnt}/' + name, os.O_RDONLY))
        return 'opens'
    except OSError as e:
        return e.strerror`;

/** Python lines: `fd` holds `dst` open, and `mv` renames `src` over it in the background (the rename under way). */
const pyRenameOverOpen = (mnt: string, src: string, dst: string) => `fd = os.open('${mnt}/${dst}', os.O_RDONLY)
mv = subprocess.Popen(['mv', '-T', '${mnt}/${src}', '${mnt}/${dst}'], stderr=subprocess.DEVNULL)`;
/** Python for the probe scripts: print the hidden names left in the mount's root, sorted. */
const pyHiddenNames = (mnt: string) => `print(sorted(n for n in os.listdir('${mnt}') if n.startswith('.fuse_hidden')))`;

interface Probe { child: ChildProcess; lines: string[]; exited: Promise<unknown> }

async function startProbe(t: { teardown(fn: () => unknown): void }, slowMs: number): Promise<{ probe: Probe; mnt: string }> {
  const base = tempDir('svc-review-');
  const mnt = join(base, 'mnt');
  mkdirSync(mnt);
  const script = join(base, 'probe.mts');
  writeFileSync(script, PROBE);
  const child = spawn(process.execPath, ['--import', 'tsx', script, mnt, String(TIMEOUT_MS), String(slowMs)], {
    cwd: ROOT, env: { ...process.env, SVC_FUSE_BINDING: 'libfuse3' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = collectLines(child.stdout!);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise((ok) => child.once('exit', ok));
  const probe = { child, lines, exited };
  t.teardown(async () => {
    // SIGKILL ends the connection: whatever waits in the kernel is let go.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    if (isMounted(mnt)) await sh(`fusermount3 -uz ${mnt} || umount -l ${mnt}`);
  });
  for (let i = 0; i < 200 && !lines.some((l) => l.startsWith('ready ')); i++) {
    if (child.exitCode !== null) throw new Error(`probe exited: ${stderr}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
  if (!lines.some((l) => l.startsWith('ready '))) throw new Error(`probe not ready: ${stderr}`);
  return { probe, mnt };
}

t.test('requests JS answers late', { skip }, async (t) => {
  t.test('a request held behind a slow rename is still answered within the mount\'s timeout', async (t) => {
    // JS takes 10 request timeouts over a directory rename. The rename itself fails with ETIMEDOUT
    // after one; an fstat of an open file below the directory, sent meanwhile, is held (held_t)
    // until JS has answered the rename: 10 timeouts, unkillable (a rename JS never answers: forever).
    const slowMs = TIMEOUT_MS * 10;
    const { mnt } = await startProbe(t, slowMs);
    await shOk(`mkdir ${mnt}/slowren-d && touch ${mnt}/slowren-d/f`);
    const out = await shOk(`python3 -c "
import os, time, subprocess
fd = os.open('${mnt}/slowren-d/f', os.O_RDONLY)
time.sleep(1.0)
mv = subprocess.Popen(['mv', '${mnt}/slowren-d', '${mnt}/other-d'], stderr=subprocess.DEVNULL)
time.sleep(0.7)  # the kernel's cached attributes have expired: fstat asks the daemon
t = time.time()
os.fstat(fd)
print(int((time.time() - t) * 1000))
mv.wait()
"`, { timeoutMs: slowMs * 3 });
    const took = Number(out.trim());
    t.ok(took < TIMEOUT_MS * 2, `fstat answered in ${took} ms (the mount's timeout is ${TIMEOUT_MS} ms; the rename took ${slowMs} ms in JS)`);
  });

  t.test('a rename over an open file that outlasts the timeout keeps the file, closed meanwhile, at a name', async (t) => {
    // A rename over an open file waits while JS does it; a close of the file meanwhile waits
    // behind it (held_t), up to the request timeout. Past it, the close ran and unlinked the
    // hidden name while the rename was still under way: when the rename then failed, the kernel
    // still named the file at its path, and opening it answered ENOENT until its cache expired.
    // The hidden name now stays until the rename settles; it goes after a rename that succeeded.
    const slowMs = TIMEOUT_MS * 3;
    const { probe, mnt } = await startProbe(t, slowMs);
    await shOk(`touch ${mnt}/failren-a ${mnt}/b ${mnt}/slowren-c ${mnt}/d`);
    const out = await shOk(`python3 -c "
import os, time, subprocess
${pyOpens(mnt)}
def over(src, dst):
    fd = os.open('${mnt}/' + dst, os.O_RDONLY)
    mv = subprocess.Popen(['mv', '-T', '${mnt}/' + src, '${mnt}/' + dst], stderr=subprocess.DEVNULL)
    time.sleep(0.1)  # the target hidden, the rename under way in JS
    os.close(fd)     # its last close, meanwhile: held, then run once the timeout has passed
    mv.wait()        # answered ETIMEDOUT, JS still at it
    print(dst, opens(dst))
    time.sleep(${(slowMs * 1.5) / 1000})  # JS done
    print(dst, opens(dst))
over('failren-a', 'b')
over('slowren-c', 'd')
${pyHiddenNames(mnt)}
"`, { timeoutMs: slowMs * 20 });
    t.same(out.trim().split('\n'), ['b opens', 'b opens', 'd opens', 'd opens', '[]'],
      'b opens while the failing rename is under way and after it failed; d after its rename; no hidden name left');
    const refused = probe.lines.indexOf('refused /failren-a /b');
    t.ok(refused > 0, 'the rename reached JS and failed there');
    t.notOk(probe.lines.slice(0, refused).some((l) => l.startsWith('unlinked ')), 'no hidden name was unlinked while the failing rename was under way');
    const renamed = probe.lines.indexOf('renamed /slowren-c /d');
    t.ok(renamed > 0 && probe.lines.slice(renamed).some((l) => l.startsWith('unlinked /.fuse_hidden')), 'the replaced file\'s hidden name was unlinked after its rename');
  });

  const hiddenUnlinks = (lines: string[]) => lines.filter((l) => l.startsWith('unlinked /') && l.includes('.fuse_hidden'));

  t.test('a rename over an open file that the kernel forgets before the rename settles still unlinks its hidden name', async (t) => {
    // Past the timeout, d's last close leaves the hidden name to the rename; a lookup of d after
    // the entry cache expired makes the kernel forget d's node. The binding used to free the node
    // then, and the rename, finding no node by the hidden name, never unlinked it (from a review).
    const slowMs = TIMEOUT_MS * 6;
    const { probe, mnt } = await startProbe(t, slowMs);
    await shOk(`touch ${mnt}/slowren-c ${mnt}/d`);
    const out = await shOk(`python3 -c "
import os, time, subprocess
${pyRenameOverOpen(mnt, 'slowren-c', 'd')}
time.sleep(0.1)
os.close(fd)
mv.wait()
time.sleep(0.7)  # the entry cache (0.5 s) expired
try:
    os.stat('${mnt}/d')
except OSError:
    pass
time.sleep(${(slowMs * 1.5) / 1000})  # the rename is done in JS
${pyHiddenNames(mnt)}
"`, { timeoutMs: slowMs * 20 });
    t.ok(probe.lines.includes('renamed /slowren-c /d'), 'the rename succeeded in JS');
    t.equal(hiddenUnlinks(probe.lines).length, 1, 'the replaced file\'s hidden name was unlinked');
    t.equal(out.trim(), '[]', 'no hidden name is left');
  });

  t.test('a rename over an open file whose directory is removed before the rename settles: its last close unlinks the hidden name', async (t) => {
    // The removal moves the hidden name to the root (rehome_hidden); the rename used to look the
    // file up under its old directory, miss it, and leave it marked for good (from a review).
    const slowMs = TIMEOUT_MS * 3;
    const { probe, mnt } = await startProbe(t, slowMs);
    await shOk(`mkdir ${mnt}/sub && touch ${mnt}/slowren-c ${mnt}/sub/d`);
    await shOk(`python3 -c "
import os, time, subprocess
${pyRenameOverOpen(mnt, 'slowren-c', 'sub/d')}
mv.wait()  # ETIMEDOUT, JS still renaming
os.rmdir('${mnt}/sub')
time.sleep(${(slowMs * 1.5) / 1000})  # the rename is done in JS
os.close(fd)  # the last close: now the hidden name goes
time.sleep(0.5)
"`, { timeoutMs: slowMs * 20 });
    t.ok(probe.lines.includes('rmdir /sub'), 'sub was removed');
    t.ok(probe.lines.includes('renamed /slowren-c /sub/d'), 'the rename succeeded in JS');
    t.same(hiddenUnlinks(probe.lines).map((l) => l.replace(/[0-9a-f]{16}$/, 'N')), ['unlinked /.fuse_hiddenN'], 'the hidden name, moved to the root, was unlinked at the last close');
  });

  t.test('a hidden file renamed over (hidden) again while the first rename is under way: the first rename keeps it', async (t) => {
    // The second rename used to clear the first's mark (a flag, not a count): the last close then
    // unlinked the hidden name under the first rename, and its failure named another node d.
    const slowMs = TIMEOUT_MS * 6;
    const { probe, mnt } = await startProbe(t, slowMs);
    await shOk(`touch ${mnt}/failren-a ${mnt}/b ${mnt}/d`);
    const out = await shOk(`python3 -c "
import os, time, subprocess
${pyOpens(mnt)}
${pyRenameOverOpen(mnt, 'failren-a', 'd')}
mv.wait()  # ETIMEDOUT, JS still at it
x = [n for n in os.listdir('${mnt}') if n.startswith('.fuse_hidden')][0]
subprocess.run(['mv', '-T', '${mnt}/b', '${mnt}/' + x], stderr=subprocess.DEVNULL)
os.close(fd)  # d's last close, the first rename still under way
time.sleep(${(slowMs * 1.5) / 1000})  # the first rename failed
print('d', opens('d'))
"`, { timeoutMs: slowMs * 20 });
    const refused = probe.lines.indexOf('refused /failren-a /d');
    t.ok(refused > 0, 'the first rename failed in JS');
    t.same(probe.lines.slice(0, refused).filter((l) => l.startsWith('unlinked ')), [], 'no hidden name was unlinked while the failing rename was under way');
    t.equal(out.trim(), 'd opens', 'd opens after the rename over it failed');
  });

  const asRoot = { skip: process.getuid?.() === 0 ? false : 'drop_caches needs root' };

  t.test('a hide that outlasts the timeout, the file closed and forgotten meanwhile: a rename over it still unlinks its hidden name', asRoot, async (t) => {
    // The target's name contains "slowren": its hide (renamed aside) answers late. The node was
    // kept only from the hide's answer on, so the kernel's forget freed it first, and the hide,
    // then the rename, found nothing to unlink (a third review).
    const slowMs = TIMEOUT_MS * 6;
    const { probe, mnt } = await startProbe(t, slowMs);
    await shOk(`touch ${mnt}/b ${mnt}/slowren-d`);
    const out = await shOk(`python3 -c "
import os, time, subprocess
${pyRenameOverOpen(mnt, 'b', 'slowren-d')}
mv.wait()  # ETIMEDOUT: the hide is still under way in JS
os.close(fd)  # its last close, before the hide is done
time.sleep(0.2)
open('/proc/sys/vm/drop_caches', 'w').write('2')  # the kernel forgets the file
time.sleep(${(slowMs * 1.5) / 1000})  # the hide and the rename are done in JS
${pyHiddenNames(mnt)}
"`, { timeoutMs: slowMs * 20 });
    t.ok(probe.lines.includes('renamed /b /slowren-d'), 'the rename succeeded in JS');
    t.equal(hiddenUnlinks(probe.lines).length, 1, 'the replaced file\'s hidden name was unlinked');
    t.equal(out.trim(), '[]', 'no hidden name is left');
  });

  t.test('an unlink of an open file whose hide outlasts the timeout, the file closed and forgotten meanwhile: its hidden name is unlinked', asRoot, async (t) => {
    const slowMs = TIMEOUT_MS * 6;
    const { probe, mnt } = await startProbe(t, slowMs);
    await shOk(`touch ${mnt}/slowren-d`);
    const out = await shOk(`python3 -c "
import os, time, subprocess
fd = os.open('${mnt}/slowren-d', os.O_RDONLY)
rm = subprocess.Popen(['rm', '-f', '${mnt}/slowren-d'], stderr=subprocess.DEVNULL)
rm.wait()  # ETIMEDOUT: the hide is still under way in JS
os.close(fd)
time.sleep(0.2)
open('/proc/sys/vm/drop_caches', 'w').write('2')
time.sleep(${(slowMs * 1.5) / 1000})
${pyHiddenNames(mnt)}
"`, { timeoutMs: slowMs * 20 });
    t.ok(probe.lines.some((l) => l.startsWith('renamed /slowren-d /.fuse_hidden')), 'the hide was done in JS');
    t.equal(out.trim(), '[]', 'no hidden name is left');
  });

  t.test('a hidden file renamed back to its name, closed and forgotten before the rename over it settles: the daemon lives on', asRoot, async (t) => {
    // The rename over it unlinked what stood at the target name, the file itself, and freed it;
    // the binding then read the freed node and freed it again (the daemon aborted: from a review).
    const slowMs = TIMEOUT_MS * 8;
    const { probe, mnt } = await startProbe(t, slowMs);
    await shOk(`touch ${mnt}/slowren-a ${mnt}/d`);
    const r = await sh(`python3 -c "
import os, time, subprocess
${pyRenameOverOpen(mnt, 'slowren-a', 'd')}
mv.wait()  # ETIMEDOUT, JS still renaming; d is hidden
x = [n for n in os.listdir('${mnt}') if n.startswith('.fuse_hidden')][0]
time.sleep(0.7)  # the entry cache (0.5 s) expired
try:
    os.stat('${mnt}/d')  # gone in JS: the kernel drops its entry for d
except OSError:
    pass
os.rename('${mnt}/' + x, '${mnt}/d')  # the hidden file is named d again
os.close(fd)  # its last close, left to the rename
time.sleep(0.2)
open('/proc/sys/vm/drop_caches', 'w').write('2')  # the kernel forgets the file
time.sleep(${(slowMs * 1.5) / 1000})  # the slow rename is done in JS
print(sorted(os.listdir('${mnt}')))
"`, { timeoutMs: slowMs * 20 });
    t.ok(probe.lines.includes('renamed /slowren-a /d'), 'the slow rename succeeded in JS');
    t.equal(r.code, 0, `the mount answers after it: ${r.stderr.trim().split('\n').at(-1) ?? ''}`);
    t.equal(probe.child.signalCode, null, 'the daemon was not killed by a signal');
    t.equal(probe.child.exitCode, null, 'the daemon is still running');
  });

  t.test('unmount() called twice: both calls settle', async (t) => {
    const { probe, mnt } = await startProbe(t, 0);
    probe.child.kill('SIGHUP');
    for (let i = 0; i < 200 && !(probe.lines.includes('unmount1 resolved') && probe.lines.includes('unmount2 resolved')); i++) {
      await new Promise((ok) => setTimeout(ok, 50));
    }
    t.notOk(isMounted(mnt), 'detached');
    t.ok(probe.lines.includes('unmount2 resolved'), 'the second call settled');
    t.ok(probe.lines.includes('unmount1 resolved'), 'the first call settled');
  });
});
