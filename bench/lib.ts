/**
 * @module bench/lib
 * Helpers for bench/rpc.ts: a closed-loop HTTP load generator over keep-alive agents, latency
 * percentiles, child-process servers (the bare node:http ceiling and the real daemon), RSS, the
 * machine description, the results table, populating a data directory and write bodies. Every
 * loop is bounded by a count and a deadline.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { buildServices } from '../src/daemon.js';
import { createLogger } from '../src/core/log.js';

// ---------------------------------------------------------------- data

/** Write files through FsService in big parallel batches (one LMDB commit per batch); how many. */
export async function populate(dataDir: string, files: Iterable<[string, Buffer]>): Promise<number> {
  const services = buildServices(dataDir, createLogger('silent'));
  let n = 0;
  try {
    await services.fs.upgrade(); // marks the fresh data directory with the current layout
    let batch: Promise<unknown>[] = [];
    for (const [path, content] of files) {
      batch.push(services.fs.write(path, content));
      n++;
      if (batch.length === 5000) {
        await Promise.all(batch);
        batch = [];
      }
    }
    await Promise.all(batch);
  } finally {
    await services.store.close();
  }
  return n;
}

/** `count` small filler files, 1,000 per directory (the "files stored" of the start-up figures). */
export function* fillerFiles(count: number): Generator<[string, Buffer]> {
  for (let i = 0; i < count; i++) {
    yield [`/filler/d${String(Math.floor(i / 1000)).padStart(3, '0')}/f${i}.bin`, Buffer.from(`filler ${i} ${'x'.repeat(48)}`)];
  }
}

/**
 * Write bodies with unique content (so no chunk is deduplicated): the first 6 bytes carry a
 * counter, the rest is fixed random data whose base64 is computed once (6 bytes = 8 base64
 * characters, so the two halves concatenate into valid base64).
 */
export function writeBodies(size: number, dir: string): (worker: number, seq: number) => Buffer {
  const rest = Buffer.from(randomBytes(size - 6).toString('base64'));
  const tail = Buffer.from('"}}}');
  return (worker, seq) => {
    const counter = Buffer.alloc(6);
    counter.writeUIntBE(worker * 1e9 + seq, 0, 6);
    const head = Buffer.from(
      `{"jsonrpc":"2.0","id":${seq},"method":"write","params":{"path":"${dir}/c${worker}/${seq}","content":{"__type__":"bytes","data":"`
      + counter.toString('base64'),
    );
    return Buffer.concat([head, rest, tail]);
  };
}

// ---------------------------------------------------------------- HTTP client

/** One POST over a keep-alive agent; resolves with the status and the whole body. */
export function post(agent: http.Agent, port: number, path: string, body: Buffer): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1', port, path, method: 'POST', agent,
        headers: { 'Content-Type': 'application/json', 'Content-Length': body.length },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: parts.length === 1 ? parts[0]! : Buffer.concat(parts) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** GET a path once (no agent); resolves with the status, rejects on a connection error. */
export function get(port: number, path: string, timeoutMs = 1000): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** A JSON-RPC request body. */
export function rpcBody(method: string, params: unknown, id = 1): Buffer {
  return Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
}

/** Whether a JSON-RPC answer is a success (HTTP 200, `result` present, no `error`). */
export function isRpcSuccess(res: { status: number; body: Buffer }): boolean {
  if (res.status !== 200) return false;
  // The envelope ends with either "result":… or "error":{…}; parse only the start to stay cheap.
  const head = res.body.subarray(0, 64).toString('latin1');
  return head.includes('"result"') && !head.includes('"error"');
}

// ---------------------------------------------------------------- load and statistics

export interface LoadOptions {
  /** Concurrent clients (each a sequential loop over its own keep-alive socket). */
  concurrency: number;
  /** Measured phase length. */
  durationMs: number;
  /** Hard cap on measured requests across all clients. */
  maxOps: number;
  /** Warm-up before measuring (not counted). */
  warmupMs?: number;
  /** Build one request: worker index and its running count, so writes can use fresh paths. */
  body: (worker: number, seq: number) => Buffer;
  port: number;
  path: string;
  /** Validate an answer; a false counts as an error. */
  check?: (res: { status: number; body: Buffer }) => boolean;
  /** The server's pid, to report its CPU time per request. */
  serverPid?: number | undefined;
}

