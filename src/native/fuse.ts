/**
 * @module native/fuse
 * The one import of fuse-native (libfuse 2 bindings), loaded lazily so the daemon starts without
 * it: {@link fuseSupport} says whether a mount can work here and, if not, what to install.
 *
 * fuse-native 2.2.6 needs two corrections, both made in a subclass rather than a fork:
 * - it has no pass-through for `-o` options, and libfuse 2 splits writes into 4 KiB requests unless
 *   mounted with `big_writes,max_write=131072` (25–30× slower): {@link NativeMount} builds the whole
 *   option string itself;
 * - its utimens binding hands JS the access time twice (the C glue converts `l->atime` for both
 *   arguments), so `touch -m`, `tar x` and `rsync -a` would lose modification times. The real
 *   value sits in the native thread-locals struct that fuse-native allocates as a JS Buffer; it is
 *   read from there after checking the struct's size and its opcode field, and the access time is
 *   used as before when either check fails.
 *
 * It has no call for the kernel's cache invalidation notifications either: {@link NativeMount.device}
 * finds the mount's /dev/fuse descriptor, and {@link invalInodeMessage} and {@link invalEntryMessage}
 * encode what is written to it (transports/fuse/kernel-cache does the writing, off the main thread).
 *
 * It exposes no FUSE context (the calling process's uid/gid): mounts are made without
 * `allow_other`, where the kernel admits only callers whose uid and gid equal the daemon's own, so
 * the daemon's ids are the caller's.
 */
import { createRequire } from 'node:module';
import { execFile } from 'node:child_process';
import { existsSync, fstatSync, readdirSync, readlinkSync } from 'node:fs';
import { constants as osConstants } from 'node:os';

/** Attributes of one entry, as fuse-native encodes them (times in ms since the epoch). */
export interface FuseStat {
  mode: number;
  uid: number;
  gid: number;
  size: number;
  nlink: number;
  mtime: number;
  atime: number;
  ctime: number;
  blocks?: number;
  blksize?: number;
}

export interface FuseStatfs {
  bsize: number;
  frsize: number;
  blocks: number;
  bfree: number;
  bavail: number;
  files: number;
  ffree: number;
  favail: number;
  fsid: number;
  flag: number;
  namemax: number;
}

/** Callback of an operation: 0 or a negative errno, then the result. */
type Cb<T extends unknown[] = []> = (code: number, ...result: T) => void;

/** The operations fuse-native calls (libfuse 2 high-level API, by path). */
export interface FuseOperations {
  init?(cb: Cb): void;
  statfs(path: string, cb: Cb<[FuseStatfs?]>): void;
  getattr(path: string, cb: Cb<[FuseStat?]>): void;
  readdir(path: string, cb: Cb<[string[]?, FuseStat[]?]>): void;
  open(path: string, flags: number, cb: Cb<[number?]>): void;
  create(path: string, mode: number, cb: Cb<[number?]>): void;
  read(path: string, fd: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErr: number) => void): void;
  write(path: string, fd: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErr: number) => void): void;
  truncate(path: string, size: number, cb: Cb): void;
  ftruncate(path: string, fd: number, size: number, cb: Cb): void;
  flush(path: string, fd: number, cb: Cb): void;
  fsync(path: string, datasync: number, fd: number, cb: Cb): void;
  /** fsync of a directory (after a rename or create in it, for durability). */
  fsyncdir(path: string, datasync: number, fd: number, cb: Cb): void;
  release(path: string, fd: number, cb: Cb): void;
  unlink(path: string, cb: Cb): void;
  rename(src: string, dest: string, cb: Cb): void;
  link(src: string, dest: string, cb: Cb): void;
  /** Special files only: libfuse turns a regular file's mknod into create. */
  mknod(path: string, mode: number, dev: number, cb: Cb): void;
  symlink(target: string, path: string, cb: Cb): void;
  readlink(path: string, cb: Cb<[string?]>): void;
  mkdir(path: string, mode: number, cb: Cb): void;
  rmdir(path: string, cb: Cb): void;
  chmod(path: string, mode: number, cb: Cb): void;
  chown(path: string, uid: number, gid: number, cb: Cb): void;
  /** Times in ms since the epoch. */
  utimens(path: string, atime: number, mtime: number, cb: Cb): void;
}

