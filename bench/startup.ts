/**
 * @module bench/startup
 * `npm run bench:startup`: daemon start-up (spawn → first /health 200) with BENCH_FILES files stored
 * (default 100,000), for the installed entry point (`bin/svc`, which loads the bundle) next to the
 * unbundled tsc output (`dist/cli/main.js`) and the floor (`node -e 0`), in interleaved rounds. Also
 * prints the CPU time each daemon had used when it answered (user + system from /proc, 10 ms ticks),
 * which the machine's load moves far less than the wall-clock figure, and the idle RSS.
 *
 * Knobs: BENCH_FILES, BENCH_STARTS (rounds, default 7), BENCH_DATA_DIR (reuse a populated data
 * directory instead of populating a temporary one; it is populated if empty and never removed),
 * BENCH_ENTRIES (comma-separated paths of further entry modules exporting main(argv), e.g. a bundle
 * built another way, timed in the same rounds).
 */
import { mkdtempSync, rmSync, existsSync, readdirSync, mkdirSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpuMs, fillerFiles, populate, rssMiB, spawnServer, stopChild, waitHealthy } from './lib.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TOTAL_FILES = Number(process.env.BENCH_FILES ?? 100_000);
const STARTS = Number(process.env.BENCH_STARTS ?? 7);
const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);


interface Variant {
  name: string;
  /** Arguments to node; undefined for the floor, which is timed to its exit instead. */
  args: string[];
  daemon: boolean;
}

async function timeOnce(v: Variant, dataDir: string): Promise<{ ms: number; cpu: number; rss: number }> {
  const t = performance.now();
  if (!v.daemon) {
    await new Promise<void>((resolve, reject) => {
      const p = spawn(process.execPath, v.args, { stdio: 'ignore' });
      p.once('exit', () => resolve());
      p.once('error', reject);
    });
    return { ms: performance.now() - t, cpu: NaN, rss: NaN };
  }
  const child = await spawnServer(process.execPath, [...v.args, 'serve', '--port', '0', '--data-dir', dataDir, '--log-level', 'warn'],
    /svc listening on http:\/\/\S+:(\d+)/);
  try {
    await waitHealthy(child.port);
    const ms = performance.now() - t;
    const cpu = cpuMs(child.proc.pid!);
    return { ms, cpu, rss: rssMiB(child.proc.pid!) * 1.048576 };
  } finally {
    await stopChild(child.proc as ChildProcess);
  }
}

async function main(): Promise<void> {
  if (!existsSync(join(ROOT, 'dist/cli/main.js'))) throw new Error('dist/ is missing: run `npm run build` first');
  let tmp: string | undefined;
  let dataDir = process.env.BENCH_DATA_DIR;
  if (!dataDir) {
    tmp = mkdtempSync(join(tmpdir(), 'svc-bench-start-'));
    dataDir = join(tmp, 'data');
  }
  try {
    mkdirSync(dataDir, { recursive: true });
    if (readdirSync(dataDir).length === 0) {
      log(`populating ${TOTAL_FILES.toLocaleString('en-US')} files in ${dataDir}…`);
      await populate(dataDir, fillerFiles(TOTAL_FILES));
    }
    const variants: Variant[] = [
      { name: 'node -e 0 (floor, to exit)', args: ['-e', '0'], daemon: false },
      { name: 'bin/svc serve (bundle)', args: [join(ROOT, 'bin/svc')], daemon: true },
      {
        name: 'dist/cli/main.js serve (unbundled)',
        args: ['--input-type=module', '-e', `import(${JSON.stringify(join(ROOT, 'dist/cli/main.js'))}).then((m) => m.main(process.argv.slice(1)))`],
        daemon: true,
      },
      ...(process.env.BENCH_ENTRIES ?? '').split(',').filter(Boolean).map((file) => ({
        name: file,
        args: ['--input-type=module', '-e', `import(${JSON.stringify(resolve(file))}).then((m) => m.main(process.argv.slice(1)))`],
        daemon: true,
      })),
    ];
    const results = new Map<string, { ms: number[]; cpu: number[]; rss: number[] }>(variants.map((v) => [v.name, { ms: [], cpu: [], rss: [] }]));
    for (let round = 0; round < STARTS; round++) {
      for (const v of variants) {
        const r = await timeOnce(v, dataDir);
        const acc = results.get(v.name)!;
        acc.ms.push(r.ms);
        acc.cpu.push(r.cpu);
        acc.rss.push(r.rss);
      }
    }
    const fmt = (xs: number[]) => xs.every(Number.isNaN) ? '–' : `${Math.min(...xs).toFixed(0)} (median ${[...xs].sort((a, b) => a - b)[xs.length >> 1]!.toFixed(0)})`;
    console.log(`\nStart-up with ${TOTAL_FILES.toLocaleString('en-US')} files, ${STARTS} interleaved rounds, best (median); load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
    console.log('| entry point | ready ms | CPU ms at ready | RSS MB at ready |');
    console.log('|---|---|---|---|');
    for (const v of variants) {
      const r = results.get(v.name)!;
      console.log(`| ${v.name} | ${fmt(r.ms)} | ${fmt(r.cpu)} | ${fmt(r.rss)} |`);
    }
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
