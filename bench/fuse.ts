/**
 * @module bench/fuse
 * `npm run bench:fuse`: the FUSE mount side by side with the plain disk, same operations, same run.
 * A daemon (`node bin/svc serve --mount`) runs as a child process; this process drives both sides
 * with ordinary fs calls (safe: it does not serve the mount). Prints a markdown table.
 *
 * - sequential write of a 256 MiB file in 1 MiB blocks, rows interleaved (best of --write-rounds): with fsync before close on BOTH sides
 *   (the durable row, the one the ≥ 25 % target is for: the in-process mount's close commits without
 *   waiting for the store's flush, src/transports/fuse/local.ts, and its fsync waits for that flush),
 *   and without fsync on either side (close only: the disk's page cache against the mount's
 *   non-durable commit). Every round (on the mount and on the disk alike) writes content never
 *   written before: each block carries its index and a per-round seed, so no chunk is already stored
 *   and the mount's figure is a write of new content, not a rewrite that deduplicates (figures before
 *   2026-11-24's "new content" run measured a rewrite in their best round); the durable row also
 *   against the disk writing a new file each round and keeping the earlier ones, so that the disk's
 *   page cache grows by the file each round as the store's does (the disk's own row rewrites one
 *   file, reusing its pages; fresh page-cache pages cost 4-5× on this VM);
 * - sequential read of it in 1 MiB blocks, page cache cold (drop_caches, when permitted; the floor
 *   too) and warm (best of 5 rounds, disk, mount and floor in turn within each);
 * - the warm read again against a second disk file with the same bytes written in 4 KiB blocks, so
 *   that the disk caches it in 4 KiB folios as FUSE caches every file on this kernel (the first is
 *   cached in folios of up to 2 MiB, which a warm read copies about twice as fast); as root, the
 *   folios each side's file sits in are counted (bench/folios.c) and printed;
 * - 4 KiB reads at random offsets (best of 3 rounds, in turn likewise);
 * - the close-only write, the cold, warm and random reads and the small-file rows below also on the floor;
 * - create, stat, chmod, read, rename and delete 2,000 small files, also on a third side: the FLOOR, a bare in-memory
 *   file system (bench/fuse-floor.ts, a second child process) mounted through the same NativeMount,
 *   binding and options as the daemon's mount. Its times are what the binding and the kernel cost
 *   with no svc code behind them, so the table shows which part of the mount's gap to the disk is
 *   the binding's and which is svc's. Both use the binding NativeMount picks (svc's libfuse 3 addon
 *   where built); `SVC_FUSE_BINDING=fuse-native npm run bench:fuse` times fuse-native instead, and the
 *   output names the binding. Rounds run interleaved (disk, mount, floor), best of
 *   --rounds; the server processes' CPU time per file is printed on stderr;
 * - the same floor rows on a fourth side, the KERNEL FLOOR: bench/fuse-floor-ll.c, a bare in-memory
 *   file system in C on libfuse 3's low-level API (1 MiB writes, inode numbers, one request at a
 *   time, watching 30 µs for the next request before sleeping as the libfuse 3 binding does),
 *   built with `cc` when the run starts (needs libfuse3-dev; without it the column is empty
 *   and stderr says why). It is what FUSE itself costs on this kernel with the least server work
 *   any binding could give it, so the table also shows which part of a gap no binding would close;
 * - appending a line to the 256 MiB file (on the mount a new version of the whole file: its etag is
 *   resumed from the stored one where the daemon's hasher still has it, so only the line and the
 *   file's last chunk are hashed);
 * - `cp` of the 256 MiB file within each side (copyFileSync, which uses copy_file_range: on the
 *   libfuse 3 binding the daemon copies, elsewhere the kernel reads and writes), best of 3;
 * - `ls -l` of a 2,000-file directory (a listing, then an lstat of each entry) once the kernel's
 *   cached attributes expired, on every side: on libfuse 3 the listing carries them (READDIRPLUS);
 * - `git status` in a 2,000-file repository.
 *
 * Options: --size-mib N (default 256), --files N (default 2000), --rounds N (small-file rounds,
 * default 3), --write-rounds N (sequential-write rounds, default 3; 2 before 2026-11-24,
 * afternoon). Skips with a reason when FUSE cannot work here.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync, closeSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync, writeSync,
  existsSync, readFileSync, readdirSync, lstatSync, copyFileSync, appendFileSync,
} from 'node:fs';
import { tmpdir, cpus, totalmem } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuseSupport } from '../src/native/fuse.js';
import { KERNEL_CACHE_SECONDS } from '../src/transports/fuse/mount.js';
import { cpuMs } from './lib.js';
import { buildFolioCounter, buildKernelFloor, type Built } from './kernel-floor.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MiB = 1024 * 1024;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const SIZE_MIB = arg('size-mib', 256);
const FILES = arg('files', 2000);
const ROUNDS = arg('rounds', 3);
/**
 * Rounds of each sequential-write row (best of, both sides alike). On this VM back-to-back rounds
 * of the same write vary 2× (docs/performance.md, "Runs of 2026-11-24, afternoon").
 */
