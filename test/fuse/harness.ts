/**
 * @module test/fuse/harness
 * Real kernel mounts for the FUSE tests. The mount is always served by a child process
 * (`node bin/svc serve --mount DIR` or `svc mount DIR --remote-url URL`), never by the test
 * process: a synchronous fs call into a mount from the process serving it deadlocks it beyond
 * kill -9. Every mount is unmounted at teardown, with `fusermount -uz` as a fallback.
 *
 * The child runs the built code (dist/); `npm test` builds first.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuseSupport } from '../../src/native/fuse.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'svc');
const START_TIMEOUT_MS = 20_000;

/** Why the FUSE tests cannot run here, or undefined when they can. */
export function fuseSkipReason(): string | undefined {
  const support = fuseSupport();
  if (!support.available) return `FUSE tests skipped: ${support.reason}`;
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) return 'FUSE tests skipped: dist/ is missing (run `npx tsc -p tsconfig.json`)';
  return undefined;
}

/** Whether something is mounted at `dir`, from the mount table (never touching `dir`). */
export function isMounted(dir: string): boolean {
  const table = readFileSync('/proc/self/mountinfo', 'utf8');
  return table.split('\n').some((l) => l.split(' ')[4] === resolve(dir));
}

/** Run a shell command in a child process (the only way the tests touch a mount synchronously). */
export function sh(cmd: string, opts: { cwd?: string; timeoutMs?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    execFile('bash', ['-c', cmd], { cwd: opts.cwd, timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as NodeJS.ErrnoException).code === 'number' ? (err as unknown as { code: number }).code : 1) : 0;
      resolveRun({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** Like {@link sh} but throws with the output when the command fails. */
export async function shOk(cmd: string, opts: { cwd?: string; timeoutMs?: number } = {}): Promise<string> {
  const r = await sh(cmd, opts);
  if (r.code !== 0) throw new Error(`command failed (${r.code}): ${cmd}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

export function tempDir(tag = 'svc-fuse-'): string {
  return mkdtempSync(join(tmpdir(), tag));
}

/** Poll `fn` until it returns true (or a value), up to `ms`. */
export async function eventually<T>(fn: () => Promise<T | false | undefined>, ms = 2000, stepMs = 50): Promise<T | false | undefined> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** A JSON-RPC failure from the daemon. */
export class RpcFailure extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(`${code} ${message}`);
  }
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** One child process serving a mount. */
export class MountProcess {
  readonly mnt: string;
  readonly args: string[];
  #child: ChildProcess | undefined;
  #exited: Promise<number | null> | undefined;
  #out = '';
  /** Port of a `serve` child (0 for a `mount` child). */
  port = 0;
  /** The binding the child mounts with (default: SVC_FUSE_BINDING of this process, if set). */
  readonly binding: string | undefined;

  constructor(args: string[], mnt: string, binding?: string) {
    this.args = args;
    this.mnt = mnt;
    this.binding = binding;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  output(): string {
    return this.#out;
  }

  async start(): Promise<void> {
    // SVC_FUSE_BINDING passes through: test/fuse/fuse-native.test.ts runs scenarios on the fallback binding.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_') || k === 'SVC_FUSE_BINDING'));
    if (this.binding) env.SVC_FUSE_BINDING = this.binding;
    const child = spawn(process.execPath, [BIN, ...this.args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    const from = this.#out.length;
    child.stderr!.on('data', (d: Buffer) => (this.#out += d.toString()));
    await new Promise<void>((resolveStart, reject) => {
      const timer = setTimeout(() => fail(new Error(`no mount within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      const fail = (err: Error) => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new Error(`${err.message}\n--- output ---\n${this.#out}`));
      };
      child.stdout!.on('data', (d: Buffer) => {
        this.#out += d.toString();
        const text = this.#out.slice(from);
        const port = /svc listening on http:\/\/[^\s]+:(\d+)/.exec(text);
        if (port) this.port = Number(port[1]);
        if (/svc mounted /.test(text)) {
          clearTimeout(timer);
          resolveStart();
        }
      });
      child.once('exit', (code) => fail(new Error(`exited with ${code} before mounting`)));
    });
    child.removeAllListeners('exit');
    this.#exited = new Promise((r) => {
      if (child.exitCode !== null || child.signalCode !== null) r(child.exitCode ?? -1);
      else child.once('exit', (code, signal) => r(code ?? (signal ? -1 : null)));
    });
  }

  /** Wait up to `ms` for the child to exit on its own; its exit code, or 'running'. */
  async exitWithin(ms: number): Promise<number | null | 'running'> {
    const child = this.#child;
    if (!child) return null;
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([this.#exited!, new Promise<'running'>((r) => (timer = setTimeout(() => r('running'), ms)))]);
    clearTimeout(timer);
    if (result !== 'running') this.#child = undefined;
    return result;
  }

  /** SIGTERM (or `signal`) and wait for the exit; returns the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const child = this.#child;
    if (!child) return null;
    child.kill(signal);
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const code = await this.#exited!;
    clearTimeout(killer);
    this.#child = undefined;
    return code;
  }

  /** SIGKILL: leaves a stale mount behind, as a crash does. */
  async kill9(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    child.kill('SIGKILL');
    await this.#exited;
    this.#child = undefined;
  }

  async rpc(method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const res = await fetch(`${this.url}/api/nfs/${method}`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = (await res.json()) as { result?: unknown; error?: { code: number; message: string; data?: unknown } };
    if (body.error) throw new RpcFailure(body.error.code, body.error.message, body.error.data);
    return body.result;
  }

  /** Stop if running, detach the mount whatever happened. */
  async cleanup(): Promise<void> {
    await this.stop().catch(() => undefined);
    if (isMounted(this.mnt)) await sh(`fusermount -uz '${this.mnt}' || umount -l '${this.mnt}'`);
  }
}

export interface DaemonMount extends MountProcess {
  readonly dataDir: string;
}

/** `svc serve --port P (0: any) --data-dir D --mount M` in a child process; cleaned up at teardown. */
export async function startMountedDaemon(
  t: Teardown, opts: { dataDir?: string; mnt?: string; port?: number; extraArgs?: string[]; binding?: 'libfuse3' | 'fuse-native' } = {},
): Promise<DaemonMount> {
  const base = tempDir();
  const dataDir = opts.dataDir ?? join(base, 'data');
  const mnt = opts.mnt ?? join(base, 'mnt');
  const args = ['serve', '--host', '127.0.0.1', '--port', String(opts.port ?? 0), '--data-dir', dataDir, '--mount', mnt, '--log-level', 'warn', ...(opts.extraArgs ?? [])];
  const proc = Object.assign(new MountProcess(args, mnt, opts.binding), { dataDir });
  t.teardown(async () => {
    await proc.cleanup();
    rmSync(base, { recursive: true, force: true });
  });
  await proc.start();
  return proc;
}

/** `svc mount M --remote-url URL` in a child process; cleaned up at teardown. */
export async function startRemoteMount(t: Teardown, url: string, extraArgs: string[] = []): Promise<MountProcess> {
  const base = tempDir('svc-fuse-remote-');
  const mnt = join(base, 'mnt');
  const proc = new MountProcess(['mount', mnt, '--remote-url', url, '--log-level', 'warn', ...extraArgs], mnt);
  t.teardown(async () => {
    await proc.cleanup();
    rmSync(base, { recursive: true, force: true });
  });
  await proc.start();
  return proc;
}
