/**
 * @module transports/fuse/mount
 * One FUSE mount's lifecycle, shared by `svc serve --mount` (in-process backend) and `svc mount`
 * (remote backend): the mount point is created if missing and must be empty, a stale mount left
 * by a crash is detached first (a live one, whose server still answers, is refused), and stop()
 * unmounts, then commits what open files still hold. A mount detached from outside (`svc unmount DIR`,
 * `fusermount -u`) is noticed within {@link DETACH_POLL_MS}: the mount stops as on stop() and
 * `onDetached` is called (`svc mount` exits then).
 *
 * The daemon never makes a synchronous fs call on its own mount (that deadlocks the process beyond
 * kill -9): whether the point is mounted is read from /proc/self/mountinfo, never by stat-ing it;
 * only a mount found there before this one is made is probed (statfs), asynchronously, to tell
 * whether it is live.
 */
import { spawn } from 'node:child_process';
import { mkdir, readdir, statfs } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Logger } from '../../core/log.js';
import { forceUnmount, fuseSupport, FuseUnavailableError, mountedType, NativeMount, type FuseBinding } from '../../native/fuse.js';
import type { FuseBackend } from './backend.js';
import { FuseFileSystem } from './operations.js';
import { KernelCache } from './kernel-cache.js';

/**
 * Seconds the kernel caches attributes and lookups. Changes from other faces are pushed to the
 * kernel as they happen ({@link KernelCache}); this bounds how long one can stay unseen when that
 * is not possible (no /dev/fuse descriptor found, a notification dropped).
 */
export const KERNEL_CACHE_SECONDS = 0.5;
/**
 * µs the libfuse 3 binding watches for the next request after serving one, before the daemon's
 * thread sleeps (NativeMountOptions.spinMicros): a program working through many files (cp -r, tar,
 * git, a build) sends its next request within that, and catching it saves a thread wake-up, the
 * larger part of a small request's round trip on a VM (docs/performance.md, "Waiting for the next
 * request"). An idle mount does not spin; a remote mount (whose answers wait for the network) neither.
 */
export const FUSE_SPIN_MICROS = 30;
/** How often the mount table is read to notice an unmount made from outside. */
export const DETACH_POLL_MS = 1000;
/** How long a file system already mounted at the mount point has to answer before it counts as stale. */
const LIVE_PROBE_MS = 2000;

export interface FuseMountOptions {
  dir: string;
  backend: FuseBackend;
  log: Logger;
  /** libfuse debug output on stderr. */
  debug?: boolean;
  /** Called once the mount was unmounted from outside and has stopped. */
  onDetached?: () => void;
}

/**
 * Whether the file system mounted at `dir` answers. A mount left by a crashed server answers
 * "Transport endpoint is not connected" at once; one that does not answer within
 * {@link LIVE_PROBE_MS} (a hung server) counts as stale too. The probe is statfs, which the kernel
 * always asks the server: a stat would be answered from the attributes the kernel still caches
 * for a moment after the server died, and a daemon restarted at once would refuse the stale mount
 * as live. Never call it on this process's own mount: the probe runs on libuv's pool, but the
 * answer would have to come from this process.
 */
