/**
 * @module test/helpers/daemon
 * Start the real daemon for end-to-end tests: as a child process (`node bin/svc serve --port 0`,
 * the way users run it) or in process (a {@link Daemon} on port 0, faster, for tests that never
 * kill or restart it). Both offer the same handle: `rpc`, `call`, `raw`, `stop`, and for the
 * child process `kill9` and `restart` on the same data directory.
 *
 * The child process runs the built code (dist/); `npm test` builds first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Daemon } from '../../src/daemon.js';
import { loadConfig } from '../../src/config.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'svc');
const START_TIMEOUT_MS = 20_000;

export interface DaemonOptions {
  apiKey?: string;
  /** `--max-body` value, e.g. `1mb`. */
  maxBody?: string;
  /** Reuse a data directory (default: a fresh temp dir, removed by cleanup()). */
  dataDir?: string;
  /** Run a Daemon in this process instead of a child process (no kill9/restart of a process). */
  inProcess?: boolean;
}

/** A JSON-RPC envelope as the daemon answers. */
export interface Envelope {
  jsonrpc: '2.0';
  id: string | number | null;
  result?: any;
  error?: { code: number; message: string; data?: any };
}

/** A JSON-RPC error answer, thrown by {@link DaemonHandle.call}; `t.rejects(p, {code})` matches it. */
export class RpcFailure extends Error {
  constructor(readonly code: number, message: string, readonly data?: any) {
    super(`${code} ${message}`);
  }
}

export interface RpcOptions {
  headers?: Record<string, string>;
  /** Request id (default: a counter). */
  id?: string | number;
}

export interface DaemonHandle {
  readonly dataDir: string;
  /** `http://127.0.0.1:PORT` (changes on restart). */
  readonly url: string;
  readonly port: number;
  /** Stdout and stderr of the child so far (empty in process), for assertion messages. */
  output(): string;
  /** POST /api/nfs/<method> with a full envelope; the parsed answer. */
  rpc(method: string, params?: Record<string, unknown>, opts?: RpcOptions): Promise<Envelope>;
  /** Like rpc, but the result, or a thrown {@link RpcFailure}. */
  call(method: string, params?: Record<string, unknown>, opts?: RpcOptions): Promise<any>;
  /** Any request against the daemon's base URL. */
  raw(path: string, init?: RequestInit): Promise<Response>;
  /** SIGTERM (or Daemon.stop() in process) and wait for the exit; returns the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL, no goodbye. Child process only. */
  kill9(): Promise<void>;
  /** Start again on the same data dir (after stop or kill9). */
  restart(): Promise<void>;
  /** Stop if running and remove the temp data dir (if the helper made it). */
  cleanup(): Promise<void>;
}

/** The bytes wire form of a string or buffer. */
export function bytes(content: string | Buffer): { __type__: 'bytes'; data: string } {
  return { __type__: 'bytes', data: Buffer.from(content).toString('base64') };
}

/** Decode a bytes wire object. */
export function unbytes(value: { __type__: string; data: string }): Buffer {
  if (value?.__type__ !== 'bytes') throw new Error(`not a bytes object: ${JSON.stringify(value)}`);
  return Buffer.from(value.data, 'base64');
}

/** A fresh temp directory under os.tmpdir(). */
export function tempDir(tag = 'svc-e2e-'): string {
  return mkdtempSync(join(tmpdir(), tag));
}

/**
 * Start a daemon; with a tap test `t`, it is stopped and its temp dir removed at teardown.
 */
