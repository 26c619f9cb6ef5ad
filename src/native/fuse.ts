/**
 * @module native/fuse
 * The FUSE bindings, loaded lazily so the daemon starts without them: {@link fuseSupport} says
 * whether a mount can work here and, if not, what to install. Two bindings serve the same
 * {@link FuseOperations}:
 * - **libfuse 3**, svc's own addon (native/fuse3/svc_fuse3.c, built by scripts/build-native.mjs when
 *   libfuse3-dev and a C compiler are there): libfuse's low-level API served on the JS thread (no
 *   hand-over between threads per request; the addon keeps the node table that maps node ids to
 *   paths), 1 MiB writes, which libfuse 2 cannot negotiate, listings with their entries'
 *   attributes, copy_file_range, SEEK_DATA/SEEK_HOLE, the caller's ids and creates that answer
 *   their attributes (native/README.md, docs/performance.md). Used when built, unless
 *   `SVC_FUSE_BINDING=fuse-native`.
 * - **fuse-native** (libfuse 2), the fallback.
 *
 * The rest of this header is about fuse-native.
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
 * It exposes no FUSE context (the calling process's uid/gid): the operations that make an entry get
 * no {@link FuseCaller} from it. Mounts are made without `allow_other`, where the kernel admits only
 * callers whose real, effective and saved ids equal the daemon's own, so the daemon's ids are the
 * caller's unless a privileged caller changed its file-system ids alone (setfsuid, as file servers
 * do). svc's libfuse 3 binding passes the context on.
 */
import { createRequire } from 'node:module';
import { execFile } from 'node:child_process';
import { existsSync, fstatSync, readdirSync, readlinkSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { readFile, realpath } from 'node:fs/promises';
import { basename, dirname, join, resolve as resolvePath } from 'node:path';

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

/** The process a request came from: its file-system uid and gid (the request's FUSE context). */
export interface FuseCaller {
  uid: number;
  gid: number;
}

/** Whether and why a rename hides an open file (see {@link FuseOperations.rename}); 'none': a program's rename. */
export type HideFor = 'none' | 'unlink' | 'rename';
/** n0 of a rename from the libfuse 3 binding: HIDE_NONE, HIDE_FOR_UNLINK and HIDE_FOR_RENAME of svc_fuse3.c. */
const HIDE_FOR: Record<number, HideFor> = { 0: 'none', 1: 'unlink', 2: 'rename' };

/** The operations fuse-native calls (libfuse 2 high-level API, by path). */
export interface FuseOperations {
  init?(cb: Cb): void;
  statfs(path: string, cb: Cb<[FuseStatfs?]>): void;
  getattr(path: string, cb: Cb<[FuseStat?]>): void;
  readdir(path: string, cb: Cb<[string[]?, FuseStat[]?]>): void;
  open(path: string, flags: number, cb: Cb<[number?]>): void;
  /**
   * Answers the new handle and, optionally, the new file's attributes: on libfuse 3 they then
   * answer the kernel's entry without the getattr that would follow (fuse-native ignores them).
   * `caller`: where the binding gives it (libfuse 3; not fuse-native), as for mknod, symlink and mkdir.
   */
  create(path: string, mode: number, cb: Cb<[number?, FuseStat?]>, caller?: FuseCaller): void;
  read(path: string, fd: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErr: number) => void): void;
  /**
   * `cached`: libfuse 3 only: true when the kernel writes back its page cache (a shared memory map's
   * pages, through any writable handle of the file), false for a write(2); fuse-native leaves it out.
   */
  write(path: string, fd: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErr: number) => void, cached?: boolean): void;
  truncate(path: string, size: number, cb: Cb): void;
  ftruncate(path: string, fd: number, size: number, cb: Cb): void;
  flush(path: string, fd: number, cb: Cb): void;
  fsync(path: string, datasync: number, fd: number, cb: Cb): void;
  /** fsync of a directory (after a rename or create in it, for durability). */
  fsyncdir(path: string, datasync: number, fd: number, cb: Cb): void;
  release(path: string, fd: number, cb: Cb): void;
  unlink(path: string, cb: Cb): void;
  /**
   * `hiding`: whether this rename hides an open file (to `.fuse_hidden…`) because it is being
   * unlinked, or renamed over (the rename follows at once), or is a program's own ('none'). Given
   * by svc's libfuse 3 binding; fuse-native's libfuse hides files itself and does not say.
   */
  rename(src: string, dest: string, cb: Cb, hiding?: HideFor): void;
  link(src: string, dest: string, cb: Cb): void;
  /** Special files only: libfuse turns a regular file's mknod into create. */
  mknod(path: string, mode: number, dev: number, cb: Cb, caller?: FuseCaller): void;
  symlink(target: string, path: string, cb: Cb, caller?: FuseCaller): void;
  readlink(path: string, cb: Cb<[string?]>): void;
  mkdir(path: string, mode: number, cb: Cb, caller?: FuseCaller): void;
  rmdir(path: string, cb: Cb): void;
  chmod(path: string, mode: number, cb: Cb): void;
  chown(path: string, uid: number, gid: number, cb: Cb): void;
  /** Times in ms since the epoch. */
  utimens(path: string, atime: number, mtime: number, cb: Cb): void;
  /**
   * copy_file_range(2) from one open file to another of the same mount, up to `len` bytes: the
   * count copied (fewer is fine, the caller repeats; 0 at the source's end) or a negative errno.
   * libfuse 3 only; without it the kernel copies through read and write.
   */
  copyFileRange?(srcPath: string, srcFd: number, srcPos: number, dstPath: string, dstFd: number, dstPos: number, len: number,
    cb: (bytesOrErr: number) => void): void;
  /**
   * lseek(2) with SEEK_DATA (3) or SEEK_HOLE (4) on an open file: the offset found, or ENXIO
   * (`offset` at or past the end; SEEK_DATA with no data after it). libfuse 3 only; without it
   * the kernel treats the whole file as data.
   */
  lseek?(path: string, fd: number, offset: number, whence: number, cb: Cb<[number?]>): void;
  /**
   * fallocate(2) on an open file: `mode` is Linux's FALLOC_FL_* bits (0: make [offset, offset +
   * length) readable, growing the file; KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE). Answer EOPNOTSUPP for a
   * mode not handled, never ENOSYS (the kernel would stop asking for every mode). libfuse 3 only;
   * without it fallocate(2) fails with EOPNOTSUPP and posix_fallocate(3) writes zeros instead.
   */
  fallocate?(path: string, fd: number, offset: number, length: number, mode: number, cb: Cb): void;
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
  /**
   * µs the libfuse 3 binding keeps watching for the next request after serving one, before the
   * thread sleeps (a wake-up saved per request while a program works through many files; at most
   * 1 ms per turn of the event loop). 0 or absent: never. fuse-native ignores it.
   */
  spinMicros?: number;
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

