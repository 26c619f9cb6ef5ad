/**
 * @module test/fuse/dir-times
 * A directory's mtime and ctime move when a name in it is made, removed or renamed, as on ext4,
 * through the daemon's mount and a remote mount: Python's import system rescans a directory on
 * sys.path only when its mtime moved (a module written after a scan was not found), and so do
 * make and git's untracked cache. A time set on a directory after its files were written (rsync,
 * `cp -a`, `tar x`) stays, although the mount commits the directory and its files together.
 */
import t from 'tap';
import { existsSync, mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { eventually, fuseSkipReason, sh, shOk, startMountedDaemon, startRemoteMount, tempDir, type MountProcess } from './harness.js';
import { bytes } from '../helpers/daemon.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

/** Run a Python probe (`dir` is sys.argv[1], cwd; `args` follow it) in a child; its stdout lines. */
async function py(t: { teardown(fn: () => unknown): void }, dir: string, code: string, args: string[] = [], timeoutS = 20): Promise<string[]> {
  const tmp = tempDir('svc-dir-times-py-');
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
  const file = join(tmp, 'probe.py');
  writeFileSync(file, `import os, sys, time\nos.chdir(sys.argv[1])\n${code}\n`);
  // SIGKILL: a process waiting for a FUSE answer only dies of a fatal signal.
  const quoted = [file, dir, ...args].map((a) => `'${a}'`).join(' ');
  const r = await sh(`timeout -s KILL ${timeoutS} python3 ${quoted}`, { timeoutMs: (timeoutS + 5) * 1000 });
  if (r.code !== 0) throw new Error(`probe exited ${r.code}: ${r.stderr}`);
  return r.stdout.trim().split('\n');
}

let n = 0;
const unique = (tag: string) => `${tag}-${process.pid}-${n++}`;

/**
 * Each change through the mount, with the directories set back to 2001 before it: the lines say
 * whether each directory's mtime and ctime moved past that (ctime: past the probe's start).
 */
const PER_CHANGE = `
OLD = 978307200
def back(*dirs):
    global since
    for d in dirs: os.utime(d, (OLD, OLD))
    time.sleep(0.01)
    since = time.time_ns() - 2_000_000   # the ctime the utime set is 10 ms older
def moved(d):
    s = os.stat(d)
    return s.st_mtime_ns > OLD * 10**9 and s.st_ctime_ns >= since
def report(label, *dirs):
    print(label, ' '.join('moved' if moved(d) else 'kept' for d in dirs), flush=True)
D = sys.argv[2]
os.mkdir(D); os.chdir(D)
os.mkdir('a'); os.mkdir('b')
back('a'); open('a/f', 'w').write('1'); report('create', 'a')
back('a'); open('a/f', 'w').write('2'); report('rewrite', 'a')
back('a', 'b'); os.rename('a/f', 'b/g'); report('rename', 'a', 'b')
open('a/h', 'w').write('h')
back('a', 'b'); os.replace('a/h', 'b/g'); report('replace', 'a', 'b')
back('b'); os.unlink('b/g'); report('unlink', 'b')
back('a'); os.mkdir('a/sub'); report('mkdir', 'a')
back('a'); os.rmdir('a/sub'); report('rmdir', 'a')
back('a'); os.symlink('target', 'a/link'); report('symlink', 'a')
back('a'); os.chmod('a', 0o750); s = os.stat('a')
print('chmod', 'mtime', 'kept' if s.st_mtime_ns == OLD * 10**9 else 'moved', 'ctime', 'moved' if s.st_ctime_ns >= since else 'kept', flush=True)
`;

const EXPECTED = [
  'create moved', 'rewrite kept', 'rename moved moved', 'replace moved moved', 'unlink moved', 'mkdir moved', 'rmdir moved',
  'symlink moved', 'chmod mtime kept ctime moved',
];

/**
 * Python's import finds a module written into a directory it scanned already (without
 * invalidate_caches). sys.argv[2]: the directory to make; sys.argv[3], if given: a file to create
 * once it scanned, and the module is then written by the test (another face), else by the probe.
 */
const IMPORT_AFTER_SCAN = `
d = sys.argv[2]
os.mkdir(d)
sys.path.insert(0, os.path.join(os.getcwd(), d))
try:
    import late_module
    print('found before it was written', flush=True)
except ModuleNotFoundError:
    print('not there yet', flush=True)
time.sleep(0.02)
if len(sys.argv) > 3:
    open(sys.argv[3], 'w').close()   # tell the test to write it by RPC
    for _ in range(60):
        try:
            import late_module
            break
        except ModuleNotFoundError:
            time.sleep(0.05)
else:
    with open(os.path.join(d, 'late_module.py'), 'w') as f: f.write('X = 42\\n')
try:
    import late_module
    print('imported', late_module.X, flush=True)
except ModuleNotFoundError:
    print('ModuleNotFoundError', flush=True)
`;

t.test('directory times through the mounts', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const r: MountProcess = await startRemoteMount(t, d.url);
  for (const [label, mnt] of [['daemon mount', d.mnt], ['remote mount', r.mnt]] as const) {
    t.test(`${label}: a name made, removed or renamed in a directory moves its mtime and ctime; a rewrite does not`, async (t) => {
      const lines = await py(t, mnt, PER_CHANGE, [unique('per-change')]);
      t.same(lines, EXPECTED, '(a rewrite and a chmod leave the mtime; a chmod moves the ctime)');
    });

    t.test(`${label}: Python imports a module written after it scanned the directory`, async (t) => {
      const lines = await py(t, mnt, IMPORT_AFTER_SCAN, [unique('imports')]);
      t.same(lines, ['not there yet', 'imported 42']);
    });

    t.test(`${label}: and one another face wrote meanwhile`, async (t) => {
      const dir = unique('imports-rpc');
      const tmp = tempDir('svc-dir-times-flag-');
      t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
      const flag = join(tmp, 'scanned');
      const probe = py(t, mnt, IMPORT_AFTER_SCAN, [dir, flag]);
      t.ok(await eventually(async () => existsSync(flag), 10_000), 'the probe scanned the directory');
      await d.rpc('write', { path: `/${dir}/late_module.py`, content: bytes('X = 42\n') });
      t.same(await probe, ['not there yet', 'imported 42']);
    });

    t.test(`${label}: the root's mtime moves too`, async (t) => {
      const before = (await stat(mnt)).mtimeMs;
      await new Promise((res) => setTimeout(res, 20));
      await shOk(`touch '${mnt}/${unique('at-root')}'`);
      t.ok((await eventually(async () => (await stat(mnt)).mtimeMs > before || undefined, 2000)) === true, 'after a file made at the root');
    });
  }

  t.test('daemon mount: a directory\'s time set after its files were written stays (cp -a, rsync -a, tar x)', async (t) => {
    const src = tempDir('svc-dir-times-src-');
    t.teardown(() => rmSync(src, { recursive: true, force: true }));
    const old = new Date('2001-01-01T00:00:00Z');
    const older = new Date('2000-06-01T00:00:00Z');
    mkdirSync(join(src, 'tree/sub'), { recursive: true });
    for (const f of ['tree/a', 'tree/b', 'tree/sub/c']) {
      writeFileSync(join(src, f), f);
      utimesSync(join(src, f), old, old);
    }
    utimesSync(join(src, 'tree/sub'), older, older);
    utimesSync(join(src, 'tree'), old, old);
    const mtime = async (p: string) => (await stat(p)).mtime.toISOString();
    for (const [tool, cmd] of [
      ['cp -a', (to: string) => `cp -a '${src}/tree' '${to}'`],
      ['rsync -a', (to: string) => `rsync -a '${src}/tree/' '${to}/'`],
      ['tar x', (to: string) => `mkdir '${to}' && tar -C '${src}/tree' -cf - . | tar -C '${to}' -xf -`],
    ] as const) {
      const to = join(d.mnt, unique('copied'));
      const r = await sh(cmd(to));
      if (r.code !== 0 && tool === 'rsync -a' && /not found/.test(r.stderr)) continue;
      t.equal(r.code, 0, `${tool}: ${r.stderr}`);
      t.equal(await mtime(to), old.toISOString(), `${tool}: the directory keeps its time`);
      t.equal(await mtime(join(to, 'sub')), older.toISOString(), `${tool}: and the one inside it`);
      await shOk(`sync -f '${to}'`); // the batch is committed: the store kept them too
      t.equal(await mtime(to), old.toISOString(), `${tool}: once committed`);
      t.equal(await mtime(join(to, 'sub')), older.toISOString(), `${tool}: once committed, inside`);
      await shOk(`touch '${to}/later'`);
      t.not(await mtime(to), old.toISOString(), `${tool}: a file made afterwards moves it`);
    }
  });
});