export async function startDaemon(
  opts: DaemonOptions = {},
  t?: { teardown(fn: () => unknown): void },
): Promise<DaemonHandle> {
  const ownsDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? tempDir();
  const impl = opts.inProcess ? new InProcess(dataDir, opts) : new ChildDaemon(dataDir, opts);
  let nextId = 1;
  const handle: DaemonHandle = {
    dataDir,
    get url() { return `http://127.0.0.1:${impl.port}`; },
    get port() { return impl.port; },
    output: () => impl.output(),
    async rpc(method, params = {}, o = {}) {
      const res = await handle.raw(`/api/nfs/${method}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...o.headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: o.id ?? nextId++, method, params }),
      });
      const text = await res.text();
      try {
        return JSON.parse(text) as Envelope;
      } catch {
        throw new Error(`${method}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
      }
    },
    async call(method, params = {}, o = {}) {
      const env = await handle.rpc(method, params, o);
      if (env.error) throw new RpcFailure(env.error.code, env.error.message, env.error.data);
      return env.result;
    },
    raw: (path, init) => fetch(handle.url + path, init),
    stop: () => impl.stop(),
    kill9: () => impl.kill9(),
    restart: () => impl.start(),
    async cleanup() {
      await impl.stop();
      if (ownsDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    await impl.start();
  } catch (err) {
    if (ownsDir) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  t?.teardown(() => handle.cleanup());
  return handle;
}

interface Impl {
  port: number;
  start(): Promise<void>;
  stop(): Promise<number | null>;
  kill9(): Promise<void>;
  output(): string;
}

class ChildDaemon implements Impl {
  port = 0;
  #child: ChildProcess | undefined;
  #exited: Promise<number | null> | undefined;
  #out = '';

  constructor(private readonly dataDir: string, private readonly opts: DaemonOptions) {
    if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
      throw new Error('dist/ is missing: run `npx tsc -p tsconfig.json` before the e2e tests');
    }
  }

  output(): string {
    return this.#out;
  }

  async start(): Promise<void> {
    if (this.#child) throw new Error('daemon already running');
    const args = [BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', this.dataDir, '--log-level', 'warn'];
    if (this.opts.apiKey !== undefined) args.push('--api-key', this.opts.apiKey);
    if (this.opts.maxBody !== undefined) args.push('--max-body', this.opts.maxBody);
    // Keep the environment from configuring the daemon behind the flags' back.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_')));
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
    child.stderr!.on('data', (d: Buffer) => (this.#out += d.toString()));
    const from = this.#out.length; // a restart appends: look for this run's line only
    this.port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error(`daemon did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      const fail = (err: Error) => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new Error(`${err.message}\n--- daemon output ---\n${this.#out}`));
      };
      child.stdout!.on('data', (d: Buffer) => {
        this.#out += d.toString();
        const m = /svc listening on http:\/\/[^\s]+:(\d+)/.exec(this.#out.slice(from));
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      });
      child.once('exit', (code) => fail(new Error(`daemon exited with ${code} before listening`)));
    });
    child.removeAllListeners('exit');
    this.#exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode ?? -1);
      else child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null)));
    });
  }

  async stop(): Promise<number | null> {
    const child = this.#child;
    if (!child) return null;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const code = await this.#exited!;
    clearTimeout(killer);
    this.#child = undefined;
    return code;
  }

  async kill9(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    child.kill('SIGKILL');
    await this.#exited;
    this.#child = undefined;
  }
}

class InProcess implements Impl {
  port = 0;
  #daemon: Daemon | undefined;

  constructor(private readonly dataDir: string, private readonly opts: DaemonOptions) {}

  output(): string {
    return '';
  }

  async start(): Promise<void> {
    if (this.#daemon) throw new Error('daemon already running');
    const config = loadConfig({
      host: '127.0.0.1', port: 0, dataDir: this.dataDir, apiKey: this.opts.apiKey, maxBody: this.opts.maxBody, logLevel: 'silent',
    }, {});
    this.#daemon = new Daemon(config);
    this.port = (await this.#daemon.start()).port;
  }

  async stop(): Promise<number | null> {
    const d = this.#daemon;
    this.#daemon = undefined;
    await d?.stop();
    return 0;
  }

  async kill9(): Promise<void> {
    throw new Error('kill9 needs a child-process daemon');
  }
}
