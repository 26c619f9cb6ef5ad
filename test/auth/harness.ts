/**
 * @module test/auth/harness
 * In-process daemons with any auth configuration, for the auth and admin tests: a real
 * {@link Daemon} on port 0 over a temp data dir, spoken to over real HTTP.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Daemon } from '../../src/daemon.js';
import { loadConfig, type ConfigInput } from '../../src/config.js';

export interface Answer {
  id: unknown;
  result?: any;
  error?: { code: number; message: string; data?: any };
}

/** A JSON-RPC error, thrown by {@link AuthDaemon.call}; `t.rejects(p, {code})` matches it. */
export class RpcFailure extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(`${code} ${message}`);
  }
}

export interface AuthDaemon {
  readonly daemon: Daemon;
  readonly dataDir: string;
  readonly url: string;
  rpc(method: string, params?: Record<string, unknown>, headers?: Record<string, string>): Promise<Answer>;
  call(method: string, params?: Record<string, unknown>, headers?: Record<string, string>): Promise<any>;
  raw(path: string, init?: RequestInit): Promise<Response>;
  whoami(headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  /** Stop and start again on the same data dir (and the same flags). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** `Authorization: Bearer <token>`. */
export const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

/** A temp dir removed at teardown. */
export function tempDir(t: { teardown(fn: () => unknown): void }, tag = 'svc-auth-'): string {
  const dir = mkdtempSync(join(tmpdir(), tag));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A clock for a daemon under test: real time plus an offset that {@link TestClock.advance} moves,
 * so that expiry is tested by moving time forward rather than by sleeping.
 */
export class TestClock {
  #offset = 0;
  readonly now = (): number => Date.now() + this.#offset;
  advance(ms: number): void {
    this.#offset += ms;
  }
}

/** Start a daemon with these config flags (no environment); stopped at teardown. */
export async function startAuthDaemon(
  t: { teardown(fn: () => unknown): void },
  flags: ConfigInput,
  dir?: string,
  opts: { clock?: TestClock } = {},
): Promise<AuthDaemon> {
  const dataDir = dir ?? mkdtempSync(join(tmpdir(), 'svc-auth-'));
  const config = loadConfig({ host: '127.0.0.1', port: 0, dataDir, logLevel: 'silent', ...flags }, {});
  const daemonOpts = opts.clock ? { clock: opts.clock.now } : {};
  let daemon = new Daemon(config, undefined, daemonOpts);
  let port: number;
  try {
    port = (await daemon.start()).port;
  } catch (err) {
    await daemon.stop();
    if (dir === undefined) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  let nextId = 1;
  const handle: AuthDaemon = {
    get daemon() { return daemon; },
    dataDir,
    get url() { return `http://127.0.0.1:${port}`; },
    raw: (path, init) => fetch(handle.url + path, init),
    async rpc(method, params = {}, headers = {}) {
      const res = await handle.raw(`/api/nfs/${method}`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
      });
      return (await res.json()) as Answer;
    },
    async call(method, params = {}, headers = {}) {
      const a = await handle.rpc(method, params, headers);
      if (a.error) throw new RpcFailure(a.error.code, a.error.message, a.error.data);
      return a.result;
    },
    async whoami(headers = {}) {
      const res = await handle.raw('/api/auth/whoami', { headers });
      return { status: res.status, body: await res.json() };
    },
    async restart() {
      await daemon.stop();
      daemon = new Daemon(config, undefined, daemonOpts);
      port = (await daemon.start()).port;
    },
    stop: () => daemon.stop(),
  };
  t.teardown(async () => {
    await daemon.stop();
    if (dir === undefined) rmSync(dataDir, { recursive: true, force: true });
  });
  return handle;
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** What one `node bin/svc …` run did. */
export interface SvcRun {
  code: number | null;
  out: string;
  err: string;
}

/**
 * Run the real `svc` binary (dist/; `npm test` builds first) with stdin `input`, an environment
 * without SVC_* settings plus `env`, until it exits or `until(stdout)` says it has printed enough
 * or stderr (then it gets SIGTERM).
 */
export function runSvc(
  args: string[],
  opts: { input?: string; env?: Record<string, string>; until?: (out: string, err: string) => boolean; timeoutMs?: number } = {},
): Promise<SvcRun> {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is missing: run `npx tsc -p tsconfig.json` first');
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_'))), ...opts.env };
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'svc'), ...args], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const check = () => {
    if (opts.until?.(out, err)) child.kill('SIGTERM');
  };
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    check();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
    check();
  });
  child.stdin.end(opts.input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  return new Promise((resolve) => child.once('close', (code) => {
    clearTimeout(timer);
    resolve({ code, out, err });
  }));
}