const WRITE_ROUNDS = arg('write-rounds', 3);
const RANDOM_READS = 5000;
/** The bare in-memory file system timed as the floor (run as a child with tsx's loader). */
const FLOOR = join(ROOT, 'bench', 'fuse-floor.ts');

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

function time(fn: () => void): number {
  const start = process.hrtime.bigint();
  fn();
  return ms(start);
}

/**
 * Best (smallest) time of each function over `n` rounds, the functions taking turns within each
 * round, so a disturbance (a neighbour's job, a flush still running) falls on all of them alike.
 */
function bestOfRounds(n: number, fns: (() => number)[]): number[] {
  const out = fns.map(() => Infinity);
  for (let i = 0; i < n; i++) fns.forEach((fn, k) => (out[k] = Math.min(out[k]!, fn())));
  return out;
}

/** Best (smallest) of `n` runs. */
const best = (n: number, fn: () => number): number => bestOfRounds(n, [fn])[0]!;

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

/** CPU ms a process has used so far ({@link cpuMs}); NaN for the disk side, which has no server. */
const serverCpuMs = (pid: number | undefined): number => (pid === undefined ? NaN : cpuMs(pid));

type SmallOp = 'create' | 'stat' | 'chmod' | 'read' | 'rename' | 'remove';
const SMALL_OPS: SmallOp[] = ['create', 'stat', 'chmod', 'read', 'rename', 'remove'];
/** Wall-clock ms per operation over FILES files, and the server process's CPU ms for them. */
type SmallTimes = Record<SmallOp, { ms: number; serverCpu: number }>;

/**
 * Create, stat, chmod (as `chmod -R` does, of files already stored on the mount: the creates'
 * batch is committed by then), read (open, read, close), rename (each to a new name in the same
 * directory, as `mv` or a tool renaming its outputs does, of files stored by then) and delete FILES
 * files of 1 KiB in `dir` (made first, untimed); `server` is the pid serving it, if any.
 */
function smallFiles(dir: string, server?: number): SmallTimes {
  mkdirSync(dir, { recursive: true });
  const body = Buffer.alloc(1024, 'x');
  const names = Array.from({ length: FILES }, (_, i) => join(dir, `f${i}.txt`));
  const phase = (fn: () => void) => {
    const cpu = serverCpuMs(server);
    const ms = time(fn);
    return { ms, serverCpu: serverCpuMs(server) - cpu };
  };
  const create = phase(() => names.forEach((n) => writeFileSync(n, body)));
  const stat = phase(() => names.forEach((n) => statSync(n)));
  const chmod = phase(() => names.forEach((n) => chmodSync(n, 0o600)));
  const read = phase(() => names.forEach((n) => readFileSync(n)));
  const moved = names.map((n) => n.replace(/\.txt$/, '.moved'));
  const rename = phase(() => names.forEach((n, i) => renameSync(n, moved[i]!)));
  const remove = phase(() => moved.forEach((n) => unlinkSync(n)));
  return { create, stat, chmod, read, rename, remove };
}

/** Per operation, the round with the smallest wall-clock time. */
function bestOf(rounds: SmallTimes[]): SmallTimes {
  const out = {} as SmallTimes;
  for (const k of SMALL_OPS) out[k] = rounds.reduce((a, b) => (b[k].ms < a[k].ms ? b : a))[k];
  return out;
}