export interface LoadResult {
  ops: number;
  errors: number;
  seconds: number;
  opsPerSec: number;
  p50: number;
  p99: number;
  /** Server CPU time (all threads) per measured request, µs; NaN when unknown. */
  cpuUsPerOp: number;
}

/** Closed-loop load: `concurrency` clients, each sending its next request when the last one answers. */
export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency, maxFreeSockets: opts.concurrency });
  const check = opts.check ?? isRpcSuccess;
  const latencies: number[] = [];
  let errors = 0;
  let measuring = false;
  let issued = 0;
  const warmupEnd = performance.now() + (opts.warmupMs ?? 0);
  let end = Infinity;
  const seqs = new Array<number>(opts.concurrency).fill(0);
  let started = 0;
  let cpuStart = NaN;

  const worker = async (w: number) => {
    // Bounded by the deadline and by maxOps (plus the warm-up's own ceiling).
    for (let guard = 0; guard < opts.maxOps * 4; guard++) {
      const now = performance.now();
      if (!measuring && now >= warmupEnd) {
        measuring = true;
        started = now;
        if (opts.serverPid !== undefined) cpuStart = cpuMs(opts.serverPid);
        end = now + opts.durationMs;
      }
      if (measuring && (now >= end || issued >= opts.maxOps)) return;
      const counted = measuring;
      if (counted) issued++;
      const body = opts.body(w, seqs[w]!++);
      const t0 = performance.now();
      let ok: boolean;
      try {
        ok = check(await post(agent, opts.port, opts.path, body));
      } catch {
        ok = false;
      }
      if (counted) {
        latencies.push(performance.now() - t0);
        if (!ok) errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, (_, w) => worker(w)));
  const seconds = (performance.now() - started) / 1000;
  const cpuUsed = opts.serverPid === undefined ? NaN : cpuMs(opts.serverPid) - cpuStart;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    ops: latencies.length,
    errors,
    seconds,
    opsPerSec: latencies.length / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    cpuUsPerOp: (cpuUsed * 1000) / latencies.length,
  };
}

/** Nearest-rank percentile of sorted values (NaN when empty). */
export function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

// ---------------------------------------------------------------- child-process servers

export interface Child {
  proc: ChildProcess;
  port: number;
  /** ms from spawn until the ready line appeared. */
  lineMs: number;
  /** Recent stderr, for diagnostics. */
  stderr: () => string;
}

/**
 * Spawn a server and wait (bounded) for a stdout line matching `ready`, whose first group is the port.
 */
export function spawnServer(cmd: string, args: string[], ready: RegExp, timeoutMs = 30_000, env?: NodeJS.ProcessEnv): Promise<Child> {
  const t0 = performance.now();
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env });
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => {
    err = (err + c.toString()).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')}: not ready after ${timeoutMs} ms\n${err}`));
    }, timeoutMs);
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = ready.exec(out);
      if (m) {
        clearTimeout(timer);
        proc.stdout!.removeAllListeners('data');
        proc.stdout!.resume();
        resolve({ proc, port: Number(m[1]), lineMs: performance.now() - t0, stderr: () => err });
      }
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} exited early (${code ?? signal})\n${err}`));
    });
  });
}

/** Poll GET `path` until it answers 200; bounded by count and time. Resolves with the ms it took. */
export async function waitHealthy(port: number, path = '/health', timeoutMs = 10_000): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < 10_000 && performance.now() - t0 < timeoutMs; i++) {
    try {
      if ((await get(port, path, 500)) === 200) return performance.now() - t0;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`GET ${path} did not answer 200 within ${timeoutMs} ms`);
}

/** SIGTERM a child and wait for it (SIGKILL after `timeoutMs`). */
export async function stopChild(proc: ChildProcess, timeoutMs = 10_000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/**
 * CPU time a process has used so far (user + system, all threads) in ms, from /proc/<pid>/stat;
 * NaN off Linux. Tick resolution (10 ms), so only meaningful over thousands of requests.
 */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** USER_HZ: 100 on every Linux build that matters. */
const CLOCK_TICKS = 100;

/** Resident set size of a process in MiB (/proc/<pid>/status VmRSS), or NaN off Linux. */
export function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * The ceiling: a bare node:http server that parses a JSON body and answers a small JSON-RPC
 * envelope, nothing else. Runs as its own process, like the daemon.
 */
export const BARE_SERVER_SOURCE = `
const http = require('node:http');
const server = http.createServer({ keepAliveTimeout: 5000 }, (req, res) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    let id = null;
    try { id = JSON.parse(Buffer.concat(parts).toString('utf8')).id ?? null; } catch {}
    const text = JSON.stringify({ jsonrpc: '2.0', id, result: { ok: true } });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  });
});
server.listen(0, '127.0.0.1', () => console.log('bare listening on ' + server.address().port));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

