/**
 * @module bench/fuse-floor
 * The floor for bench/fuse.ts: a bare in-memory file system served through the same
 * {@link NativeMount} (so the same binding: svc's libfuse 3 addon where built, else fuse-native) and
 * the same mount options as the daemon's mount (src/transports/fuse/mount.ts), with no svc code
 * behind it. Whatever a small-file operation costs here is the binding's and the kernel's (on libfuse 3
 * the JS thread reading /dev/fuse and answering; on fuse-native libfuse's threads, the hand-over to
 * the JS thread and back), so bench/fuse.ts can show which part of the mount's gap to the disk is the
 * binding's and which is svc's.
 *
 * Run as a child process (it must not be the process that drives the mount with synchronous fs calls):
 *   node --import tsx bench/fuse-floor.ts MOUNTDIR
 * Prints `ready` once the kernel serves requests; SIGTERM or SIGINT unmounts and exits (if the
 * binding's unmount fails, `fusermount -uz` detaches lazily). Not a general file system: no hard links, no
 * extended attributes, contents held whole in memory.
 */
import { constants as fsConstants } from 'node:fs';
import { constants } from 'node:os';
import { NativeMount, forceUnmount, type FuseOperations, type FuseStat } from '../src/native/fuse.js';
import { FUSE_SPIN_MICROS, KERNEL_CACHE_SECONDS } from '../src/transports/fuse/mount.js';

const E = constants.errno;
const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;

interface Node {
  mode: number;
  uid: number;
  gid: number;
  atime: number;
  mtime: number;
  ctime: number;
  /** Regular files: the bytes are `data[0, size)`; `data` grows by doubling. */
  data: Buffer;
  size: number;
  /** Directories: children by name. */
  children?: Map<string, Node>;
  /** Symbolic links. */
  target?: string;
}

const uid = process.getuid?.() ?? 0;
const gid = process.getgid?.() ?? 0;

function node(mode: number): Node {
  const now = Date.now();
  const n: Node = { mode, uid, gid, atime: now, mtime: now, ctime: now, data: Buffer.alloc(0), size: 0 };
  if ((mode & S_IFMT) === S_IFDIR) n.children = new Map();
  return n;
}

const root = node(S_IFDIR | 0o755);

/** Parent directory and last name of a path (`/a/b` → node of `/a`, `b`), or a negative errno. */
function parent(path: string): { dir: Node; name: string } | number {
  const i = path.lastIndexOf('/');
  const name = path.slice(i + 1);
  const dir = lookup(path.slice(0, i) || '/');
  if (typeof dir === 'number') return dir;
  if (!dir.children) return -E.ENOTDIR;
  if (name.length > 255) return -E.ENAMETOOLONG;
  return { dir, name };
}

function lookup(path: string): Node | number {
  let n = root;
  for (const part of path.split('/')) {
    if (!part) continue;
    if (!n.children) return -E.ENOTDIR;
    const next = n.children.get(part);
    if (!next) return -E.ENOENT;
    n = next;
  }
  return n;
}

function stat(n: Node): FuseStat {
  const size = n.children ? 4096 : n.target !== undefined ? Buffer.byteLength(n.target) : n.size;
  return {
    mode: n.mode, uid: n.uid, gid: n.gid, size, nlink: n.children ? 2 : 1,
    mtime: n.mtime, atime: n.atime, ctime: n.ctime, blocks: Math.ceil(size / 512), blksize: 131072,
  };
}

/** Resize a regular file to `size` bytes, zero-filling any extension. */
function resize(n: Node, size: number): void {
  if (size > n.data.length) {
    const grown = Buffer.alloc(Math.max(size, n.data.length * 2));
    n.data.copy(grown, 0, 0, n.size);
    n.data = grown;
  } else if (size > n.size) {
    n.data.fill(0, n.size, size);
  }
  n.size = size;
  n.mtime = n.ctime = Date.now();
}

/** Add a new entry at `path`: 0, or a negative errno. */
function add(path: string, n: Node): number {
  const p = parent(path);
  if (typeof p === 'number') return p;
  if (p.dir.children!.has(p.name)) return -E.EEXIST;
  p.dir.children!.set(p.name, n);
  p.dir.mtime = p.dir.ctime = Date.now();
  return 0;
}

function file(path: string): Node | number {
  const n = lookup(path);
  if (typeof n === 'number') return n;
  return n.children ? -E.EISDIR : n;
}

/** Run `fn` and answer with its result code (0 or a negative errno). */
const answer = (cb: (code: number) => void, fn: () => number) => cb(fn());