/** The FUSE binding a mount uses. */
export type FuseBinding = 'libfuse3' | 'fuse-native';

/** svc's libfuse 3 addon (native/fuse3/svc_fuse3.c). */
interface Fuse3Addon {
  mount(dir: string, args: string[], cacheSeconds: number, timeoutMs: number, dispatch: Fuse3Dispatch, events: (event: number) => void, spinMicros?: number): object;
  reply(req: object, code: number, value?: unknown, extra?: unknown): void;
  fd(handle: object): number;
  unmount(handle: object): boolean;
  nodes(handle: object): number;
  nodeOf(handle: object, path: string): number;
  renamed(handle: object, from: string, to: string): string;
  removed(handle: object, path: string): string;
  dropCached(fd: number, offset: number, length: number): Promise<number>;
}
type Fuse3Dispatch = (req: object, op: number, path: string, path2: string | undefined, n0: number, n1: number, buf: Buffer | undefined, len: number, n2: number, n3: number) => void;

/** Operation codes of native/fuse3/svc_fuse3.c (its enum, in the same order). */
const enum Op {
  Getattr = 1, Readdir, Open, Create, Read, Write, Truncate, Ftruncate, Flush, Fsync, Fsyncdir, Release,
  Unlink, Rename, Link, Mknod, Symlink, Readlink, Mkdir, Rmdir, Chmod, Chown, Utimens, Statfs, CopyFileRange,
  Lseek, Fallocate,
}
/** Events of native/fuse3/svc_fuse3.c. */
const EV_INIT = 1;
const EV_EXIT = 2;
const EV_DETACHED = 3;

/** Doubles per packed {@link FuseStat} (STAT_FIELDS in native/fuse3/svc_fuse3.c). */
const STAT_FIELDS = 10;

/**
 * Pack `st` at entry `index` of `out` as the addon reads it: mode, uid, gid, size, nlink, blksize,
 * blocks, atime, mtime, ctime (one typed array per answer instead of an object's properties).
 */
