/**
 * @module bench/fuse
 * `npm run bench:fuse`: the FUSE mount side by side with the plain disk, same operations, same run.
 * A daemon (`node bin/svc serve --mount`) runs as a child process; this process drives both sides
 * with ordinary fs calls (safe: it does not serve the mount). Prints a markdown table.
 *
 * - sequential write of a 256 MiB file in 1 MiB blocks (the mount's close is a durable commit, so
 *   the disk side is timed with fsync before close, and without for reference). Every round (on the
 *   mount and on the disk alike) writes content never written before: each block carries its index
 *   and a per-round seed, so no chunk is already stored and the mount's figure is a write of new
 *   content, not a rewrite that deduplicates (figures before 2026-11-24's "new content" run measured
 *   a rewrite in their best round);
 * - sequential read of it in 1 MiB blocks, page cache cold (drop_caches, when permitted) and warm;
 * - 4 KiB reads at random offsets;
 * - create, stat and delete 2,000 small files;
 * - `git status` in a 2,000-file repository.
 *
 * Options: --size-mib N (default 256), --files N (default 2000). Skips with a reason when FUSE
 * cannot work here.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import {
  closeSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, statSync, unlinkSync, writeFileSync, writeSync,
  existsSync, readFileSync,
} from 'node:fs';
import { tmpdir, cpus, totalmem } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuseSupport } from '../src/native/fuse.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MiB = 1024 * 1024;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const SIZE_MIB = arg('size-mib', 256);
const FILES = arg('files', 2000);
const RANDOM_READS = 5000;

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

function time(fn: () => void): number {
  const start = process.hrtime.bigint();
  fn();
  return ms(start);
}

/** Best (smallest) of `n` runs. */
function best(n: number, fn: () => number): number {
  let b = Infinity;
  for (let i = 0; i < n; i++) b = Math.min(b, fn());
  return b;
}

function dropCaches(): boolean {
  try {
    execFileSync('sync');
    writeFileSync('/proc/sys/vm/drop_caches', '3');
    return true;
  } catch {
    return false;
  }
}

/** Rounds of {@link seqWrite} so far: each one's seed, so no round repeats another's bytes. */
let writeRounds = 0;

function seqWrite(path: string, fsync: boolean): number {
  const block = Buffer.alloc(MiB);
  for (let i = 0; i < MiB; i += 4) block.writeUInt32LE((i * 2654435761) >>> 0, i);
  const seed = (++writeRounds * 2246822519 + process.pid) >>> 0;
  block.writeUInt32LE(seed, 4);
  return time(() => {
    const fd = openSync(path, 'w');
    for (let i = 0; i < SIZE_MIB; i++) {
      // Every block differs, and from every block of every other round: nothing deduplicates.
      block.writeUInt32LE(i, 0);
      writeSync(fd, block, 0, MiB);
    }
    if (fsync) fsyncSync(fd);
    closeSync(fd);
  });
}

function seqRead(path: string): number {
  const buf = Buffer.alloc(MiB);
  return time(() => {
    const fd = openSync(path, 'r');
    let total = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, MiB, null);
      if (n === 0) break;
      total += n;
    }
    closeSync(fd);
    if (total !== SIZE_MIB * MiB) throw new Error(`read ${total} bytes from ${path}`);
  });
}

function randomReads(path: string): number {
  const buf = Buffer.alloc(4096);
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0);
  const blocks = (SIZE_MIB * MiB) / 4096;
  return time(() => {
    const fd = openSync(path, 'r');
    for (let i = 0; i < RANDOM_READS; i++) readSync(fd, buf, 0, 4096, (next() % blocks) * 4096);
    closeSync(fd);
  });
}

function smallFiles(dir: string): { create: number; stat: number; remove: number } {
  mkdirSync(dir, { recursive: true });
  const body = Buffer.alloc(1024, 'x');
  const names = Array.from({ length: FILES }, (_, i) => join(dir, `f${i}.txt`));
  const create = time(() => names.forEach((n) => writeFileSync(n, body)));
  const stat = time(() => names.forEach((n) => statSync(n)));
  const remove = time(() => names.forEach((n) => unlinkSync(n)));
  return { create, stat, remove };
}

function gitRepo(dir: string): void {
  for (let i = 0; i < FILES; i++) {
    const sub = join(dir, `d${i % 20}`, `e${i % 5}`);
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, `f${i}.txt`), `file ${i}\n`.repeat(1 + (i % 30)));
  }
  const git = ['-c', 'user.email=b@example.com', '-c', 'user.name=bench', '-c', 'init.defaultBranch=main'];
  execFileSync('git', [...git, 'init', '-q'], { cwd: dir });
  execFileSync('git', [...git, 'add', '-A'], { cwd: dir });
  execFileSync('git', [...git, 'commit', '-qm', 'bench'], { cwd: dir });
}

function gitStatus(dir: string): number {
  return best(3, () => time(() => execFileSync('git', ['status', '--porcelain'], { cwd: dir })));
}