/** How a mount behaves in the kernel. */
export interface NativeMountOptions {
  /** Seconds the kernel may cache attributes and name lookups (changes from other faces show up after this). */
  cacheSeconds: number;
  /** Let the kernel check mode bits against the caller (default_permissions). */
  defaultPermissions: boolean;
  /** Shown as the source in `mount` and `df`. */
  fsname: string;
  /** ms before an unanswered request fails with ETIMEDOUT. */
  requestTimeoutMs: number;
  /** libfuse debug output on stderr. */
  debug?: boolean;
}

/** Negative errno for a name (ENOENT → -2), as FUSE callbacks expect; EIO for an unknown name. */
export function errno(name: string): number {
  const n = (osConstants.errno as Record<string, number | undefined>)[name];
  return -(n ?? osConstants.errno.EIO);
}

/** Why FUSE mounts cannot work in this process, with what to do about it. */
export class FuseUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FuseUnavailableError';
  }
}

// The subset of fuse-native's class used here (it ships no types).
interface FuseNativeInstance {
  mount(cb: (err: Error | null) => void): void;
  unmount(cb: (err: Error | null) => void): void;
}
interface FuseNativeClass {
  new (mnt: string, ops: object, opts: object): FuseNativeInstance;
  prototype: Record<string, unknown>;
}

type MountClass = new (mnt: string, ops: FuseOperations, opts: NativeMountOptions) => FuseNativeInstance;

let loaded: MountClass | FuseUnavailableError | undefined;

// Layout of fuse-native 2.2.6's fuse_thread_locals_t on 64-bit Linux: struct size, the opcode
// field, and the `mtime` field (size_t, ms) the utimens glue fills but does not pass on.
const LOCALS_SIZE = 360;
const LOCALS_OP_OFFSET = 8;
const LOCALS_MTIME_OFFSET = 112;
const OP_UTIMENS = 12;

/** The real modification time of a utimens request, or undefined when the layout is not the known one. */
function utimensMtime(locals: unknown): number | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  if (!Buffer.isBuffer(locals) || locals.length !== LOCALS_SIZE) return undefined;
  if (locals.readUInt32LE(LOCALS_OP_OFFSET) !== OP_UTIMENS) return undefined;
  return Number(locals.readBigUInt64LE(LOCALS_MTIME_OFFSET));
}