const ops: FuseOperations = {
  init: (cb) => cb(0),
  statfs: (_path, cb) => cb(0, {
    bsize: 4096, frsize: 4096, blocks: 1 << 20, bfree: 1 << 20, bavail: 1 << 20,
    files: 1 << 20, ffree: 1 << 20, favail: 1 << 20, fsid: 1, flag: 0, namemax: 255,
  }),
  getattr: (path, cb) => {
    const n = lookup(path);
    if (typeof n === 'number') return cb(n);
    cb(0, stat(n));
  },
  readdir: (path, cb) => {
    const n = lookup(path);
    if (typeof n === 'number') return cb(n);
    if (!n.children) return cb(-E.ENOTDIR);
    const names = [...n.children.keys()];
    const self = stat(n);
    // '..' is answered with the directory's own attributes: only its name and type matter to readers.
    cb(0, ['.', '..', ...names], [self, self, ...names.map((name) => stat(n.children!.get(name)!))]);
  },
  open: (path, flags, cb) => {
    const n = lookup(path);
    if (typeof n === 'number') return cb(n);
    // flags & 3 is the access mode (O_ACCMODE, which Node does not export).
    if (n.children && (flags & 3) !== fsConstants.O_RDONLY) return cb(-E.EISDIR);
    cb(0, 0);
  },
  create: (path, mode, cb) => {
    const n = node(S_IFREG | (mode & 0o7777));
    const code = add(path, n);
    if (code) return cb(code);
    // With the new file's attributes, as the daemon answers a create.
    cb(0, 0, stat(n));
  },
  read: (path, _fd, buf, len, pos, cb) => {
    const n = file(path);
    if (typeof n === 'number') return cb(n);
    if (pos >= n.size) return cb(0);
    cb(n.data.copy(buf, 0, pos, Math.min(n.size, pos + len)));
  },
  write: (path, _fd, buf, len, pos, cb) => {
    const n = file(path);
    if (typeof n === 'number') return cb(n);
    if (pos + len > n.size) resize(n, pos + len);
    buf.copy(n.data, pos, 0, len);
    n.mtime = n.ctime = Date.now();
    cb(len);
  },
  truncate: (path, size, cb) => answer(cb, () => {
    const n = file(path);
    if (typeof n === 'number') return n;
    resize(n, size);
    return 0;
  }),
  ftruncate: (path, _fd, size, cb) => ops.truncate(path, size, cb),
  flush: (_path, _fd, cb) => cb(0),
  fsync: (_path, _datasync, _fd, cb) => cb(0),
  fsyncdir: (_path, _datasync, _fd, cb) => cb(0),
  release: (_path, _fd, cb) => cb(0),
  unlink: (path, cb) => answer(cb, () => {
    const p = parent(path);
    if (typeof p === 'number') return p;
    const n = p.dir.children!.get(p.name);
    if (!n) return -E.ENOENT;
    if (n.children) return -E.EISDIR;
    p.dir.children!.delete(p.name);
    p.dir.mtime = p.dir.ctime = Date.now();
    return 0;
  }),
  rename: (src, dest, cb) => answer(cb, () => {
    const from = parent(src);
    const to = parent(dest);
    if (typeof from === 'number') return from;
    if (typeof to === 'number') return to;
    const n = from.dir.children!.get(from.name);
    if (!n) return -E.ENOENT;
    if (n.children && (dest + '/').startsWith(src + '/')) return -E.EINVAL;
    const old = to.dir.children!.get(to.name);
    if (old && old !== n) {
      if (old.children && !n.children) return -E.EISDIR;
      if (!old.children && n.children) return -E.ENOTDIR;
      if (old.children?.size) return -E.ENOTEMPTY;
    }
    from.dir.children!.delete(from.name);
    to.dir.children!.set(to.name, n);
    from.dir.mtime = to.dir.mtime = n.ctime = Date.now();
    return 0;
  }),
  link: (_src, _dest, cb) => cb(-E.EPERM),
  mknod: (_path, _mode, _dev, cb) => cb(-E.EPERM),
  symlink: (target, path, cb) => answer(cb, () => {
    const n = node(S_IFLNK | 0o777);
    n.target = target;
    return add(path, n);
  }),
  readlink: (path, cb) => {
    const n = lookup(path);
    if (typeof n === 'number') return cb(n);
    if (n.target === undefined) return cb(-E.EINVAL);
    cb(0, n.target);
  },
  mkdir: (path, mode, cb) => answer(cb, () => add(path, node(S_IFDIR | (mode & 0o7777)))),
  rmdir: (path, cb) => answer(cb, () => {
    const p = parent(path);
    if (typeof p === 'number') return p;
    const n = p.dir.children!.get(p.name);
    if (!n) return -E.ENOENT;
    if (!n.children) return -E.ENOTDIR;
    if (n.children.size) return -E.ENOTEMPTY;
    p.dir.children!.delete(p.name);
    p.dir.mtime = p.dir.ctime = Date.now();
    return 0;
  }),
  chmod: (path, mode, cb) => answer(cb, () => {
    const n = lookup(path);
    if (typeof n === 'number') return n;
    n.mode = (n.mode & S_IFMT) | (mode & 0o7777);
    n.ctime = Date.now();
    return 0;
  }),
  chown: (path, u, g, cb) => answer(cb, () => {
    const n = lookup(path);
    if (typeof n === 'number') return n;
    // -1 (as an unsigned 32-bit id) leaves that id unchanged.
    if (u !== -1 && u !== 0xffffffff) n.uid = u;
    if (g !== -1 && g !== 0xffffffff) n.gid = g;
    n.ctime = Date.now();
    return 0;
  }),
  utimens: (path, atime, mtime, cb) => answer(cb, () => {
    const n = lookup(path);
    if (typeof n === 'number') return n;
    n.atime = atime;
    n.mtime = mtime;
    n.ctime = Date.now();
    return 0;
  }),
};

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: fuse-floor.ts MOUNTDIR');
  // The daemon's mount options (src/transports/fuse/mount.ts), so only what is behind the binding differs.
  const mount = new NativeMount(dir, ops, {
    cacheSeconds: KERNEL_CACHE_SECONDS, defaultPermissions: true, fsname: 'bench-floor', requestTimeoutMs: 120_000, spinMicros: FUSE_SPIN_MICROS,
  });
  await mount.mount();
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    try {
      await mount.unmount();
    } catch {
      await forceUnmount(dir).catch(() => undefined);
    }
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  process.stdout.write('ready\n');
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
