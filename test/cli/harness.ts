/**
 * @module test/cli/harness
 * For the CLI tests: a real daemon in this process on port 0 over a temp directory, and the real
 * `svc` binary run as a child process against it (`node bin/svc …`, which loads dist/; `npm test`
 * builds first).
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { Daemon } from '../../src/daemon.js';
import { loadConfig } from '../../src/config.js';
import { SvcClient } from '../../src/client/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'svc');
const RUN_TIMEOUT_MS = 60_000;
// More concurrent `svc` processes than cores only makes each one slower (and risks the timeout).
const MAX_CONCURRENT = Math.max(2, availableParallelism());
let running = 0;
const waiting: (() => void)[] = [];

async function slot(): Promise<() => void> {
  if (running >= MAX_CONCURRENT) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  return () => {
    running--;
    waiting.shift()?.();
  };
}

if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
  throw new Error('dist/cli/main.js is missing: run `npx tsc -p tsconfig.json` (npm test builds first)');
}

/** What one `svc` invocation did. */
export interface SvcRun {
  code: number | null;
  /** stdout as bytes (binary-safe). */
  stdout: Buffer;
  /** stdout as UTF-8 text. */
  out: string;
  stderr: string;
}

export interface SvcOptions {
  /** SVC_URL for the child (omitted: none set). */
  url?: string;
  /** Bytes fed to stdin; stdin is closed either way so nothing waits on it. */
  input?: string | Uint8Array;
  /** Extra environment; undefined values are removed. */
  env?: Record<string, string | undefined>;
}

/** Run `node bin/svc ...args` and collect its exit code and output (a few at a time). */
export async function svc(args: string[], opts: SvcOptions = {}): Promise<SvcRun> {
  const release = await slot();
  try {
    return await spawnSvc(args, opts);
  } finally {
    release();
  }
}

function spawnSvc(args: string[], opts: SvcOptions): Promise<SvcRun> {
  const env: Record<string, string | undefined> = { ...process.env, SVC_URL: opts.url, SVC_API_KEY: undefined, SVC_SUBJECT: undefined, ...opts.env };
  for (const k of Object.keys(env)) if (env[k] === undefined || k.startsWith('_TAPJS_')) delete env[k];
  // tap re-adds its process-tracking hook to NODE_OPTIONS on every spawn, which nearly doubles the
  // start time of each `svc` run; `env -u` drops it just before node starts (POSIX only).
  const [cmd, argv] = process.platform === 'win32'
    ? [process.execPath, [BIN, ...args]]
    : ['/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, BIN, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, RUN_TIMEOUT_MS);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out);
      const stderr = Buffer.concat(err).toString('utf8') + (timedOut ? `[harness: svc ${args.join(' ')} killed after ${RUN_TIMEOUT_MS} ms]` : '');
      resolve({ code, stdout, out: stdout.toString('utf8'), stderr });
    });
    child.stdin.on('error', () => undefined); // a command that never reads stdin may exit first
    child.stdin.end(opts.input ?? '');
  });
}

/** A running daemon: its URL, and a typed client for arranging state without spawning the CLI. */
export interface TestDaemon {
  url: string;
  client: SvcClient;
}

/** Start a daemon on port 0 in a fresh temp directory; stopped and removed when `t` ends. */
export async function startDaemon(t: Test, opts: { apiKey?: string } = {}): Promise<TestDaemon> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-cli-test-'));
  const daemon = new Daemon(loadConfig({ port: 0, dataDir, logLevel: 'silent', apiKey: opts.apiKey }, {}));
  t.teardown(async () => {
    await daemon.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const addr = await daemon.start();
  const url = `http://127.0.0.1:${addr.port}`;
  return { url, client: new SvcClient({ url, apiKey: opts.apiKey }) };
}

/** A loopback URL on which nothing listens (a port that was just free). */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