// ---------------------------------------------------------------- machine and output

/** A one-paragraph description of the machine and runtime. */
export function machine(dataDir: string): Record<string, string> {
  const cpu = os.cpus()[0]?.model ?? 'unknown';
  let fs = 'unknown';
  try {
    // The mount holding the data directory: longest mount point that prefixes it.
    const mounts = readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' '));
    const best = mounts.filter((m) => m[1] && dataDir.startsWith(m[1])).sort((a, b) => b[1]!.length - a[1]!.length)[0];
    if (best) {
      const dev = best[0]!.replace('/dev/', '');
      let rota = '';
      try {
        rota = readFileSync(`/sys/block/${dev.replace(/\d+$/, '')}/queue/rotational`, 'utf8').trim() === '1'
          ? ', reported rotational' : ', reported non-rotational';
      } catch {
        // not a block device we can inspect (overlay, tmpfs)
      }
      fs = `${best[2]} on ${best[0]}${rota}`;
    }
  } catch {
    // not Linux
  }
  return {
    cpus: `${os.cpus().length} × ${cpu}`,
    memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    disk: fs,
  };
}

export interface Row {
  name: string;
  conns: number | string;
  opsPerSec?: number;
  p50?: number;
  p99?: number;
  cpuUsPerOp?: number;
  /** Ratio to the bare endpoint at the same concurrency. */
  vsBare?: number;
  /** e.g. `≥ 50 % of bare`, `≤ 30 ms (p50)`. */
  target?: string;
  pass?: boolean;
  /** Extra figure shown in place of ops/s (start-up ms, RSS MiB). */
  value?: string;
  errors?: number;
}

const fmt = (n: number | undefined, digits = 1) =>
  n === undefined || Number.isNaN(n) ? '' : n >= 1000 ? Math.round(n).toLocaleString('en-US') : n.toFixed(digits);

/** The results as a Markdown table (printed by the bench, pasted into docs/performance.md). */
export function table(rows: Row[]): string {
  const head = ['benchmark', 'conns', 'ops/s', 'p50 ms', 'p99 ms', 'server CPU µs/op', 'vs bare', 'target', 'result'];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i < 2 || i > 6 ? '---' : '---:')).join('|')}|`];
  for (const r of rows) {
    lines.push(`| ${[
      r.name,
      String(r.conns),
      r.value ?? fmt(r.opsPerSec, 0),
      fmt(r.p50, 2),
      fmt(r.p99, 2),
      fmt(r.cpuUsPerOp, 0),
      r.vsBare === undefined ? '' : `${(r.vsBare * 100).toFixed(0)} %`,
      r.target ?? '',
      (r.pass === undefined ? '' : r.pass ? 'pass' : '**miss**') + (r.errors ? ` (${r.errors} errors)` : ''),
    ].join(' | ')} |`);
  }
  return lines.join('\n');
}