/** Block this thread for `msec` (the sides are driven with synchronous calls). */
function sleepSync(msec: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, msec);
}

/**
 * `ls -l` of a directory of FILES files, as a file manager or `find -ls` does it: one listing,
 * then an lstat of every entry. Made untimed first; timed after the kernel's cached attributes
 * expired (the mount's 0.5 s), so a mount pays for the listing and, unless the listing carried
 * them, one request per entry.
 */
function listing(dir: string): () => number {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < FILES; i++) writeFileSync(join(dir, `f${i}.txt`), 'x');
  return () => {
    sleepSync(KERNEL_CACHE_SECONDS * 1000 + 200);
    return time(() => {
      for (const name of readdirSync(dir)) lstatSync(join(dir, name));
    });
  };
}

/** A copy of `from` written to `to` in 4 KiB writes: the disk caches it in 4 KiB folios. */
function copyIn4KiBWrites(from: string, to: string): void {
  const data = readFileSync(from);
  const fd = openSync(to, 'w');
  for (let at = 0; at < data.length; at += 4096) writeSync(fd, data, at, Math.min(4096, data.length - at));
  closeSync(fd);
}

/** How `path` sits in the page cache (bench/folios.c's line), or why that is unknown. */
function folios(counter: Built, path: string): string {
  if ('reason' in counter) return `unknown (${counter.reason})`;
  try {
    const out = execFileSync(counter.binary, [path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const [pages, cached, count, largest] = [...out.matchAll(/\d+/g)].map((m) => Number(m[0]));
    return `${cached} of ${pages} pages cached, in ${count} folios, the largest ${(largest! * 4)} KiB`;
  } catch (err) {
    return `unknown (${String((err as { stderr?: string }).stderr ?? err).trim().split('\n')[0]})`;
  }
}

/** Append one line to `path` (open, write, close: the mount commits a new version of the whole file); ms. */
function appendLine(path: string): number {
  return time(() => appendFileSync(path, `line ${Date.now()}\n`));
}

/** `cp` of the big file within one side (copyFileSync: copy_file_range where offered); ms. */
function copyWithin(dir: string): number {
  const copy = join(dir, 'copy.bin');
  const ms = time(() => copyFileSync(join(dir, 'big.bin'), copy));
  unlinkSync(copy);
  return ms;
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

/** Spawn a server, resolve once its stdout matches `ready` (it then serves `mnt`). */
async function startServer(what: string, args: string[], ready: RegExp, command = process.execPath): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`${what} did not mount within 20 s`)), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) {
        clearTimeout(timer);
        ok();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${what} exited with ${code}`));
    });
  }).catch((err: unknown) => {
    child.kill('SIGTERM');
    throw err;
  });
  child.removeAllListeners('exit');
  return child;
}

function startDaemon(dataDir: string, mnt: string): Promise<ChildProcess> {
  return startServer('the daemon', [join(ROOT, 'bin', 'svc'), 'serve', '--port', '0', '--data-dir', dataDir, '--mount', mnt, '--log-level', 'warn'],
    /svc mounted at/);
}

/** The bare in-memory file system (bench/fuse-floor.ts) mounted at `mnt` through the mount's binding. */
function startFloor(mnt: string): Promise<ChildProcess> {
  mkdirSync(mnt, { recursive: true });
  return startServer('the bare in-memory file system', ['--import', 'tsx', FLOOR, mnt], /^ready$/m);
}

/** The libfuse 3 low-level C file system (bench/fuse-floor-ll.c, built) mounted at `mnt`. */
function startKernelFloor(binary: string, mnt: string): Promise<ChildProcess> {
  mkdirSync(mnt, { recursive: true });
  return startServer('the libfuse 3 low-level file system', [mnt], /^ready$/m, binary);
}

/** SIGTERM (every server unmounts on it); after 30 s SIGKILL and a lazy `fusermount -uz`. */
function stopServer(child: ChildProcess, mnt: string): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((ok) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      try {
        execFileSync('fusermount', ['-uz', mnt]);
      } catch { /* not mounted any more */ }
    }, 30_000);
    child.once('exit', () => {
      clearTimeout(timer);
      ok();
    });
    child.kill('SIGTERM');
  });
}

const fmtMs = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));
const mibs = (v: number) => ((SIZE_MIB / v) * 1000).toFixed(0);

const pct = (disk: number, other: number) => `${((disk / other) * 100).toFixed(0)} % of disk`;
const times = (other: number, disk: number) => `${(other / disk).toFixed(1)}× disk time`;

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
  const floorMnt = join(base, 'floor');
  const llMnt = join(base, 'kernel-floor');
  mkdirSync(disk);
  let daemon: ChildProcess | undefined;
  let floor: ChildProcess | undefined;
  let ll: ChildProcess | undefined;
  /** operation, disk, mount, floor, kernel floor, mount vs disk, floor vs disk, kernel floor vs disk, target */
  const rows: string[][] = [];
  /** `floors`: the binding floor's and the kernel floor's figures and ratios, where timed. */
  const row = (name: string, d: string, m: string, ratio: string, target = '', floors: [string, string, string, string] = ['', '', '', '']) => {
    const [f, fRatio, k, kRatio] = floors;
    rows.push([name, d, m, f, k, ratio, fRatio, kRatio, target]);
    console.error(`  ${name}: disk ${d}, mount ${m} (${ratio})${f ? `, floor ${f} (${fRatio})` : ''}${k ? `, kernel floor ${k} (${kRatio})` : ''}`);
  };
  const built = buildKernelFloor(base);
  if ('reason' in built) console.error(`bench:fuse: no kernel floor column: ${built.reason}`);
  const folioCounter = buildFolioCounter(base);
  /** Where each side's big file sat in the page cache after the warm reads. */
  const folioLines: string[] = [];
  try {
    daemon = await startDaemon(join(base, 'data'), mnt);
    floor = await startFloor(floorMnt);
    if ('binary' in built) ll = await startKernelFloor(built.binary, llMnt);
    /** The floors' directories: the binding floor's, then the kernel floor's when it runs. */
    const floorDirs = ll ? [floorMnt, llMnt] : [floorMnt];
    /** The floors' [figure, ratio] pairs, blank for a floor that did not run. */
    const floorCells = (values: number[], fmt: (v: number) => string, ratio: (v: number) => string): [string, string, string, string] => {
      const [f, k] = values;
      return [fmt(f!), ratio(f!), k === undefined ? '' : fmt(k), k === undefined ? '' : ratio(k)];
    };
    console.error(`bench:fuse: ${SIZE_MIB} MiB file, ${FILES} small files × ${ROUNDS} rounds; disk ${disk}, mount ${mnt}, floor ${floorMnt}${ll ? `, kernel floor ${llMnt}` : ''}`);
    // Sequential write, rounds interleaved: fsync before close on both sides (the mount's fsync waits
    // for the store's flush), then close only on both sides (the mount's close does not wait for it).
    let dWriteSync = Infinity;
    let dNewSync = Infinity;
    let mWriteSync = Infinity;
    let dWrite = Infinity;
    let mWrite = Infinity;
    const fWrite = floorDirs.map(() => Infinity);
    for (let r = 0; r < WRITE_ROUNDS; r++) {
      dWriteSync = Math.min(dWriteSync, seqWrite(join(disk, 'big.bin'), true));
      // A new file each round, the earlier ones kept, as the store keeps every version: the disk's
      // page cache then grows by the file each round as the store's does (fresh pages cost 4-5×
      // here, docs/performance.md "Writes and fresh pages").
      dNewSync = Math.min(dNewSync, seqWrite(join(disk, `new${r}.bin`), true));
      mWriteSync = Math.min(mWriteSync, seqWrite(join(mnt, 'big.bin'), true));
      dWrite = Math.min(dWrite, seqWrite(join(disk, 'big.bin'), false));
      mWrite = Math.min(mWrite, seqWrite(join(mnt, 'big.bin'), false));
      // The floors keep bytes in memory: no store, nothing to sync; their figures are the binding's and the kernel's.
      floorDirs.forEach((dir, i) => (fWrite[i] = Math.min(fWrite[i]!, seqWrite(join(dir, 'big.bin'), false))));
    }
    row(`sequential write ${SIZE_MIB} MiB of new content, 1 MiB blocks (MiB/s, best of ${WRITE_ROUNDS}), fsync before close on both sides`,
      mibs(dWriteSync), mibs(mWriteSync), pct(dWriteSync, mWriteSync), '≥ 25 %');
    row('same, the disk writing a new file each round and keeping the earlier ones (its page cache grows as the store\'s does)',
      mibs(dNewSync), mibs(mWriteSync), pct(dNewSync, mWriteSync));
    for (let r = 0; r < WRITE_ROUNDS; r++) unlinkSync(join(disk, `new${r}.bin`));
    row('same, no fsync on either side (close only; the mount still commits at close, without waiting for the flush)',
      mibs(dWrite), mibs(mWrite), pct(dWrite, mWrite), '', floorCells(fWrite, mibs, (v) => pct(dWrite, v)));
    const cold = dropCaches();
    const dReadCold = seqRead(join(disk, 'big.bin'));
    if (cold) dropCaches();
    const mReadCold = seqRead(join(mnt, 'big.bin'));
    // The floors' pages were dropped with the others: their cold read is their own read path (bytes
    // from memory), and afterwards every side's cache was filled the same way, by one sequential
    // read (a cache filled otherwise reads warm at another speed here).
    const fReadCold = floorDirs.map((dir) => seqRead(join(dir, 'big.bin')));
    if (cold) {
      row(`sequential read ${SIZE_MIB} MiB, page cache dropped (MiB/s)`, mibs(dReadCold), mibs(mReadCold), pct(dReadCold, mReadCold),
        '', floorCells(fReadCold, mibs, (v) => pct(dReadCold, v)));
    }
    const small = join(disk, 'big-4k.bin');
    copyIn4KiBWrites(join(disk, 'big.bin'), small);
    const warm = [join(disk, 'big.bin'), small, ...[mnt, ...floorDirs].map((dir) => join(dir, 'big.bin'))];
    const [dRead, d4Read, mRead, ...fRead] = bestOfRounds(5, warm.map((path) => () => seqRead(path)));
    row(`sequential read ${SIZE_MIB} MiB, warm (MiB/s, best of 5)`, mibs(dRead!), mibs(mRead!), pct(dRead!, mRead!), '≥ 50 %',
      floorCells(fRead, mibs, (v) => pct(dRead!, v)));
    row('same, the disk\'s copy written in 4 KiB blocks, so cached in 4 KiB folios as FUSE caches every file here',
      mibs(d4Read!), mibs(mRead!), pct(d4Read!, mRead!), '', floorCells(fRead, mibs, (v) => pct(d4Read!, v)));
    ['disk', 'disk, 4 KiB writes', 'mount', 'floor', 'kernel floor'].slice(0, warm.length).forEach((side, i) => {
      folioLines.push(`${side}: ${folios(folioCounter, warm[i]!)}`);
      console.error(`    page cache after the warm reads, ${folioLines.at(-1)}`);
    });
    unlinkSync(small);
    const [dRand, mRand, ...fRand] = bestOfRounds(3, [disk, mnt, ...floorDirs].map((dir) => () => randomReads(join(dir, 'big.bin'))));
    const iops = (v: number) => ((RANDOM_READS / v) * 1000).toFixed(0);
    row(`4 KiB random reads (reads/s, ${RANDOM_READS} reads)`, iops(dRand!), iops(mRand!), pct(dRand!, mRand!), '',
      floorCells(fRand, iops, (v) => pct(dRand!, v)));
    const [dCopy, mCopy, ...fCopy] = bestOfRounds(3, [disk, mnt, ...floorDirs].map((dir) => () => copyWithin(dir)));
    row(`cp of the ${SIZE_MIB} MiB file within the same side (MiB/s, best of 3)`, mibs(dCopy!), mibs(mCopy!), pct(dCopy!, mCopy!), '',
      floorCells(fCopy, mibs, (v) => pct(dCopy!, v)));
    const [dAppend, mAppend, ...fAppend] = bestOfRounds(3, [disk, mnt, ...floorDirs].map((dir) => () => appendLine(join(dir, 'big.bin'))));
    row(`append a line to the ${SIZE_MIB} MiB file (open, write, close; ms, best of 3)`, fmtMs(dAppend!), fmtMs(mAppend!), times(mAppend!, dAppend!), '',
      floorCells(fAppend, fmtMs, (v) => times(v, dAppend!)));
    for (const dir of [disk, mnt, ...floorDirs]) unlinkSync(join(dir, 'big.bin'));

    // Small files: disk, mount and floors in turn each round, a fresh directory per round and side.
    const servers = [floor.pid, ll?.pid];
    const sides = { disk: [] as SmallTimes[], mount: [] as SmallTimes[], floors: floorDirs.map(() => [] as SmallTimes[]) };
    for (let r = 0; r < ROUNDS; r++) {
      sides.disk.push(smallFiles(join(disk, `small${r}`)));
      sides.mount.push(smallFiles(join(mnt, `small${r}`), daemon.pid));
      floorDirs.forEach((dir, i) => sides.floors[i]!.push(smallFiles(join(dir, `small${r}`), servers[i])));
    }
    const [dSmall, mSmall] = [bestOf(sides.disk), bestOf(sides.mount)];
    const fSmall = sides.floors.map(bestOf);
    const perFile = (v: number) => `${((v / FILES) * 1000).toFixed(0)} µs`;
    for (const k of SMALL_OPS) {
      row(`${k} ${FILES} files of 1 KiB (ms, best of ${ROUNDS})`, fmtMs(dSmall[k].ms), fmtMs(mSmall[k].ms), times(mSmall[k].ms, dSmall[k].ms),
        k === 'create' ? '≤ 5×' : '', floorCells(fSmall.map((f) => f[k].ms), fmtMs, (v) => times(v, dSmall[k].ms)));
      const kernel = fSmall[1] ? `, kernel floor ${perFile(fSmall[1][k].serverCpu)}` : '';
      console.error(`    ${k}, server CPU per file in the best round: daemon ${perFile(mSmall[k].serverCpu)}, floor ${perFile(fSmall[0]![k].serverCpu)}${kernel}`);
    }
    const [dList, mList, ...fList] = bestOfRounds(3, [disk, mnt, ...floorDirs].map((dir) => listing(join(dir, 'listing'))));
    row(`ls -l of ${FILES} files, their cached attributes expired (ms, best of 3)`, fmtMs(dList!), fmtMs(mList!), times(mList!, dList!), '',
      floorCells(fList, fmtMs, (v) => times(v, dList!)));
    gitRepo(join(disk, 'repo'));
    gitRepo(join(mnt, 'repo'));
    const dGit = gitStatus(join(disk, 'repo'));
    const mGit = gitStatus(join(mnt, 'repo'));
    row(`git status, ${FILES}-file repository (ms)`, fmtMs(dGit), fmtMs(mGit), times(mGit, dGit));
  } finally {
    if (ll) await stopServer(ll, llMnt);
    if (floor) await stopServer(floor, floorMnt);
    if (daemon) await stopServer(daemon, mnt);
    rmSync(base, { recursive: true, force: true });
  }
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  console.log(`\nbench:fuse on ${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Node ${process.version}, load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`);
  console.log(`FUSE binding of the mount and the floor: ${support.binding}\n`);
  console.log(`| operation | plain disk | FUSE mount | bare ${support.binding}, in memory (floor) | libfuse 3 low-level C, in memory (kernel floor) `
    + '| mount vs disk | floor vs disk | kernel floor vs disk | target |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  console.log(`\nThe floor is bench/fuse-floor.ts: the mount's binding (${support.binding}) and options with no svc code behind it, bytes in memory. `
    + 'The kernel floor is bench/fuse-floor-ll.c: libfuse 3\'s low-level API in C, one request at a time (watching 30 µs for the next before sleeping, as the libfuse 3 binding does), 1 MiB writes, bytes in memory: '
    + 'the FUSE round trips with the least server work any binding could give them'
    + `${'reason' in built ? ` (not run here: ${built.reason})` : ''}. Both are timed for the close-only write, the cold, warm and random reads, cp, the append, the small-file rows and ls -l.`);
  console.log(`\nThe ${SIZE_MIB} MiB file in the page cache after the warm reads (bench/folios.c): ${folioLines.join('; ')}.`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
