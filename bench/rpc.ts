/**
 * @module bench/rpc
 * `npm run bench`: throughput and latency of the JSON-RPC face against a bare node:http endpoint,
 * list/glob/grep latency on large trees, and daemon start-up time and idle RSS with 100,000 files.
 * Prints a Markdown table with each figure next to its target; never fails on a missed target.
 *
 * Everything runs on loopback in a temp directory that is removed at the end. The daemon is the
 * real one (`node bin/svc serve`, built by `npm run bench`), populated in-process beforehand
 * through FsService. The machine may be shared, so every figure is the best of several short rounds
 * (the least disturbed one), interleaved with the bare endpoint's. Knobs: BENCH_SECONDS (measured
 * seconds per throughput row, split over the rounds; default 4), BENCH_FILES (files stored for the
 * start-up figure, default 100000).
 */
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import {
  BARE_SERVER_SOURCE, fillerFiles, machine, populate, post, rpcBody, rssMiB, runLoad, spawnServer, stopChild, table, waitHealthy, writeBodies,
  type LoadResult, type Row,
} from './lib.js';
import http from 'node:http';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const TOTAL_FILES = Number(process.env.BENCH_FILES ?? 100_000);
const STARTS = 5;
const ROUNDS = 5;

const LIST_FILES = 10_000;
const GLOB_FANOUT = 5;
const GLOB_DEPTH = 5; // directories 5 levels deep, one file in each: 1+5+…+5^5 = 3,906 files
const GREP_FILES = 10_000;

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

// ---------------------------------------------------------------- data set

/** Paths and contents of the data set: the fixtures the benchmarks touch, then filler up to TOTAL_FILES. */
function* dataset(): Generator<[string, Buffer]> {
  yield ['/bench/read-1k.bin', randomBytes(1024)];
  for (let i = 0; i < LIST_FILES; i++) {
    yield [`/list10k/f${String(i).padStart(5, '0')}.txt`, Buffer.from(`list entry ${i}\n`)];
  }
  let globFiles = 0;
  const tree = function* (dir: string, depth: number): Generator<[string, Buffer]> {
    globFiles++;
    yield [`${dir}/file.txt`, Buffer.from(`glob ${dir}\n`)];
    if (depth === GLOB_DEPTH) return;
    for (let i = 0; i < GLOB_FANOUT; i++) yield* tree(`${dir}/d${i}`, depth + 1);
  };
  yield* tree('/globtree', 0);
  for (let i = 0; i < GREP_FILES; i++) {
    const lines = [
      `// file ${i} of the grep corpus`,
      'export function add(a: number, b: number): number {',
      '  return a + b;',
      '}',
      i % 100 === 0 ? `// needle ${i}: the line grep is looking for` : '// nothing to see here',
    ];
    yield [`/grep10k/d${String(Math.floor(i / 100)).padStart(2, '0')}/f${String(i % 100).padStart(2, '0')}.ts`, Buffer.from(lines.join('\n') + '\n')];
  }
  const used = 1 + LIST_FILES + globFiles + GREP_FILES;
  yield* fillerFiles(TOTAL_FILES - used);
}