function load(): MountClass {
  if (loaded instanceof FuseUnavailableError) throw loaded;
  if (loaded) return loaded;
  let Fuse: FuseNativeClass;
  try {
    Fuse = createRequire(import.meta.url)('fuse-native') as FuseNativeClass;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const message = /libfuse\.so\.2/.test(e.message)
      ? 'FUSE needs libfuse 2: install it (Debian/Ubuntu: apt-get install libfuse2 fuse3; never the old "fuse" package, it removes fuse3)'
      : e.code === 'MODULE_NOT_FOUND'
        ? 'FUSE needs the fuse-native package: npm install fuse-native'
        : `fuse-native failed to load: ${e.message}`;
    loaded = new FuseUnavailableError(message);
    throw loaded;
  }
  const base = Fuse as unknown as new (mnt: string, ops: object, opts: object) => Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

  class SvcFuse extends base {
    #options: NativeMountOptions;
    #mtime: number | undefined;

    constructor(mnt: string, ops: FuseOperations, opts: NativeMountOptions) {
      super(mnt, ops, { timeout: opts.requestTimeoutMs, mkdir: false, force: false });
      this.#options = opts;
    }

    /** The whole `-o` string (fuse-native's own builder knows no big_writes). */
    _fuseOptions(): string {
      const o = this.#options;
      const list = [
        'big_writes', 'max_write=131072', `fsname=${o.fsname.replace(/[,\\]/g, '_')}`, 'subtype=svc',
        `entry_timeout=${o.cacheSeconds}`, `attr_timeout=${o.cacheSeconds}`, 'negative_timeout=0',
        // Keep a file's pages in the kernel across opens while its size and mtime are unchanged
        // (libfuse compares them at open): warm reads at page-cache speed, changes seen at next open.
        'auto_cache',
      ];
      if (o.defaultPermissions) list.push('default_permissions');
      if (o.debug) list.push('debug');
      return '-o' + list.join(',');
    }

    _makeHandlerArray(): unknown[] {
      const handlers = super._makeHandlerArray() as ((locals: unknown, op: number, ...args: unknown[]) => unknown)[];
      const original = handlers[OP_UTIMENS];
      if (original) {
        handlers[OP_UTIMENS] = (locals, op, ...args) => {
          // The handler calls _op_utimens synchronously, so the value cannot be taken by another request.
          this.#mtime = utimensMtime(locals);
          try {
            return original(locals, op, ...args);
          } finally {
            this.#mtime = undefined;
          }
        };
      }
      return handlers;
    }

    _op_utimens(signal: (code: number) => void, path: string, aLow: number, aHigh: number, mLow: number, mHigh: number): void {
      const atime = aLow + aHigh * 2 ** 32;
      const mtime = this.#mtime ?? mLow + mHigh * 2 ** 32;
      (this.ops as FuseOperations).utimens(path, atime, mtime, (code) => signal(code));
    }
  }
  loaded = SvcFuse as unknown as MountClass;
  return loaded;
}

/** Whether a FUSE mount can work in this process: fuse-native and libfuse 2 load, /dev/fuse exists. */
export function fuseSupport(): { available: true } | { available: false; reason: string } {
  if (process.platform !== 'linux') return { available: false, reason: `FUSE mounts are supported on Linux only (this is ${process.platform})` };
  if (!existsSync('/dev/fuse')) return { available: false, reason: '/dev/fuse is missing (load the fuse kernel module, or run the container with --device /dev/fuse)' };
  try {
    load();
  } catch (err) {
    return { available: false, reason: (err as Error).message };
  }
  return { available: true };
}

/** The descriptors this process has open on /dev/fuse (Linux; empty elsewhere). */
function fuseDeviceFds(): Set<number> {
  const fds = new Set<number>();
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return fds;
  }
  for (const name of names) {
    try {
      if (readlinkSync(`/proc/self/fd/${name}`) === '/dev/fuse') fds.add(Number(name));
    } catch {
      // closed meanwhile
    }
  }
  return fds;
}

/**
 * The FUSE connection of one mount, for the notifications a file system may send the kernel
 * (linux/fuse.h). libfuse 2's high-level API, and so fuse-native, offers none of them, but they are
 * plain writes of a header and a body to the connection's descriptor, which libfuse opened in this
 * process. A write may block until requests in flight on the same inode or directory are answered:
 * never make one on the thread that answers them.
 */
export interface FuseDevice {
  /** The descriptor on /dev/fuse. */
  fd: number;
  /** Its device number, to check that the descriptor still is this one before writing to it. */
  rdev: number;
}

/** fuse_notify_code values (linux/fuse.h). */
const FUSE_NOTIFY_INVAL_INODE = 2;
const FUSE_NOTIFY_INVAL_ENTRY = 3;
/** sizeof(struct fuse_out_header): len u32, error i32 (the notify code), unique u64 (0). */
const OUT_HEADER = 16;

/**
 * FUSE_NOTIFY_INVAL_INODE: the kernel drops its cached attributes of inode `ino` (the node id,
 * which is what `stat` reports as st_ino on a libfuse 2 mount without `use_ino`) and, unless
 * `attributesOnly`, its cached pages as well.
 */
export function invalInodeMessage(ino: number, attributesOnly: boolean): Buffer {
  const msg = Buffer.alloc(OUT_HEADER + 24);
  msg.writeUInt32LE(msg.length, 0);
  msg.writeInt32LE(FUSE_NOTIFY_INVAL_INODE, 4);
  msg.writeBigUInt64LE(BigInt(ino), OUT_HEADER);
  msg.writeBigInt64LE(attributesOnly ? -1n : 0n, OUT_HEADER + 8); // offset; negative: attributes only
  msg.writeBigInt64LE(0n, OUT_HEADER + 16); // length 0: to the end
  return msg;
}

