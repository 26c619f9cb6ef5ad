/**
 * bench/fuse-floor.ts and bench/fuse-floor-ll.c, the bare file systems bench/fuse.ts times as its
 * floors (the mount's binding in JS, and libfuse 3's low-level API in C, the kernel floor): each must behave
 * like a plain directory for what the bench (and a reader checking it by hand) does, and unmount on
 * SIGTERM. The same shell script runs in a plain directory and in the floor's mount; the outputs
 * must agree.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuseSupport } from '../../src/native/fuse.js';
import { buildKernelFloor } from '../../bench/kernel-floor.js';
import { isMounted, shOk, tempDir } from '../fuse/harness.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FLOOR = join(ROOT, 'bench', 'fuse-floor.ts');

/** The floor's tests: `command` and `args` start it serving the mount point given last. */
function floorTests(name: string, command: string, args: string[]) {
  t.test(name, async (t) => {
    const base = tempDir('svc-fuse-floor-');
    const mnt = join(base, 'mnt');
    const plain = join(base, 'plain');
    mkdirSync(mnt);
    mkdirSync(plain);
    let child: ChildProcess | undefined;
    t.teardown(async () => {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      if (isMounted(mnt)) await shOk(`fusermount -uz '${mnt}' || umount -l '${mnt}'`).catch(() => undefined);
      rmSync(base, { recursive: true, force: true });
    });

    await t.test('mounts and prints ready', async (t) => {
      child = spawn(command, [...args, mnt], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      const out = await new Promise<string>((ok, fail) => {
        let text = '';
        child!.stdout!.on('data', (d: Buffer) => {
          text += d.toString();
          if (/^ready$/m.test(text)) ok(text);
        });
        child!.once('exit', (code) => fail(new Error(`the floor exited with ${code}`)));
      });
      t.match(out, /^ready$/m);
      t.ok(isMounted(mnt), 'mounted');
    });

    await t.test('behaves like a plain directory', async (t) => {
      const script = [
        'set -e',
        'printf hello > a; cat a; echo',
        'truncate -s 8 a; od -An -c a',
        'truncate -s 3 a; cat a; echo',
        'truncate -s 6 a; od -An -c a',
        'seq 1 40000 > s; wc -c < s; md5sum < s',
        'printf X | dd of=s bs=1 seek=100000 conv=notrunc 2>/dev/null; md5sum < s',
        'printf Z | dd of=s bs=1 seek=300000 conv=notrunc 2>/dev/null; wc -c < s; md5sum < s',
        'mkdir d; touch d/x; mv a d/b; ls -A d | sort; ls -A | sort',
        'rmdir d 2>/dev/null && echo rmdir-ok || echo rmdir-refused',
        'stat -c "%s %a %F" d/b d/x',
        'chmod 600 d/b; stat -c %a d/b',
        'touch -d 2020-01-02T03:04:05Z d/b; stat -c %Y d/b',
        'ln -s d/b l; readlink l; cat l; echo',
        'cat missing 2>/dev/null && echo found || echo missing',
        'mkdir d 2>/dev/null && echo mkdir-ok || echo mkdir-refused',
        'rm d/b d/x l s; rmdir d; ls -A | wc -l',
      ].join('\n');
      const onDisk = await shOk(script, { cwd: plain });
      const inMount = await shOk(script, { cwd: mnt });
      t.equal(inMount, onDisk);
      t.match(onDisk, /rmdir-refused/);
    });

    await t.test('SIGTERM unmounts and exits 0', async (t) => {
      const code = await new Promise<number | null>((ok) => {
        child!.once('exit', (c) => ok(c));
        child!.kill('SIGTERM');
      });
      t.equal(code, 0);
      t.notOk(isMounted(mnt), 'unmounted');
    });
  });
}

const support = fuseSupport();
if (!support.available) {
  t.pass(`skipped: ${support.reason}`);
} else {
  floorTests(`the binding floor (bench/fuse-floor.ts, ${support.binding})`, process.execPath, ['--import', 'tsx', FLOOR]);
  const buildDir = tempDir('svc-fuse-floor-ll-');
  t.teardown(() => rmSync(buildDir, { recursive: true, force: true }));
  const built = buildKernelFloor(buildDir);
  if ('binary' in built) {
    floorTests('the kernel floor (bench/fuse-floor-ll.c, libfuse 3 low-level)', built.binary, []);
  } else if (process.getuid?.() === 0) {
    t.fail(`the kernel floor cannot be built: ${built.reason} (scripts/system-deps.mjs installs libfuse3-dev as root)`);
  } else {
    t.pass(`kernel floor skipped: ${built.reason}`);
  }
}