async function isLiveMount(dir: string): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), LIVE_PROBE_MS);
    timer.unref();
  });
  try {
    return await Promise.race([statfs(dir).then(() => true, () => false), hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether something is mounted at `dir` (read from the mount table, without touching `dir`). */
export async function isMountPoint(dir: string): Promise<boolean> {
  return (await mountedType(dir)) !== undefined;
}

export class FuseMount {
  readonly dir: string;
  readonly #opts: FuseMountOptions;
  #fs: FuseFileSystem | undefined;
  #native: NativeMount | undefined;
  #kernel: KernelCache | undefined;
  #stopping: Promise<void> | undefined;
  #watch: NodeJS.Timeout | undefined;
  #detached = false;

  /** No I/O until {@link start}. */
  constructor(opts: FuseMountOptions) {
    this.#opts = opts;
    this.dir = resolve(opts.dir);
  }

  /** The FUSE binding serving the mount, once mounted. */
  get binding(): FuseBinding | undefined {
    return this.#native?.binding;
  }

  get mounted(): boolean {
    return this.#native !== undefined && this.#stopping === undefined;
  }

  /** Mount and resolve once the kernel serves requests. Throws FuseUnavailableError when FUSE cannot work here. */
  async start(): Promise<void> {
    const { log } = this.#opts;
    const support = fuseSupport();
    if (!support.available) throw new FuseUnavailableError(support.reason);
    if (await isMountPoint(this.dir)) {
      // Another svc (or any FUSE server) still serving there is not a crash's leftover: never detach it.
      if (await isLiveMount(this.dir)) {
        throw new Error(`${this.dir} is already mounted and its server answers (another svc serve --mount or svc mount?): unmount it first (svc unmount ${this.dir})`);
      }
      log.warn({ dir: this.dir }, 'clearing a stale mount left at the mount point');
      await forceUnmount(this.dir);
    }
    await mkdir(this.dir, { recursive: true });
    // libfuse 2 refuses a non-empty mount point with a bare "fuse failed"; say why instead.
    const present = await readdir(this.dir);
    if (present.length > 0) {
      throw new Error(`cannot mount ${this.dir}: the directory is not empty (${present.length} entr${present.length === 1 ? 'y' : 'ies'}, such as ${JSON.stringify(present[0])}), and the mount would hide what is there: mount on an empty directory`);
    }
    await mkdir(this.#opts.backend.spoolDir, { recursive: true, mode: 0o700 });
    const fs = new FuseFileSystem({
      backend: this.#opts.backend, log, uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0,
      onExternalChange: (event) => this.#kernel?.changed(event),
      dropPages: (path) => this.#kernel?.dropPages(path),
    });
    const native = new NativeMount(this.dir, fs.operations(), {
      cacheSeconds: KERNEL_CACHE_SECONDS, defaultPermissions: true, fsname: `svc:${this.#opts.backend.description}`,
      requestTimeoutMs: 120_000, spinMicros: this.#opts.backend.inProcess ? FUSE_SPIN_MICROS : 0, debug: this.#opts.debug,
    });
    try {
      await native.mount();
    } catch (err) {
      await fs.close();
      throw err;
    }
    this.#fs = fs;
    this.#native = native;
    const device = native.device;
    if (native.renamed && native.removed) fs.followNodeTable({ renamed: native.renamed, removed: native.removed });
    if (device) this.#kernel = new KernelCache(this.dir, device, log, native.nodeOf);
    else log.info({ dir: this.dir }, `no FUSE connection found to notify: changes from other faces show within ${KERNEL_CACHE_SECONDS} s`);
    this.#watchDetach();
    log.info({ dir: this.dir, backend: this.#opts.backend.description, binding: native.binding }, 'FUSE mount ready');
  }

  /** Notice an unmount made from outside (the kernel then sends nothing more: nothing else tells). */
  #watchDetach(): void {
    this.#watch = setTimeout(() => {
      void isMountPoint(this.dir).then((mounted) => {
        if (this.#stopping) return;
        if (mounted) return this.#watchDetach();
        this.#detached = true;
        this.#opts.log.warn({ dir: this.dir }, 'the mount point was unmounted from outside; stopping the mount');
        void this.stop().finally(() => this.#opts.onDetached?.());
      });
    }, DETACH_POLL_MS);
    this.#watch.unref();
  }

  /** Unmount (lazily: open files do not block it), commit what is pending, close the backend. Idempotent. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const { log } = this.#opts;
    clearTimeout(this.#watch);
    // Pages a program dirtied through a shared memory map and has not msync-ed yet are the kernel's,
    // not in an open file here: have it write them back while the mount still serves, or the
    // unmount (lazy, since the mapping keeps the file open) loses them.
    if (this.#native && !this.#detached) await syncMount(this.dir, log);
    // Before the unmount: no notification may be written once the connection's descriptor can close.
    await this.#kernel?.close();
    if (this.#native) {
      try {
        await this.#native.unmount();
      } catch (err) {
        // Unmounted from outside: fuse-native's own unmount fails, and nothing is left to detach.
        if (this.#detached || !(await isMountPoint(this.dir))) return this.#closeAfterUnmount();
        log.warn({ err, dir: this.dir }, 'unmount failed; detaching lazily');
        await forceUnmount(this.dir).catch((e) => log.error({ err: e, dir: this.dir }, 'cannot unmount'));
      }
    }
    await this.#closeAfterUnmount();
  }

  async #closeAfterUnmount(): Promise<void> {
    await this.#fs?.close();
    try {
      await this.#opts.backend.close();
    } catch (err) {
      // The store cannot take them now (a full disk): the journal keeps them for the next start.
      this.#opts.log.error({ err, dir: this.dir }, 'closed files could not be committed at unmount; the next start replays them');
    }
    if (this.#native) this.#opts.log.info({ dir: this.dir }, 'FUSE mount stopped');
  }
}

/** How long a stop waits for the kernel to write back a mount's dirty pages. */
const SYNC_AT_STOP_MS = 10_000;

/**
 * syncfs(2) of the mount, from a child process (`sync -f`; never from this process, which serves
 * the writes it causes), so dirty pages of shared memory maps reach the open files before the
 * unmount. Waits at most {@link SYNC_AT_STOP_MS}; a failure is logged, not thrown.
 */
function syncMount(dir: string, log: Logger): Promise<void> {
  return new Promise((resolveSync) => {
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(timer);
      resolveSync();
    };
    const child = spawn('sync', ['-f', dir], { stdio: 'ignore' });
    timer = setTimeout(() => {
      log.warn({ dir }, 'writing back dirty pages before the unmount took too long; unmounting anyway');
      child.kill('SIGKILL');
      done();
    }, SYNC_AT_STOP_MS);
    child.once('error', (err) => {
      log.warn({ err, dir }, 'cannot write back dirty pages before the unmount');
      done();
    });
    child.once('exit', (code) => {
      if (code !== 0) log.warn({ dir, code }, 'writing back dirty pages before the unmount failed');
      done();
    });
  });
}
