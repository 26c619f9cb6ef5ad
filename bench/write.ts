/**
 * @module bench/write
 * `npx tsx bench/write.ts`: only the durable 1 KiB write and bare rows of bench/rpc.ts at one
 * concurrency, interleaved over many short rounds, for judging a change to the write path on a
 * shared machine. With BENCH_ROOTS (comma-separated package directories, each holding bin/svc and
 * a built dist/) it runs one daemon per root on its own copy of the same data directory and
 * interleaves them all with the bare endpoint: an A/B in the same minutes. Prints, per server,
 * the best and median ops/s, the ratio to bare, server CPU µs per request and its split by thread.
 *
 * Knobs: BENCH_ROOTS (default: this package; an entry `dir|flags` adds node flags for that daemon), BENCH_FILES (files stored first, default 100000),
 * BENCH_CONNS (default 32), BENCH_NODE_ARGS (node flags for the daemons), BENCH_ROUNDS (default 8), BENCH_ROUND_MS (default 1000).
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import {
  BARE_SERVER_SOURCE, fillerFiles, populate, rpcBody, runLoad, spawnServer, stopChild, waitHealthy, writeBodies, type LoadResult,
} from './lib.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** `dir` or `dir|node flags`: the same build may be compared with itself under other flags. */
const ROOTS = (process.env.BENCH_ROOTS ?? ROOT).split(',').map((r) => {
  const [dir, flags = ''] = r.split('|');
  return { dir: resolve(dir!), flags: flags.split(' ').filter(Boolean) };
});
const FILES = Number(process.env.BENCH_FILES ?? 100_000);
const CONNS = Number(process.env.BENCH_CONNS ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 1000);
/** Extra node flags for the daemons (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const log = (msg: string) => process.stderr.write(`[bench:write] ${msg}\n`);

/** CPU ms per thread name (comm) of a process, from /proc/<pid>/task/<tid>/stat. */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        // Every thread of node is called "node": the main thread is the one whose id is the pid.
        const name = tid === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === 'node' ? 'other' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        out.set(name, (out.get(name) ?? 0) + ((Number(f[11]) + Number(f[12])) * 1000) / 100);
      } catch {
        // the thread ended
      }
    }
  } catch {
    // not Linux
  }
  return out;
}


interface Server { name: string; proc: ChildProcess; port: number; write: boolean; runs: LoadResult[]; threads: Map<string, number>; ops: number }

const children = new Set<ChildProcess>();
let tmp: string | undefined;
process.once('SIGINT', () => {
  for (const c of children) c.kill('SIGKILL');
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  process.exit(130);
});

async function main(): Promise<void> {
  tmp = mkdtempSync(join(tmpdir(), 'svc-bench-write-'));
  const seed = join(tmp, 'seed');
  log(`populating ${FILES} files…`);
  await populate(seed, fillerFiles(FILES));

  const servers: Server[] = [];
  const bare = await spawnServer(process.execPath, ['-e', BARE_SERVER_SOURCE], /bare listening on (\d+)/);
  children.add(bare.proc);
  servers.push({ name: 'bare', proc: bare.proc, port: bare.port, write: false, runs: [], threads: new Map(), ops: 0 });
  for (const [i, { dir: root, flags }] of ROOTS.entries()) {
    const dataDir = join(tmp, `data${i}`);
    cpSync(seed, dataDir, { recursive: true });
    const child = await spawnServer(process.execPath, [...NODE_ARGS, ...flags, join(root, 'bin/svc'), 'serve', '--port', '0', '--data-dir', dataDir], /svc listening on http:\/\/\S+:(\d+)/);
    children.add(child.proc);
    await waitHealthy(child.port);
    log(`daemon ${i} (${root} ${flags.join(' ')}): pid ${child.proc.pid}`);
    servers.push({ name: `${i}:${root} ${flags.join(' ')}`, proc: child.proc, port: child.port, write: true, runs: [], threads: new Map(), ops: 0 });
  }
  const pingBody = rpcBody('ping', {});
  log(`load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; ${ROUNDS} rounds × ${ROUND_MS} ms at ${CONNS} conns`);
  for (let round = -1; round < ROUNDS; round++) {
    // Alternate the order so neither side always runs right after the bare endpoint.
    const order = round % 2 !== 1 ? servers : [servers[0]!, ...servers.slice(1).reverse()];
    for (const s of order) {
      const before = threadCpu(s.proc.pid!);
      const r = await runLoad({
        concurrency: CONNS, durationMs: ROUND_MS, maxOps: 1_000_000, warmupMs: 150, port: s.port, serverPid: s.proc.pid,
        path: s.write ? '/api/nfs/write' : '/', body: s.write ? writeBodies(1024, `/w/r${round}`) : () => pingBody,
      });
      const after = threadCpu(s.proc.pid!);
      if (round < 0) continue; // a first round to warm up the JIT, not counted
      // Per-thread figures include the warm-up; scaled by all requests sent (ops are counted after it).
      for (const [name, ms] of after) s.threads.set(name, (s.threads.get(name) ?? 0) + ms - (before.get(name) ?? 0));
      s.ops += r.ops;
      s.runs.push(r);
      if (r.errors) log(`${s.name}: ${r.errors} errors in round ${round}`);
    }
    if (round >= 0) log(`round ${round}: ${servers.map((s) => `${s.name.split(':')[0]} ${Math.round(s.runs.at(-1)!.opsPerSec)}/s ${Math.round(s.runs.at(-1)!.cpuUsPerOp)}µs`).join(', ')}`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const bareBest = Math.max(...servers[0]!.runs.map((r) => r.opsPerSec));
  const bareMedian = median(servers[0]!.runs.map((r) => r.opsPerSec));
  console.log(`load after: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  for (const s of servers) {
    const ops = s.runs.map((r) => r.opsPerSec);
    const best = Math.max(...ops);
    const ratios = s.runs.map((r, i) => r.opsPerSec / servers[0]!.runs[i]!.opsPerSec);
    const threads = [...s.threads].filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1])
      .map(([n, ms]) => `${n} ${((ms * 1000) / s.ops).toFixed(0)}`).join(', ');
    console.log(
      `${s.name}\n  best ${best.toFixed(0)}/s (${((best / bareBest) * 100).toFixed(1)} % of best bare), median ${median(ops).toFixed(0)}/s `
      + `(${((median(ops) / bareMedian) * 100).toFixed(1)} %), median per-round ratio ${(median(ratios) * 100).toFixed(1)} %; `
      + `CPU µs/op median ${median(s.runs.map((r) => r.cpuUsPerOp)).toFixed(0)}, p50 ${median(s.runs.map((r) => r.p50)).toFixed(2)} ms`
      + `\n  per thread µs/op (incl. warm-up): ${threads}`,
    );
  }
  for (const s of servers) {
    await stopChild(s.proc);
    children.delete(s.proc);
  }
  rmSync(tmp, { recursive: true, force: true });
}

main().catch((err) => {
  for (const c of children) c.kill('SIGKILL');
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  console.error(err);
  process.exit(1);
});