function packStat(st: FuseStat, out: Float64Array, index = 0): Float64Array {
  const at = index * STAT_FIELDS;
  out[at] = st.mode;
  out[at + 1] = st.uid;
  out[at + 2] = st.gid;
  out[at + 3] = st.size;
  out[at + 4] = st.nlink;
  out[at + 5] = st.blksize ?? 0;
  out[at + 6] = st.blocks ?? 0;
  out[at + 7] = st.atime;
  out[at + 8] = st.mtime;
  out[at + 9] = st.ctime;
  return out;
}

/** Every entry's attributes packed into one array, or undefined when any is missing. */
function packStats(stats: (FuseStat | undefined)[] | undefined): Float64Array | undefined {
  if (!stats) return undefined;
  const out = new Float64Array(stats.length * STAT_FIELDS);
  for (let i = 0; i < stats.length; i++) {
    const st = stats[i];
    if (!st) return undefined;
    packStat(st, out, i);
  }
  return out;
}

/** Where scripts/build-native.mjs puts the addon, from src/native, dist/native or the bundle in dist/. */
const FUSE3_ADDON_CANDIDATES = ['../../native/build/svc_fuse3.node', '../native/build/svc_fuse3.node'];

let fuse3: Fuse3Addon | Error | undefined;

/** svc's libfuse 3 addon, or why it cannot be used (not built, or libfuse 3 missing at run time). */
function loadFuse3(): Fuse3Addon | Error {
  if (fuse3) return fuse3;
  const require = createRequire(import.meta.url);
  const file = FUSE3_ADDON_CANDIDATES.map((rel) => fileURLToPath(new URL(rel, import.meta.url))).find((f) => existsSync(f));
  if (!file) {
    fuse3 = new Error('svc\'s libfuse 3 addon is not built (npm run build builds it where libfuse3-dev, pkg-config and cc are installed)');
    return fuse3;
  }
  try {
    fuse3 = require(file) as Fuse3Addon;
  } catch (err) {
    fuse3 = new Error(`svc's libfuse 3 addon failed to load: ${(err as Error).message}`);
  }
  return fuse3;
}

/**
 * Drops the clean pages of `length` bytes of file `fd` from `offset` from the page cache
 * (posix_fadvise DONTNEED, on libuv's thread pool); resolves to 0 or the errno.
 */
export type CacheDropper = (fd: number, offset: number, length: number) => Promise<number>;

/** svc's native page-cache dropper, where its addon is built and loads (it is the libfuse 3 addon's). */
export function cacheDropper(): CacheDropper | undefined {
  const addon = loadFuse3();
  return addon instanceof Error ? undefined : (fd, offset, length) => addon.dropCached(fd, offset, length);
}

/**
 * The binding mounts use here: libfuse 3 when its addon loads, unless `SVC_FUSE_BINDING=fuse-native`
 * (or `SVC_FUSE_BINDING=libfuse3`, which refuses to fall back).
 */
export function fuseBinding(env: NodeJS.ProcessEnv = process.env): FuseBinding {
  const wanted = env.SVC_FUSE_BINDING;
  if (wanted !== undefined && wanted !== '' && wanted !== 'libfuse3' && wanted !== 'fuse-native') {
    throw new FuseUnavailableError(`SVC_FUSE_BINDING must be libfuse3 or fuse-native, not ${JSON.stringify(wanted)}`);
  }
  if (wanted === 'fuse-native') return 'fuse-native';
  const addon = loadFuse3();
  if (addon instanceof Error) {
    if (wanted === 'libfuse3') throw new FuseUnavailableError(addon.message);
    return 'fuse-native';
  }
  return 'libfuse3';
}

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
        `entry_timeout=${o.cacheSeconds}`, `attr_timeout=${o.cacheSeconds}`, `negative_timeout=${o.cacheSeconds}`,
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