async function startDaemon(dataDir: string, mnt: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'svc'), 'serve', '--port', '0', '--data-dir', dataDir, '--mount', mnt, '--log-level', 'warn'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error('the daemon did not mount within 20 s')), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (/svc mounted at/.test(out)) {
        clearTimeout(timer);
        ok();
      }
    });
    child.once('exit', (code) => fail(new Error(`the daemon exited with ${code}`)));
  });
  child.removeAllListeners('exit');
  return child;
}

function stopDaemon(child: ChildProcess, mnt: string): Promise<void> {
  return new Promise((ok) => {
    child.once('exit', () => ok());
    child.kill('SIGTERM');
    setTimeout(() => {
      child.kill('SIGKILL');
      try {
        execFileSync('fusermount', ['-uz', mnt]);
      } catch { /* not mounted any more */ }
    }, 30_000).unref();
  });
}

const fmtMs = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));
const mibs = (v: number) => ((SIZE_MIB / v) * 1000).toFixed(0);

async function main(): Promise<void> {
  const support = fuseSupport();
  if (!support.available) {
    console.log(`bench:fuse skipped: ${support.reason}`);
    return;
  }
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is missing: run `npx tsc -p tsconfig.json` first');
  const base = mkdtempSync(join(tmpdir(), 'svc-bench-fuse-'));
  const disk = join(base, 'disk');
  const mnt = join(base, 'mnt');
  mkdirSync(disk);
  const daemon = await startDaemon(join(base, 'data'), mnt);
  const rows: [string, string, string, string, string][] = [];
  const row = (name: string, d: string, m: string, ratio: string, target = '') => {
    rows.push([name, d, m, ratio, target]);
    console.error(`  ${name}: disk ${d}, mount ${m} (${ratio})`);
  };
  try {
    console.error(`bench:fuse: ${SIZE_MIB} MiB file, ${FILES} small files; disk ${disk}, mount ${mnt}`);
    // Sequential write: the mount's close commits durably; compare with the disk's fsync'd write.
    const dWriteSync = best(2, () => seqWrite(join(disk, 'big.bin'), true));
    const dWrite = best(2, () => seqWrite(join(disk, 'big.bin'), false));
    const mWrite = best(2, () => seqWrite(join(mnt, 'big.bin'), false));
    row(`sequential write ${SIZE_MIB} MiB, 1 MiB blocks (MiB/s), durable on both sides`, mibs(dWriteSync), mibs(mWrite),
      `${((dWriteSync / mWrite) * 100).toFixed(0)} % of disk`, '≥ 25 %');
    row('sequential write, disk without fsync (reference)', mibs(dWrite), mibs(mWrite), `${((dWrite / mWrite) * 100).toFixed(0)} % of disk`);
    const cold = dropCaches();
    const dReadCold = seqRead(join(disk, 'big.bin'));
    if (cold) dropCaches();
    const mReadCold = seqRead(join(mnt, 'big.bin'));
    if (cold) {
      row(`sequential read ${SIZE_MIB} MiB, page cache dropped (MiB/s)`, mibs(dReadCold), mibs(mReadCold),
        `${((dReadCold / mReadCold) * 100).toFixed(0)} % of disk`);
    }
    const dRead = best(3, () => seqRead(join(disk, 'big.bin')));
    const mRead = best(3, () => seqRead(join(mnt, 'big.bin')));
    row(`sequential read ${SIZE_MIB} MiB, warm (MiB/s)`, mibs(dRead), mibs(mRead), `${((dRead / mRead) * 100).toFixed(0)} % of disk`, '≥ 50 %');
    const dRand = best(2, () => randomReads(join(disk, 'big.bin')));
    const mRand = best(2, () => randomReads(join(mnt, 'big.bin')));
    const iops = (v: number) => ((RANDOM_READS / v) * 1000).toFixed(0);
    row(`4 KiB random reads (reads/s, ${RANDOM_READS} reads)`, iops(dRand), iops(mRand), `${((dRand / mRand) * 100).toFixed(0)} % of disk`);
    rmSync(join(disk, 'big.bin'));
    unlinkSync(join(mnt, 'big.bin'));

    const dSmall = smallFiles(join(disk, 'small'));
    const mSmall = smallFiles(join(mnt, 'small'));
    for (const k of ['create', 'stat', 'remove'] as const) {
      row(`${k} ${FILES} files of 1 KiB (ms)`, fmtMs(dSmall[k]), fmtMs(mSmall[k]), `${(mSmall[k] / dSmall[k]).toFixed(1)}× disk time`,
        k === 'create' ? '≤ 5×' : '');
    }
    gitRepo(join(disk, 'repo'));
    gitRepo(join(mnt, 'repo'));
    const dGit = gitStatus(join(disk, 'repo'));
    const mGit = gitStatus(join(mnt, 'repo'));
    row(`git status, ${FILES}-file repository (ms)`, fmtMs(dGit), fmtMs(mGit), `${(mGit / dGit).toFixed(1)}× disk time`);
  } finally {
    await stopDaemon(daemon, mnt);
    rmSync(base, { recursive: true, force: true });
  }
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  console.log(`\nbench:fuse on ${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Node ${process.version}, load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`);
  console.log('| operation | plain disk | FUSE mount | mount vs disk | target |');
  console.log('|---|---:|---:|---:|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