/** Call a method once and return its decoded result (for sanity checks). */
async function callOnce(port: number, method: string, params: unknown): Promise<unknown> {
  const agent = new http.Agent({ keepAlive: false });
  const res = await post(agent, port, `/api/nfs/${method}`, rpcBody(method, params));
  const body = JSON.parse(res.body.toString()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/** The run with more ops/s. */
const faster = (a: LoadResult | undefined, b: LoadResult): LoadResult => (!a || b.opsPerSec > a.opsPerSec ? b : a);

// ---------------------------------------------------------------- main

const children = new Set<ChildProcess>();
let tmp: string | undefined;

function cleanup(): void {
  for (const c of children) c.kill('SIGKILL');
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  tmp = undefined;
}
process.once('SIGINT', () => {
  cleanup();
  process.exit(130);
});

async function main(): Promise<void> {
  if (!existsSync(join(ROOT, 'dist/cli/main.js'))) throw new Error('dist/ is missing: run `npm run bench` (it builds first)');
  const loadStart = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  tmp = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const dataDir = join(tmp, 'data');
  const rows: Row[] = [];

  // --- start-up with TOTAL_FILES stored
  log(`populating ${TOTAL_FILES.toLocaleString('en-US')} files through FsService…`);
  let t0 = performance.now();
  const stored = await populate(dataDir, dataset());
  log(`populated ${stored} files in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const daemonArgs = [join(ROOT, 'bin/svc'), 'serve', '--port', '0', '--data-dir', dataDir];
  const startDaemon = async () => {
    const t = performance.now();
    const child = await spawnServer(process.execPath, daemonArgs, /svc listening on http:\/\/\S+:(\d+)/);
    children.add(child.proc);
    await waitHealthy(child.port);
    return { child, readyMs: performance.now() - t };
  };
  const readyTimes: number[] = [];
  let daemon!: Awaited<ReturnType<typeof startDaemon>>;
  for (let i = 0; i < STARTS; i++) {
    if (daemon) {
      await stopChild(daemon.child.proc);
      children.delete(daemon.child.proc);
    }
    daemon = await startDaemon();
    readyTimes.push(daemon.readyMs);
  }
  await new Promise((r) => setTimeout(r, 1500));
  const idleRss = rssMiB(daemon.child.proc.pid!) * 1.048576; // MiB → MB
  const readyMs = Math.min(...readyTimes);
  log(`ready in ${readyTimes.map((x) => x.toFixed(0)).join(' / ')} ms; idle RSS ${idleRss.toFixed(1)} MB`);
  const port = daemon.child.port;
  const serverPid = daemon.child.proc.pid;

  // --- sanity: the fixtures are what the rows claim
  const listed = (await callOnce(port, 'list', { path: '/list10k' })) as string[];
  const globbed = (await callOnce(port, 'glob', { pattern: '**/*.txt', path: '/globtree' })) as string[];
  const grepped = (await callOnce(port, 'grep', { pattern: 'needle', path: '/grep10k' })) as unknown[];
  log(`fixtures: list ${listed.length}, glob ${globbed.length}, grep ${grepped.length} matches`);

  // --- throughput: bare ceiling vs the daemon. Bare, read and 1 KiB write are interleaved over
  // ROUNDS short rounds and the best round of each is kept: on a shared 2-core machine a
  // neighbour's burst would otherwise decide the ratio.
  const bare = await spawnServer(process.execPath, ['-e', BARE_SERVER_SOURCE], /bare listening on (\d+)/);
  children.add(bare.proc);
  const bareBody = rpcBody('ping', {});
  const readBody = rpcBody('read', { path: '/bench/read-1k.bin' });
  const roundMs = Math.max(300, Math.round((SECONDS * 1000) / ROUNDS));
  const bareAt = new Map<number, LoadResult>();
  const relative = (name: string, conns: number, r: LoadResult, min?: number): Row => {
    const vsBare = r.opsPerSec / bareAt.get(conns)!.opsPerSec;
    return {
      name, conns, ...r, vsBare,
      ...(min === undefined ? {} : { target: `≥ ${min * 100} % of bare`, pass: vsBare >= min && r.errors === 0 }),
    };
  };
  for (const conns of [1, 32]) {
    let bareBest: LoadResult | undefined;
    let readBest: LoadResult | undefined;
    let writeBest: LoadResult | undefined;
    log(`${conns} conns: bare, read 1 KiB, durable write 1 KiB × ${ROUNDS} rounds…`);
    for (let round = 0; round < ROUNDS; round++) {
      const opts = { concurrency: conns, durationMs: roundMs, maxOps: 1_000_000, warmupMs: 200 };
      bareBest = faster(bareBest, await runLoad({ ...opts, port: bare.port, serverPid: bare.proc.pid, path: '/', body: () => bareBody }));
      readBest = faster(readBest, await runLoad({ ...opts, port, serverPid, path: '/api/nfs/read', body: () => readBody }));
      writeBest = faster(writeBest, await runLoad({
        ...opts, port, serverPid, path: '/api/nfs/write', body: writeBodies(1024, `/bench/w1k-${conns}-r${round}`),
      }));
    }
    bareAt.set(conns, bareBest!);
    rows.push({ name: 'bare node:http JSON (ceiling)', conns, ...bareBest! });
    rows.push(relative('read 1 KiB', conns, readBest!, conns === 32 ? 0.5 : undefined));
    rows.push(relative('durable write 1 KiB', conns, writeBest!, conns === 32 ? 0.25 : undefined));
  }
  await stopChild(bare.proc);
  children.delete(bare.proc);
  for (const conns of [1, 32]) {
    log(`durable write 1 MiB, ${conns} conns × 3 rounds…`);
    let r: LoadResult | undefined;
    for (let round = 0; round < 3; round++) {
      r = faster(r, await runLoad({
        port, serverPid, path: '/api/nfs/write', concurrency: conns, durationMs: 1000, maxOps: 1000, warmupMs: 200,
        body: writeBodies(1024 * 1024, `/bench/w1m-${conns}-r${round}`),
      }));
    }
    rows.push({ name: 'durable write 1 MiB (ops/s = MiB/s)', conns, ...r! });
  }

  // --- latency of the big-tree calls, one client: best p50 of 3 rounds of up to 30 calls / 2 s
  const latency = async (name: string, method: string, params: unknown, maxMs: number) => {
    log(`${name}…`);
    const body = rpcBody(method, params);
    let r: LoadResult | undefined;
    for (let round = 0; round < 3; round++) {
      const next = await runLoad({
        port, serverPid, path: `/api/nfs/${method}`, concurrency: 1, body: () => body, durationMs: 2000, maxOps: 30, warmupMs: 200,
      });
      if (!r || next.p50 < r.p50) r = next;
    }
    rows.push({ name, conns: 1, ...r!, target: `≤ ${maxMs} ms (p50)`, pass: r!.p50 <= maxMs && r!.errors === 0 });
    // The same call from 32 clients at once (issue 2 item 8: every row at 1 and 32 clients); the
    // latency target is the single-client one, so this row is information.
    const many = await runLoad({
      port, serverPid, path: `/api/nfs/${method}`, concurrency: 32, body: () => body, durationMs: 3000, maxOps: 96, warmupMs: 200,
    });
    rows.push({ name, conns: 32, ...many });
  };
  await latency(`list ${listed.length.toLocaleString('en-US')}-entry directory`, 'list', { path: '/list10k' }, 30);
  await latency(`glob \`**/*.txt\` over ${globbed.length.toLocaleString('en-US')} nested files`, 'glob', { pattern: '**/*.txt', path: '/globtree' }, 30);
  await latency(`grep over ${GREP_FILES.toLocaleString('en-US')} small files (${grepped.length} hits)`, 'grep', { pattern: 'needle', path: '/grep10k' }, 150);

  const loadedRss = rssMiB(daemon.child.proc.pid!) * 1.048576;
  await stopChild(daemon.child.proc);
  children.delete(daemon.child.proc);

  rows.push({
    name: `daemon ready (spawn → /health 200), ${stored.toLocaleString('en-US')} files`, conns: '–',
    value: `${readyMs.toFixed(0)} ms`, target: '≤ 500 ms', pass: readyMs <= 500,
  });
  rows.push({ name: 'idle RSS after start-up', conns: '–', value: `${idleRss.toFixed(1)} MB`, target: '≤ 100 MB', pass: idleRss <= 100 });
  rows.push({ name: 'RSS after the load above (info)', conns: '–', value: `${loadedRss.toFixed(1)} MB` });

  const m = machine(dataDir);
  console.log(`\nsvc RPC benchmark — ${new Date().toISOString().slice(0, 10)}`);
  for (const [k, v] of Object.entries(m)) console.log(`- ${k}: ${v}`);
  console.log(`- load average at start / end: ${loadStart} / ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`- best of several rounds (the least disturbed one): bare, read and 1 KiB write ${ROUNDS} interleaved rounds of ${roundMs / 1000} s; 1 MiB write 3 × 1 s; list/glob/grep 3 × up to 30 calls at 1 client, then up to 96 calls at 32 clients; start-up ${STARTS} starts (${readyTimes.map((x) => x.toFixed(0)).join(', ')} ms)\n`);
  console.log(table(rows));
}

main().then(
  () => cleanup(),
  (err) => {
    cleanup();
    console.error(err);
    process.exitCode = 1;
  },
);