/** Whether a FUSE mount can work in this process (/dev/fuse exists, a binding loads), and with which binding. */
export function fuseSupport(): { available: true; binding: FuseBinding } | { available: false; reason: string } {
  if (process.platform !== 'linux') return { available: false, reason: `FUSE mounts are supported on Linux only (this is ${process.platform})` };
  if (!existsSync('/dev/fuse')) return { available: false, reason: '/dev/fuse is missing (load the fuse kernel module, or run the container with --device /dev/fuse)' };
  try {
    const binding = fuseBinding();
    if (binding === 'fuse-native') load();
    return { available: true, binding };
  } catch (err) {
    return { available: false, reason: (err as Error).message };
  }
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

/** One binding's side of a {@link NativeMount}. */
interface BindingMount {
  /** Resolves with the connection for notifications (when found) once the kernel has sent INIT. */
  mount(): Promise<FuseDevice | undefined>;
  unmount(): Promise<void>;
  /** Inodes the binding keeps for the kernel (libfuse 3's node table); undefined where it keeps none of its own. */
  readonly nodes?: number;
  /** The node id the kernel knows a path by (0: none), where the binding keeps the table. */
  readonly nodeOf?: (path: string) => number;
  /** Another face renamed `from` to `to`: the table follows ({@link NativeMount.renamed}). */
  readonly renamed?: (from: string, to: string) => string;
  /** Another face removed the open file at `path`: the table hides it ({@link NativeMount.removed}). */
  readonly removed?: (path: string) => string;
}

/** The connection of descriptor `fd`, or undefined when it is closed. */
function deviceOf(fd: number): FuseDevice | undefined {
  try {
    return { fd, rdev: fstatSync(fd).rdev };
  } catch {
    return undefined;
  }
}

/** A mount through fuse-native (libfuse 2). */
class FuseNativeMount implements BindingMount {
  readonly #dir: string;
  readonly #fuse: FuseNativeInstance;

  constructor(dir: string, ops: FuseOperations, opts: NativeMountOptions) {
    this.#dir = dir;
    const Mount = load();
    this.#fuse = new Mount(dir, ops, opts);
  }

  mount(): Promise<FuseDevice | undefined> {
    const before = fuseDeviceFds();
    return new Promise((resolve, reject) => {
      this.#fuse.mount((err) => {
        if (!err) {
          // fuse-native does not say which descriptor is the mount's: the one that appeared.
          const opened = [...fuseDeviceFds()].filter((fd) => !before.has(fd));
          return resolve(opened.length === 1 ? deviceOf(opened[0]!) : undefined);
        }
        const message = err.message === 'fuse failed'
          ? `cannot mount ${this.#dir}: libfuse refused (is /dev/fuse usable and fusermount installed, apt-get install fuse3?)`
          : `cannot mount ${this.#dir}: ${err.message}`;
        reject(new Error(message));
      });
    });
  }

  unmount(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#fuse.unmount((err) => (err ? reject(err) : resolve()));
    });
  }
}

/** A mount through svc's libfuse 3 addon. */
class Fuse3Mount implements BindingMount {
  readonly #dir: string;
  readonly #ops: FuseOperations;
  readonly #opts: NativeMountOptions;
  readonly #addon: Fuse3Addon;
  #handle: object | undefined;
  /** Settled by the addon's events. */
  #onInit: ((ok: boolean) => void) | undefined;
  #onDetached: (() => void) | undefined;
  /** The detach under way, which every unmount() call waits for. */
  #unmounting: Promise<void> | undefined;

  constructor(dir: string, ops: FuseOperations, opts: NativeMountOptions) {
    const addon = loadFuse3();
    if (addon instanceof Error) throw new FuseUnavailableError(addon.message);
    this.#dir = dir;
    this.#ops = ops;
    this.#opts = opts;
    this.#addon = addon;
  }

  mount(): Promise<FuseDevice | undefined> {
    const o = this.#opts;
    const options = [`fsname=${o.fsname.replace(/[,\\]/g, '_')}`, 'subtype=svc'];
    if (o.defaultPermissions) options.push('default_permissions');
    if (o.debug) options.push('debug');
    return new Promise((resolve, reject) => {
      this.#onInit = (ok) => {
        this.#onInit = undefined;
        if (!ok) return reject(new Error(`cannot mount ${this.#dir}: the connection ended before the kernel's INIT`));
        this.#ops.init?.(() => {});
        resolve(deviceOf(this.#addon.fd(this.#handle!)));
      };
      try {
        this.#unmounting = undefined;
        this.#handle = this.#addon.mount(this.#dir, ['-o', options.join(',')], o.cacheSeconds, o.requestTimeoutMs, this.#dispatch, (event) => this.#event(event), o.spinMicros ?? 0);
      } catch (err) {
        this.#onInit = undefined;
        reject(new Error(`cannot mount ${this.#dir}: ${(err as Error).message}`));
      }
    });
  }

  #event(event: number): void {
    if (event === EV_INIT) this.#onInit?.(true);
    if (event === EV_EXIT) this.#onInit?.(false);
    if (event === EV_EXIT || event === EV_DETACHED) this.#onDetached?.();
  }