/** FUSE_NOTIFY_INVAL_ENTRY: the kernel forgets what it knows of `name` in directory `parent` (a node id). */
export function invalEntryMessage(parent: number, name: string): Buffer {
  const bytes = Buffer.from(name);
  const msg = Buffer.alloc(OUT_HEADER + 16 + bytes.length + 1);
  msg.writeUInt32LE(msg.length, 0);
  msg.writeInt32LE(FUSE_NOTIFY_INVAL_ENTRY, 4);
  msg.writeBigUInt64LE(BigInt(parent), OUT_HEADER);
  msg.writeUInt32LE(bytes.length, OUT_HEADER + 8);
  bytes.copy(msg, OUT_HEADER + 16);
  return msg;
}

/** One kernel mount served by `ops` until {@link unmount}. */
export class NativeMount {
  readonly dir: string;
  readonly #fuse: FuseNativeInstance;
  #device: FuseDevice | undefined;

  /** Throws {@link FuseUnavailableError} when fuse-native or libfuse 2 is missing. */
  constructor(dir: string, ops: FuseOperations, opts: NativeMountOptions) {
    this.dir = dir;
    const Mount = load();
    this.#fuse = new Mount(dir, ops, opts);
  }

  /**
   * The mount's connection to the kernel, found as the /dev/fuse descriptor the mount opened
   * (undefined off Linux, or when another mount of this process opened one at the same time).
   */
  get device(): FuseDevice | undefined {
    return this.#device;
  }

  /** Resolves once the kernel has sent INIT, i.e. the mount answers requests. */
  mount(): Promise<void> {
    const before = fuseDeviceFds();
    return new Promise((resolve, reject) => {
      this.#fuse.mount((err) => {
        if (!err) {
          const opened = [...fuseDeviceFds()].filter((fd) => !before.has(fd));
          if (opened.length === 1) {
            try {
              this.#device = { fd: opened[0]!, rdev: fstatSync(opened[0]!).rdev };
            } catch {
              // closed meanwhile: no notifications
            }
          }
          return resolve();
        }
        const message = err.message === 'fuse failed'
          ? `cannot mount ${this.dir}: libfuse refused (is /dev/fuse usable and fusermount installed, apt-get install fuse3?)`
          : `cannot mount ${this.dir}: ${err.message}`;
        reject(new Error(message));
      });
    });
  }

  /** Detach the mount (lazily, so open files do not block it) and stop serving. */
  unmount(): Promise<void> {
    this.#device = undefined;
    return new Promise((resolve, reject) => {
      this.#fuse.unmount((err) => (err ? reject(err) : resolve()));
    });
  }
}

/**
 * Detach whatever is mounted at `dir` (a stale mount left by a crash answers "Transport endpoint is
 * not connected"). Lazy, so it never waits on a hung server. Resolves false when nothing was there.
 */
export async function forceUnmount(dir: string): Promise<boolean> {
  const attempts: [string, string[]][] = [['fusermount', ['-uz', dir]], ['fusermount3', ['-uz', dir]], ['umount', ['-l', dir]]];
  let lastError = '';
  for (const [cmd, args] of attempts) {
    const result = await new Promise<{ ok: boolean; stderr: string; missing: boolean }>((resolve) => {
      execFile(cmd, args, (err, _stdout, stderr) => {
        resolve({ ok: !err, stderr: String(stderr), missing: (err as NodeJS.ErrnoException | null)?.code === 'ENOENT' });
      });
    });
    if (result.ok) return true;
    if (!result.missing) lastError = result.stderr.trim();
    if (/not (found|mounted)|no such|invalid argument/i.test(result.stderr)) return false;
  }
  if (lastError) throw new Error(`cannot unmount ${dir}: ${lastError}`);
  return false;
}