  get nodes(): number | undefined {
    return this.#handle ? this.#addon.nodes(this.#handle) : undefined;
  }

  readonly nodeOf = (path: string): number => (this.#handle ? this.#addon.nodeOf(this.#handle, path) : 0);

  readonly renamed = (from: string, to: string): string => (this.#handle ? this.#addon.renamed(this.#handle, from, to) : '');

  readonly removed = (path: string): string => (this.#handle ? this.#addon.removed(this.#handle, path) : '');

  /** Detach lazily (open files keep being served until closed) and resolve once detached. */
  unmount(): Promise<void> {
    const handle = this.#handle;
    if (!handle) return Promise.resolve();
    // One detach: a second call waits for the first's (the addon refuses to start another).
    return (this.#unmounting ??= new Promise((resolve) => {
      this.#onDetached = () => {
        this.#onDetached = undefined;
        resolve();
      };
      if (!this.#addon.unmount(handle)) this.#onDetached();
    }));
  }

  /** A getattr's answer, packed (the addon copies it before reply() returns). */
  readonly #stat = new Float64Array(STAT_FIELDS);

  /** One request from the addon: the operation's answer goes back through reply(), once. */
  readonly #dispatch: Fuse3Dispatch = (req, op, path, path2, n0, n1, buf, len, n2, n3) => {
    const addon = this.#addon;
    let answered = false;
    const done = (code: number, value?: unknown, extra?: unknown): void => {
      if (answered) return;
      answered = true;
      addon.reply(req, code, value, extra);
    };
    const ops = this.#ops;
    try {
      switch (op) {
        case Op.Getattr: return ops.getattr(path, (code, st) => done(code, st && packStat(st, this.#stat)));
        case Op.Readdir: return ops.readdir(path, (code, names, stats) => done(code, names, packStats(stats)));
        case Op.Open: return ops.open(path, n0, done);
        // n2 and n3 of the operations that make an entry: the caller's uid and gid.
        case Op.Create: return ops.create(path, n0, (code, fd, st) => done(code, fd, st && packStat(st, this.#stat)), { uid: n2, gid: n3 });
        // `buf` may be longer than the request (one of the mount's pooled buffers): `len` bytes of it.
        case Op.Read: return ops.read(path, n0, buf!, len, n1, done);
        case Op.Write: return ops.write(path, n0, buf!, len, n1, done, n2 === 1);
        case Op.Truncate: return ops.truncate(path, n1, done);
        case Op.Ftruncate: return ops.ftruncate(path, n0, n1, done);
        case Op.Flush: return ops.flush(path, n0, done);
        case Op.Fsync: return ops.fsync(path, n1, n0, done);
        case Op.Fsyncdir: return ops.fsyncdir(path, n1, n0, done);
        case Op.Release: return ops.release(path, n0, done);
        case Op.Unlink: return ops.unlink(path, done);
        case Op.Rename: return ops.rename(path, path2!, done, HIDE_FOR[n0]);
        case Op.Link: return ops.link(path, path2!, done);
        case Op.Mknod: return ops.mknod(path, n0, n1, done, { uid: n2, gid: n3 });
        case Op.Symlink: return ops.symlink(path, path2!, done, { uid: n2, gid: n3 });
        case Op.Readlink: return ops.readlink(path, done);
        case Op.Mkdir: return ops.mkdir(path, n0, done, { uid: n2, gid: n3 });
        case Op.Rmdir: return ops.rmdir(path, done);
        case Op.Chmod: return ops.chmod(path, n0, done);
        case Op.Chown: return ops.chown(path, n0, n1, done);
        case Op.Utimens: return ops.utimens(path, n0 < 0 ? n1 : n0, n1, done);
        case Op.Statfs: return ops.statfs(path, done);
        // ENOSYS: the kernel stops asking and copies through read and write itself.
        case Op.CopyFileRange: return ops.copyFileRange ? ops.copyFileRange(path, n0, n1, path2!, n2, n3, len, done) : done(errno('ENOSYS'));
        case Op.Lseek: return ops.lseek ? ops.lseek(path, n0, n1, n2, done) : done(errno('ENOSYS'));
        case Op.Fallocate: return ops.fallocate ? ops.fallocate(path, n0, n1, n2, n3, done) : done(errno('ENOSYS'));
        default: return done(errno('ENOSYS'));
      }
    } catch {
      done(errno('EIO'));
    }
  };
}

/** One kernel mount served by `ops` until {@link unmount}, through {@link fuseBinding}'s binding. */
export class NativeMount {
  readonly dir: string;
  readonly binding: FuseBinding;
  readonly #impl: BindingMount;
  #device: FuseDevice | undefined;

  /** Throws {@link FuseUnavailableError} when no binding can mount here. */
  constructor(dir: string, ops: FuseOperations, opts: NativeMountOptions) {
    this.dir = dir;
    this.binding = fuseBinding();
    this.#impl = this.binding === 'libfuse3' ? new Fuse3Mount(dir, ops, opts) : new FuseNativeMount(dir, ops, opts);
  }

  /**
   * The mount's connection to the kernel (undefined off Linux, or when it could not be told apart
   * from another mount's opened at the same time).
   */
  get device(): FuseDevice | undefined {
    return this.#device;
  }

  /**
   * How many inodes the libfuse 3 binding's node table holds: the root, those the kernel has looked
   * up and not forgotten, and their parents (undefined on fuse-native, whose libfuse keeps its own).
   */
  get nodes(): number | undefined {
    return this.#impl.nodes;
  }

  /**
   * The node id the kernel knows `path` by, 0 when it holds nothing there, read from the libfuse 3
   * binding's node table without asking the kernel; undefined on fuse-native, whose ids are only
   * learnt through the mount (lstat).
   */
  get nodeOf(): ((path: string) => number) | undefined {
    return this.#impl.nodeOf;
  }

  /**
   * Another face renamed `from` to `to`: the libfuse 3 binding's node table follows, so that what
   * the kernel holds below `from` (open files' descriptors, cached names) goes on under `to`; an
   * open file the rename replaced at `to` is hidden as an unlink through the mount hides it, and
   * its hidden path is returned ("" when none). Undefined on fuse-native: libfuse 2 keeps its own
   * table of paths, which only its own renames move.
   */
  get renamed(): ((from: string, to: string) => string) | undefined {
    return this.#impl.renamed;
  }

  /**
   * Another face removed the file at `path`, open here: the libfuse 3 binding's node table hides
   * it as an unlink through the mount does, so its descriptors go on under the hidden path it
   * returns ("" when nothing is open there) and its last close unlinks that. Undefined on fuse-native.
   */
  get removed(): ((path: string) => string) | undefined {
    return this.#impl.removed;
  }

  /** Resolves once the kernel has sent INIT, i.e. the mount answers requests. */
  async mount(): Promise<void> {
    this.#device = await this.#impl.mount();
  }

  /** Detach the mount (lazily, so open files do not block it) and stop serving. */
  unmount(): Promise<void> {
    this.#device = undefined;
    return this.#impl.unmount();
  }
}

/**
 * `dir` as the mount table names it: symbolic links in the directories above it resolved (the
 * kernel records the real path). The last name itself is not resolved: it may be a stale mount,
 * which answers ENOTCONN, or this process's own mount, which it must never touch. Missing
 * directories above it are kept as given.
 */
export async function mountTablePath(dir: string): Promise<string> {
  const target = resolvePath(dir);
  const rest: string[] = [basename(target)];
  let parent = dirname(target);
  for (;;) {
    try {
      return join(await realpath(parent), ...rest);
    } catch {
      const up = dirname(parent);
      if (up === parent) return target;
      rest.unshift(basename(parent));
      parent = up;
    }
  }
}

/** `/proc/self/mountinfo` escapes space, tab, newline and backslash as octal. */
function unescapeMountPath(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/**
 * The type of the file system mounted at `dir` ("fuse.svc", "fuseblk", "tmpfs" ...), read from
 * /proc/self/mountinfo without touching `dir`; undefined when nothing is mounted there.
 */
export async function mountedType(dir: string): Promise<string | undefined> {
  const target = await mountTablePath(dir);
  let table: string;
  try {
    table = await readFile('/proc/self/mountinfo', 'utf8');
  } catch {
    return undefined;
  }
  let type: string | undefined;
  for (const line of table.split('\n')) {
    const fields = line.split(' ');
    if (fields.length > 4 && unescapeMountPath(fields[4]!) === target) {
      const dash = fields.indexOf('-');
      type = dash > 0 ? fields[dash + 1] : 'unknown'; // the last one listed is the one on top
    }
  }
  return type;
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
