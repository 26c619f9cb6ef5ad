/**
 * @module transports/fuse/operations
 * The FUSE operations (by path, on both bindings: src/native/fuse.ts) over a {@link FuseBackend}: getattr from
 * records (never from content), open files buffered per path and committed as one version on
 * flush/release/fsync, POSIX rename, symlinks, attributes, and the read-only `/.versions/` tree.
 *
 * Errors: service errors map through toErrno (ENOENT, EEXIST, ENOTEMPTY, EISDIR, ENOTDIR, EACCES,
 * EROFS, EINVAL, ENAMETOOLONG); a full disk is ENOSPC; EIO only for a real failure. Both are logged.
 *
 * The binding hides a file that is unlinked (or renamed over) while open by renaming it to
 * `.fuse_hiddenNNN`, and unlinks that name on release. Here the hide keeps the open file in memory
 * under the hidden name (never stored, so other faces never see it). For an unlink the stored file
 * is deleted before the unlink is answered; for a rename over the open file, the rename that
 * follows replaces the stored file, which keeps its history. fuse-native's libfuse does not say
 * which of the two a hide is for: there the stored file is deleted a moment later, unless a rename
 * onto its path follows at once (sooner when an fsync, an unmount or a change at that path needs it).
 *
 * Change events another face caused go to `onExternalChange` (the mount's kernel cache notifier,
 * transports/fuse/kernel-cache); the mount's own are told apart by the backend where it names them
 * (the in-process one), else by the paths its backend calls are changing or changed moments ago
 * ({@link OwnChanges}).
 */
import type { Logger } from '../../core/log.js';
import type { ChangeEvent } from '../../core/events.js';
import { SvcError, toErrno } from '../../core/errors.js';
import { normalizePath, parentOf, baseName, isWithin } from '../../core/paths.js';
import { errno, type FuseCaller, type FuseOperations, type FuseStat, type FuseStatfs, type HideFor } from '../../native/fuse.js';
import { memoryPiece, type FuseBackend, type NodeInfo, type StoredContent } from './backend.js';
import { ChunkHasher } from './hasher.js';
import { ChunkHolds, type HoldingBackend } from './chunk-holds.js';
import { OpenFile } from './open-file.js';
import { CHUNK_SIZE, MoveUnderwayError, type ContentKeeper } from '../../fs/service.js';
import { OwnChanges, commitMark } from './kernel-cache.js';
import { isVersionsPath, listVersionsDir, resolveVersionsPath, VERSIONS_DIR, type VersionsTarget } from './versions.js';

/** An errno decided here rather than by the service. */
export class PosixError extends Error {
  constructor(readonly code: string, message: string = code) {
    // No stack: an errno answer is not a failure (every lookup of a name about to be created is
    // an ENOENT), and capturing one costs more than the rest of the lookup.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'PosixError';
  }
}

/**
 * Largest file the mount takes (1 TiB); a write, truncate, fallocate or copy past it is EFBIG, as
 * ext4 refuses sizes past 16 TiB. Sizes reach JS as doubles and a file's chunks are walked one by
 * one (allocated, seek, the commit's pieces, its etag over every byte): a size of 2**60 hung the
 * main thread for good, and 16 TiB ran the daemon out of memory.
 */
export const MAX_FILE_SIZE = 2 ** 40;

function checkFileSize(end: number): void {
  if (!(end <= MAX_FILE_SIZE)) throw new PosixError('EFBIG');
}

const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
const S_ISGID = 0o2000;
/** open(2) flag, Linux: writes go to the end of the file. */
const O_APPEND = 0o2000;
/** lseek(2)'s whence values that reach a FUSE file system (Linux's numbers). */
const SEEK_DATA = 3;
const SEEK_HOLE = 4;
/** fallocate(2)'s modes handled (Linux's FALLOC_FL_* bits). */
const FALLOC_FL_KEEP_SIZE = 0x01;
const FALLOC_FL_PUNCH_HOLE = 0x02;
const FALLOC_FL_ZERO_RANGE = 0x10;
/** The zeros fallocate writes, a chunk at most at a time (made at its first use). */
let zeros: Buffer | undefined;
/** Preferred I/O size reported to tools (cp, dd): one max_write request. */
const BLKSIZE = 131072;
const HIDDEN_PREFIX = '.fuse_hidden';
/** fuse-native: how long the stored file of a hidden (unlinked-while-open) file waits for a rename onto it. */
const HIDE_DELETE_DELAY_MS = 20;
const UNCHANGED_ID = 0xffffffff;
/**
 * Most bytes one copy_file_range request copies (the caller repeats for the rest): a 64 MiB piece
 * is well inside the request timeout, and the copy goes a chunk at a time through one buffer.
 */
const COPY_RANGE_MAX = 64 * CHUNK_SIZE;
/**
 * Most bytes one copy_file_range shares without copying: 1 GiB, well inside the 32-bit count a
 * FUSE reply carries; `cp` calls again for the rest.
 */
const CLONE_MAX = 1024 * CHUNK_SIZE;
const UINT32_MAX = 0xffffffff;
/**
 * Failures passed on by their own name, not as EIO: a full disk under the store, the journal or a
 * spool file (StoreWriteError and Node's fs errors carry it as `code`).
 */
const OUT_OF_SPACE = new Set(['ENOSPC', 'EDQUOT']);

/** The binding's node table (svc's libfuse 3 binding: NativeMount's `renamed` and `removed`). */
export interface NodeTable {
  renamed(from: string, to: string): string;
  removed(path: string): string;
}

/** An open file hidden for a rename over it (see FuseFileSystem #rename). */
interface HiddenForRename {
  file: OpenFile;
  hiddenPath: string;
  /** The stored version it was opened from (the rename, once made, replaces it). */
  version: number | undefined;
}

/** The deletion of a hidden file's stored content, waiting for a possible rename onto its path. */
interface PendingDelete {
  timer: NodeJS.Timeout;
  /** Whether the deletion is under way (it can no longer be called off). */
  started: boolean;
  /** Delete now (memoised); the path counts as absent until it has completed. */
  run: () => Promise<void>;
}

interface Handle {
  file: OpenFile;
  /** Data was written through this handle since the last commit: its flush commits. */
  wrote: boolean;
  /**
   * The handle created or truncated the file: its release commits. Not its flush: shells open,
   * dup2 and close before writing (`echo x > f`), and that first flush would store an empty version.
   */
  dirtied: boolean;
  /**
   * Opened with O_APPEND: every write goes to the end of the file as the mount holds it. The kernel
   * places such a write at the size it cached, which another face's change (a line appended over
   * RPC) only marks stale: written there, it overwrote what that face had appended. libfuse 3 only
   * (where a write(2) is told from a page written back from a shared memory map).
   */
  append?: boolean;
}

export interface FuseFileSystemOptions {
  backend: FuseBackend;
  log: Logger;
  /**
   * Owner given to new entries where the binding does not say who is calling (fuse-native), and
   * reported for entries that carry none. The mount admits only callers with the daemon's uid and
   * gid (no allow_other), so these are the callers' ids unless a caller changed its file-system ids alone.
   */
  uid: number;
  gid: number;
  /** Called for each change another face made (this mount's own changes are filtered out). */
  onExternalChange?: ((event: ChangeEvent) => void) | undefined;
  /**
   * The kernel's cached pages of the file at `path` no longer hold what the mount does (an
   * O_APPEND write stored at the end, not where the kernel placed and cached it): drop them.
   */
  dropPages?: ((path: string) => void) | undefined;
}

/** The backend calls that change something: the paths each changes, and the mark a commit made (commitMark). */
const CHANGES: Partial<Record<keyof FuseBackend, {
  paths: (args: unknown[]) => string[];
  etag?: (result: unknown) => string | undefined;
  moves?: (args: unknown[]) => { removes?: string[]; renames?: [string, string][] };
}>> = {
  commit: { paths: (a) => [a[0] as string], etag: (r) => commitMark(r as { etag?: string; version?: number } | undefined) },
  remove: { paths: (a) => [a[0] as string], moves: (a) => ({ removes: [a[0] as string] }) },
  rename: { paths: (a) => [a[0] as string, a[1] as string], moves: (a) => ({ renames: [[a[0] as string, a[1] as string]] }) },
  mkdir: { paths: (a) => [a[0] as string] },
  rmdir: { paths: (a) => [a[0] as string], moves: (a) => ({ removes: [a[0] as string] }) },
  setAttributes: { paths: (a) => [a[0] as string] },
};

/** Whether the backend can store chunks of files still being written (the in-process one). */
function isHolding(backend: FuseBackend): backend is FuseBackend & HoldingBackend {
  return backend.hold !== undefined && backend.chunk !== undefined && backend.chunkRange !== undefined;
}

/** `backend` with every change it is asked for recorded in `own` (its events are then this mount's). */
function recordingOwnChanges(backend: FuseBackend, own: OwnChanges): FuseBackend {
  // One wrapper per method, made on first use (every request calls the backend).
  const wrappers = new Map<PropertyKey, unknown>();
  return new Proxy(backend, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let wrapper = wrappers.get(prop);
      if (!wrapper) {
        const change = CHANGES[prop as keyof FuseBackend];
        const method = value as (...args: unknown[]) => Promise<unknown>;
        wrapper = change
          ? (...args: unknown[]) => own.during(change.paths(args), () => method.apply(target, args), change.etag, change.moves?.(args))
          : method.bind(target);
        wrappers.set(prop, wrapper);
      }
      return wrapper;
    },
  });
}

/** The file system a mount serves; {@link operations} are the callbacks handed to fuse-native. */
export class FuseFileSystem {
  readonly #backend: FuseBackend;
  readonly #log: Logger;
  readonly #uid: number;
  readonly #gid: number;
  readonly #mountedAt = Date.now();
  /** Open files by current path (hidden ones under their `.fuse_hidden` name). */
  readonly #files = new Map<string, OpenFile>();
  readonly #handles = new Map<number, Handle>();
  /** Open files hidden for a rename over them, by the path that rename is to replace (see #rename). */
  readonly #hiddenForRename = new Map<string, HiddenForRename>();
  /** Releases under way (a directory's fsync waits for them). */
  readonly #releasing = new Set<Promise<void>>();
  /** fuse-native: stored files whose deletion waits for a possible rename onto them (see the module note). */
  readonly #pendingDeletes = new Map<string, PendingDelete>();
  readonly #unsubscribe: () => void;
  readonly #own = new OwnChanges();
  /** The binding's node table, followed for other faces' renames and removals, where it keeps one. */
  #table: NodeTable | undefined;
  readonly #onExternalChange: ((event: ChangeEvent) => void) | undefined;
  readonly #dropPages: ((path: string) => void) | undefined;
  /** Hashes written chunks while files are written, when the backend reuses the hashes. */
  readonly #hasher: ChunkHasher | undefined;
  /** Stores written chunks while files are written, when the backend can hold them. */
  readonly #holds: ChunkHolds | undefined;
  #nextFh = 1;

  constructor(opts: FuseFileSystemOptions) {
    // A backend that names its own change events needs no record of what it was asked to change.
    this.#backend = opts.backend.isOwnChange ? opts.backend : recordingOwnChanges(opts.backend, this.#own);
    this.#onExternalChange = opts.onExternalChange;
    this.#dropPages = opts.dropPages;
    this.#log = opts.log;
    this.#uid = opts.uid;
    this.#gid = opts.gid;
    const unsubscribe = [
      this.#backend.onChange((e) => this.#onChange(e)), this.#backend.onLostChanges?.(() => this.#onLostChanges()),
      this.#backend.keepContent?.((path, current) => this.#keep(path, current)),
    ];
    this.#unsubscribe = () => unsubscribe.forEach((u) => u?.());
    this.#hasher = this.#backend.reusesHashes ? new ChunkHasher() : undefined;
    this.#holds = this.#hasher && isHolding(this.#backend)
      ? new ChunkHolds(this.#backend, (err) => this.#log.warn({ err }, 'storing written chunks ahead of the commit failed'))
      : undefined;
  }

  /** Commit what is open and changed, finish pending deletes, stop listening for changes. */
  async close(): Promise<void> {
    this.#unsubscribe();
    for (const pending of [...this.#pendingDeletes.values()]) await pending.run();
    for (const file of new Set(this.#files.values())) {
      await this.#commit(file).catch((err) => this.#log.error({ err, path: file.path }, 'commit at unmount failed'));
    }
    await this.#holds?.idle();
    await this.#hasher?.close();
  }

  /** The callbacks fuse-native calls. */
  operations(): FuseOperations {
    return {
      statfs: (path, cb) => this.#run('statfs', path, cb, () => this.#statfs()),
      getattr: (path, cb) => this.#run('getattr', path, cb, () => this.#getattr(path)),
      readdir: (path, cb) => this.#run('readdir', path, (code, r) => cb(code, r?.[0], r?.[1]), () => this.#readdir(path)),
      open: (path, flags, cb) => this.#run('open', path, cb, () => this.#open(path, flags)),
      create: (path, mode, cb, caller) => this.#run('create', path, (code, r) => cb(code, r?.[0], r?.[1]), () => this.#create(path, mode, caller)),
      read: (path, fd, buf, len, pos, cb) => this.#run('read', path, (code, n) => cb(code < 0 ? code : n!), () => this.#read(fd, buf, len, pos)),
      write: (path, fd, buf, len, pos, cb, cached) => this.#run('write', path, (code, n) => cb(code < 0 ? code : n!), () => {
        const handle = this.#handle(fd);
        if (handle.file.readOnly) throw new PosixError('EROFS');
        checkFileSize(pos + len);
        handle.wrote = true;
        // O_APPEND only for a write(2) that libfuse 3 tells apart: a page written back from a shared
        // map may come through an O_APPEND handle and belongs where it was mapped (fuse-native
        // cannot tell them apart, and keeps the kernel's offsets). Stored elsewhere than the kernel
        // placed it, the bytes it copied into its page cache are at the wrong place: dropped.
        const append = handle.append === true && cached === false
          ? (moved: boolean) => { if (moved) setImmediate(() => this.#dropPages?.(handle.file.path)); }
          : undefined;
        return handle.file.write(buf, len, pos, this.#reloader(handle.file), append);
      }),
      truncate: (path, size, cb) => this.#run('truncate', path, cb, () => this.#truncate(path, size)),
      ftruncate: (path, fd, size, cb) => this.#run('ftruncate', path, cb, async () => {
        const handle = this.#handle(fd);
        if (handle.file.readOnly) throw new PosixError('EROFS');
        checkFileSize(size);
        handle.dirtied = true;
        await handle.file.truncate(size, this.#reloader(handle.file));
      }),
      flush: (path, fd, cb) => this.#run('flush', path, cb, async () => {
        const handle = this.#handle(fd);
        const { file } = handle;
        if (!handle.wrote) {
          // Created or truncated and not written since: its release commits, but the kernel sends
          // the release after close(2) has returned. Stored provisionally here (replaced by the
          // next commit while still queued), it outlives a crash in between too.
          if (handle.dirtied && file.changed && this.#backend.holdsProvisional?.(file.path, file.size)) await this.#commit(file, true);
          return;
        }
        handle.wrote = false;
        handle.dirtied = false;
        await this.#commit(file);
      }),
      // fsync/fdatasync: commit what the handle holds, then wait until the store has flushed it
      // (flush and release commit without that wait, as a local disk's close() does not sync).
      fsync: (path, _datasync, fd, cb) => this.#run('fsync', path, cb, async () => {
        await this.#commit(this.#handle(fd).file);
        await this.#settleDelete('/');
        await this.#backend.sync();
      }),
      // A directory's fsync (editors after renaming over a file) makes its entries' changes durable,
      // those of files closed before it and still being released too: the kernel sends a release
      // after close(2) has returned, and a file made or emptied without a write commits there.
      fsyncdir: (path, _datasync, _fd, cb) => this.#run('fsyncdir', path, cb, async () => {
        await Promise.allSettled(this.#releasing);
        await this.#settleDelete('/');
        await this.#backend.sync();
      }),
      release: (path, fd, cb) => this.#run('release', path, cb, () => {
        const released = this.#release(fd);
        this.#releasing.add(released);
        return released.finally(() => this.#releasing.delete(released));
      }),
      unlink: (path, cb) => this.#run('unlink', path, cb, () => this.#unlink(path)),
      rename: (from, to, cb, hiding) => this.#run('rename', from, cb, () => {
        checkExactName('create', to);
        return this.#rename(from, to, hiding);
      }),
      link: (_from, to, cb) => this.#run('link', to, cb, async () => {
        throw new PosixError('EPERM', 'hard links are not supported');
      }),
      // A FIFO, socket or device node: EPERM, as mknod(2) says for a type the file system lacks
      // (unanswered, libfuse would say ENOSYS, "Function not implemented").
      mknod: (path, _mode, _dev, cb) => this.#run('mknod', path, cb, async () => {
        throw new PosixError('EPERM', 'special files (FIFOs, sockets, devices) are not supported');
      }),
      symlink: (target, path, cb, caller) => this.#run('symlink', path, cb, () => this.#symlink(target, path, caller)),
      readlink: (path, cb) => this.#run('readlink', path, cb, () => this.#readlink(path)),
      mkdir: (path, mode, cb, caller) => this.#run('mkdir', path, cb, () => this.#mkdir(path, mode, caller)),
      rmdir: (path, cb) => this.#run('rmdir', path, cb, () => this.#rmdir(path)),
      chmod: (path, mode, cb) => this.#run('chmod', path, cb, () => this.#setAttributes(path, { mode: mode & 0o7777 })),
      chown: (path, uid, gid, cb) => this.#run('chown', path, cb, () => this.#setAttributes(path, {
        uid: uid === UNCHANGED_ID ? undefined : uid, gid: gid === UNCHANGED_ID ? undefined : gid,
      })),
      utimens: (path, _atime, mtime, cb) => this.#run('utimens', path, cb, () => this.#utimens(path, mtime)),
      copyFileRange: (_srcPath, srcFd, srcPos, dstPath, dstFd, dstPos, len, cb) => this.#run('copy_file_range', dstPath,
        (code, n) => cb(code < 0 ? code : n!), () => {
          checkFileSize(dstPos + len);
          return this.#copyRange(srcFd, srcPos, dstFd, dstPos, len);
        }),
      lseek: (path, fd, offset, whence, cb) => this.#run('lseek', path, cb, () => this.#seek(fd, offset, whence)),
      fallocate: (path, fd, offset, length, mode, cb) => this.#run('fallocate', path, cb, () => {
        checkFileSize(offset + length);
        return this.#allocate(fd, offset, length, mode);
      }),
    };
  }

  /** SEEK_DATA or SEEK_HOLE from `offset` in the file open as `fd` (whole chunks: {@link OpenFile.seek}). */
  async #seek(fd: number, offset: number, whence: number): Promise<number> {
    if (whence !== SEEK_DATA && whence !== SEEK_HOLE) throw new PosixError('EINVAL');
    const { file } = this.#handle(fd);
    const at = await file.seek(offset, whence === SEEK_HOLE, this.#reloader(file));
    if (at === undefined) throw new PosixError('ENXIO');
    return at;
  }

  /**
   * fallocate(2). Space is not reserved (a stored chunk is stored when written, and a file's zeros
   * are holes), so what it gives is what a program reads afterwards: mode 0 grows the file to
   * `offset + length` with zeros, KEEP_SIZE alone changes nothing, PUNCH_HOLE and ZERO_RANGE write
   * zeros over the range (the commit stores whole chunks of them as holes); ZERO_RANGE grows the
   * file unless KEEP_SIZE. Other modes (collapse, insert, unshare): EOPNOTSUPP, as on file systems
   * without them.
   */
  async #allocate(fd: number, offset: number, length: number, mode: number): Promise<void> {
    const handle = this.#handle(fd);
    const { file } = handle;
    if (file.readOnly) throw new PosixError('EROFS');
    if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) throw new PosixError('EOPNOTSUPP');
    if (offset < 0 || length <= 0) throw new PosixError('EINVAL');
    const end = offset + length;
    if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
      const upto = Math.min(end, file.size);
      zeros ??= Buffer.alloc(CHUNK_SIZE);
      for (let at = offset; at < upto;) {
        const n = Math.min(upto - at, CHUNK_SIZE - (at % CHUNK_SIZE));
        await file.write(zeros, n, at, this.#reloader(file));
        at += n;
      }
      if (upto > offset) handle.dirtied = true;
    }
    if (!(mode & FALLOC_FL_KEEP_SIZE) && end > file.size) {
      await file.truncate(end, this.#reloader(file));
      handle.dirtied = true;
    }
  }

  /** Up to `len` bytes of the file open as `fd` from `pos` into `buf`. */
  #read(fd: number, buf: Buffer, len: number, pos: number): Promise<number> {
    const { file } = this.#handle(fd);
    return file.read(buf, len, pos, this.#reloader(file));
  }

  /** Loads `file`'s stored content again (after another face changed it); undefined once it is gone. */
  #reloader(file: OpenFile): () => Promise<StoredContent | undefined> {
    return () => this.#backend.content(file.path).catch(() => undefined);
  }

  /**
   * copy_file_range. From a file unchanged since it was opened, into the end of another at the same
   * chunk-aligned offset (what `cp` asks for), in process: the chunks are shared, not copied
   * ({@link OpenFile.cloneFrom}), up to {@link CLONE_MAX} bytes a call. Otherwise: read from one
   * open file and write to the other inside the daemon, a chunk at a time, up to
   * {@link COPY_RANGE_MAX} bytes (whole chunks at aligned offsets then hash to chunks the store
   * already holds, so the copy stores no new bytes either).
   */
  async #copyRange(srcFd: number, srcPos: number, dstFd: number, dstPos: number, len: number): Promise<number> {
    const dst = this.#handle(dstFd);
    if (dst.file.readOnly) throw new PosixError('EROFS');
    if (srcPos === dstPos && dstPos === dst.file.size && srcPos % CHUNK_SIZE === 0) {
      const source = await this.#handle(srcFd).file.storedContent();
      const cloned = source ? await dst.file.cloneFrom(source, dstPos, Math.min(len, CLONE_MAX)) : 0;
      if (cloned > 0) {
        dst.wrote = true;
        return cloned;
      }
    }
    const total = Math.min(len, COPY_RANGE_MAX);
    const buf = Buffer.allocUnsafe(Math.min(total, CHUNK_SIZE));
    let copied = 0;
    while (copied < total) {
      const want = Math.min(buf.length, total - copied);
      const n = await this.#read(srcFd, buf, want, srcPos + copied);
      if (n <= 0) break;
      dst.wrote = true;
      await dst.file.write(buf, n, dstPos + copied, this.#reloader(dst.file));
      copied += n;
      if (n < want) break;
    }
    return copied;
  }

  // ---------------------------------------------------------------- plumbing

  #run<T>(op: string, path: string, done: (code: number, value?: T) => void, fn: () => Promise<T> | T): void {
    let result: Promise<T>;
    try {
      checkExactName(op, path);
      result = Promise.resolve(fn());
    } catch (err) {
      result = Promise.reject(err);
    }
    result.then((value) => done(0, value), (err: unknown) => done(this.#errno(op, path, err)));
  }

  #errno(op: string, path: string, err: unknown): number {
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    const name = err instanceof PosixError ? err.code
      : err instanceof SvcError ? toErrno(err)
      : code !== undefined && OUT_OF_SPACE.has(code) ? code
      : 'EIO';
    if (name === 'EIO' || OUT_OF_SPACE.has(name)) this.#log.error({ err, op, path }, 'FUSE operation failed');
    else this.#log.debug({ op, path, errno: name, msg: (err as Error).message }, 'FUSE operation refused');
    return errno(name);
  }

  #handle(fd: number): Handle {
    const handle = this.#handles.get(fd);
    if (!handle) throw new PosixError('EBADF', `no open handle ${fd}`);
    return handle;
  }

  #addHandle(file: OpenFile, dirtied = false): number {
    while (this.#handles.has(this.#nextFh)) this.#nextFh = this.#nextFh >= 0x7fffffff ? 1 : this.#nextFh + 1;
    const fh = this.#nextFh;
    this.#nextFh = fh >= 0x7fffffff ? 1 : fh + 1;
    this.#handles.set(fh, { file, wrote: false, dirtied });
    file.handles.add(fh);
    return fh;
  }

  async #commit(file: OpenFile, provisional = false): Promise<void> {
    await file.commit(
      async (_path, pieces, attributes, modified, etag) => {
        // Another face renaming or deleting the file (or a directory above it) right now: its
        // event moves or unlinks the open file; commit where that leaves it, not at the old name.
        for (;;) {
          await this.#movesDone(file);
          if (file.orphan) throw new PosixError('ENOENT');
          try {
            return await this.#backend.commit(file.path, pieces, { attributes, modified, etag, provisional });
          } catch (err) {
            // One started while this commit was on its way (the backend checks as it commits).
            if (!(err instanceof MoveUnderwayError)) throw err;
          }
        }
      },
      async (path, version) => {
        // Committed, then moved by another face before this reads it back: its current content there.
        await this.#movesDone(file);
        return file.path === path ? this.#backend.versionContent(path, version) : this.#backend.content(file.path);
      },
    );
  }

  /** Until no other face is renaming or removing `file`'s path (or a directory above it): their events move or unlink it. */
  async #movesDone(file: OpenFile): Promise<void> {
    for (let wait = this.#backend.movesUnderway?.(file.path); wait; wait = this.#backend.movesUnderway?.(file.path)) await wait;
  }

  /** A path to look up: a malformed name cannot exist (ENOENT), except an over-long one. */
  #lookupPath(path: string): string {
    try {
      return normalizePath(path);
    } catch (err) {
      if (err instanceof SvcError && err.data?.errno === 'ENAMETOOLONG') throw err;
      throw new PosixError('ENOENT');
    }
  }

  /** The stored entry at a path, or ENOENT (entries waiting for deletion are already gone). */
  async #stored(path: string): Promise<NodeInfo> {
    if (this.#pendingDeletes.has(path)) throw new PosixError('ENOENT');
    const info = await this.#backend.stat(this.#lookupPath(path));
    if (!info) throw new PosixError('ENOENT');
    return info;
  }

  /**
   * A path to create a file or symlink at (valid, not taken, in an existing directory), and that
   * directory (undefined: the root).
   */
  async #creatable(path: string): Promise<{ p: string; parent: NodeInfo | undefined }> {
    const p = normalizePath(path);
    await this.#settleDelete(p);
    const open = this.#files.get(p);
    if ((open && !open.orphan) || await this.#backend.stat(p)) throw new PosixError('EEXIST');
    return { p, parent: await this.#parentDir(p) };
  }

  /** The directory `p` would be made in (undefined: the root); ENOENT or ENOTDIR when there is none. */
  async #parentDir(p: string): Promise<NodeInfo | undefined> {
    const parent = parentOf(p);
    if (parent === '/') return undefined;
    const dir = await this.#backend.stat(parent);
    if (!dir) throw new PosixError('ENOENT');
    if (dir.kind !== 'dir') throw new PosixError('ENOTDIR');
    return dir;
  }

  /**
   * Owner of a new entry, as a local disk gives it: the caller's ids (the daemon's where the
   * binding does not say), the group being the parent directory's when that has the set-group-ID
   * bit (`inherited`: a new directory then carries the bit too).
   */
  #owner(caller: FuseCaller | undefined, parent: NodeInfo | undefined): { uid: number; gid: number; inherited: boolean } {
    const uid = caller?.uid ?? this.#uid;
    if (parent && ((parent.mode ?? 0) & S_ISGID) !== 0) return { uid, gid: parent.gid ?? this.#gid, inherited: true };
    return { uid, gid: caller?.gid ?? this.#gid, inherited: false };
  }

  #statOf(info: NodeInfo): FuseStat {
    const type = info.kind === 'dir' ? S_IFDIR : info.kind === 'symlink' ? S_IFLNK : S_IFREG;
    const perm = info.kind === 'symlink' ? 0o777 : info.mode ?? (info.kind === 'dir' ? 0o755 : 0o644);
    const size = info.kind === 'dir' ? 4096 : info.size;
    return {
      mode: type | perm, uid: info.uid ?? this.#uid, gid: info.gid ?? this.#gid, size, nlink: info.kind === 'dir' ? 2 : 1,
      mtime: info.mtime, atime: info.mtime, ctime: info.ctime, blocks: Math.ceil((info.allocated ?? size) / 512), blksize: BLKSIZE,
    };
  }

  /** Attributes of an open file with local changes (size and times are its own). */
  async #openFileStat(file: OpenFile): Promise<FuseStat> {
    const stored = file.isNew || file.orphan ? undefined : await this.#backend.stat(file.path).catch(() => undefined);
    const attrs = file.pendingAttributes ?? stored;
    return this.#statOf({
      kind: 'file', size: file.size, allocated: file.allocated, mode: attrs?.mode, uid: attrs?.uid, gid: attrs?.gid,
      mtime: file.explicitMtime ?? file.mtime, ctime: file.mtime,
    });
  }

  /**
   * The root's attributes are the mount's own, with the times of the last change of a name in it
   * (the store's root has no entry: no mode or owner of its own); the mount's start before any.
   */
  async #rootStat(): Promise<FuseStat> {
    const stored = await this.#backend.stat('/').catch(() => undefined);
    const mtime = stored?.mtime || this.#mountedAt;
    return this.#statOf({ kind: 'dir', size: 0, mtime, ctime: Math.max(mtime, stored?.ctime ?? 0) });
  }

  /** Follow other faces' renames and removals in the binding's node table ({@link NativeMount.renamed}, `removed`). */
  followNodeTable(table: NodeTable): void {
    this.#table = table;
  }

  #onChange(event: ChangeEvent): void {
    const exact = this.#backend.isOwnChange?.(event);
    let own = exact ?? false;
    if (exact === undefined) {
      own = this.#own.isOwnEvent(event);
    }
    // Another face's rename: what is open below the old path goes on under the new one, as after
    // a rename through the mount (before the kernel is told, whose notifications look the new
    // names up in the node table).
    if (!own && event.type === 'rename' && event.new_path !== undefined && this.#table) this.#followRename(event.path, event.new_path);
    // Another face's delete (of the file, or of a directory above it): what is open there is
    // unlinked, as by an unlink through the mount. Its descriptors go on, and its close stores
    // nothing: the acknowledged delete is not undone by a close that follows it.
    if (!own && (event.type === 'delete' || event.type === 'rmdir')) this.#followDelete(event.path);
    for (const path of [event.path, event.new_path]) {
      if (path === undefined) continue;
      const file = this.#files.get(path);
      if (file && !file.changed && (event.version === undefined || event.version !== file.baseVersion)) file.stale = true;
    }
    if (!own) this.#onExternalChange?.(event);
  }

  /**
   * Another face is removing the stored file at `path` (its version: `current`) while it is open
   * here: what the open file still reads from the store is kept for it (held in the removing
   * transaction, then adopted), so its descriptors read on, as on a local disk and as after an
   * unlink through the mount (whose hide copies it). The delete event then unlinks it ({@link #followDelete}).
   */
  #keep(path: string, current: StoredContent): ReturnType<ContentKeeper> {
    const file = this.#files.get(path);
    if (!file || file.orphan || file.isNew) return undefined;
    const keep = file.keepFrom(current);
    return keep && {
      hashes: keep.hashes,
      kept: (held) => void keep.adopt(held).catch((err: unknown) => this.#log.error({ err, path }, 'keeping an open file that another face deleted failed')),
    };
  }

  /** Another face deleted `path` (a file, or a directory with everything below it). */
  #followDelete(path: string): void {
    for (const [p, file] of [...this.#files]) {
      if (!isWithin(p, path) || file.orphan || file.isNew) continue;
      this.#unlinkedElsewhere(file, this.#table?.removed(p) ?? '');
    }
  }

  /**
   * Another face removed or replaced open `file`'s stored file: it is unlinked, as by an unlink
   * through the mount (its descriptors read what they read, and nothing of it is stored again).
   * Under `hidden`, the hidden path the binding's node table gave it, its descriptors go on with
   * fstat too, and its last close unlinks that; without one (fuse-native), it is reached by handle only.
   */
  #unlinkedElsewhere(file: OpenFile, hidden: string): void {
    file.orphan = true;
    this.#files.delete(file.path);
    if (hidden) {
      file.path = hidden;
      this.#files.set(hidden, file);
    } else if (file.handles.size === 0) {
      void file.dispose();
    }
  }

  /**
   * Another face renamed `from` to `to`. The binding's node table follows (so the kernel's
   * requests for what it holds there come with the new paths), and so do the open files: one the
   * rename replaced at `to` is hidden, as the binding hid it (its descriptors read what they read,
   * and nothing of it is stored again), and those at or below `from` move to `to`, where their
   * next commit stores what was written through them.
   */
  #followRename(from: string, to: string): void {
    const hidden = this.#table!.renamed(from, to);
    const replaced = this.#files.get(to);
    if (replaced && !isWithin(to, from)) this.#unlinkedElsewhere(replaced, hidden);
    this.#moveOpenFiles(from, to);
  }

  /**
   * Changes may have been missed (a remote mount's watch reconnected): each open file is taken as
   * changed by another face, so its next read loads what is stored and the kernel drops its pages
   * and attributes. (Closed files: the kernel's attributes time out, and a file opened again whose
   * size or mtime changed is read afresh.)
   */
  #onLostChanges(): void {
    const at = new Date().toISOString();
    for (const [path, file] of this.#files) if (!file.orphan) this.#onChange({ type: 'write', path, at });
  }

  // ---------------------------------------------------------------- pending deletes of hidden files

  #scheduleDelete(path: string): void {
    let running: Promise<void> | undefined;
    const pending: PendingDelete = {
      timer: setTimeout(() => void pending.run(), HIDE_DELETE_DELAY_MS),
      started: false,
      run: () => {
        clearTimeout(pending.timer);
        pending.started = true;
        running ??= this.#backend.remove(path).catch((err: unknown) => {
          if (!(err instanceof SvcError && toErrno(err) === 'ENOENT')) this.#log.error({ err, path }, 'deleting an unlinked open file failed');
        }).finally(() => {
          if (this.#pendingDeletes.get(path) === pending) this.#pendingDeletes.delete(path);
        });
        return running;
      },
    };
    this.#pendingDeletes.set(path, pending);
  }

  /** Run pending deletes at or below `path` now. */
  async #settleDelete(path: string): Promise<void> {
    for (const [p, pending] of [...this.#pendingDeletes]) {
      if (isWithin(p, path)) await pending.run();
    }
  }

  /** A rename onto `path` follows its hide: keep the stored file (it is replaced and keeps its history). */
  async #cancelDelete(path: string): Promise<void> {
    const pending = this.#pendingDeletes.get(path);
    if (!pending) return;
    if (pending.started) return pending.run();
    clearTimeout(pending.timer);
    this.#pendingDeletes.delete(path);
  }

  // ---------------------------------------------------------------- operations

  async #statfs(): Promise<FuseStatfs> {
    const s = await this.#backend.space();
    const u32 = (n: number) => Math.max(0, Math.min(UINT32_MAX, Math.floor(n)));
    return {
      bsize: u32(s.blockSize), frsize: u32(s.blockSize), blocks: u32(s.blocks), bfree: u32(s.blocksFree), bavail: u32(s.blocksFree),
      files: u32(s.files), ffree: u32(s.filesFree), favail: u32(s.filesFree), fsid: 0, flag: 0, namemax: 255,
    };
  }

  async #getattr(path: string): Promise<FuseStat> {
    if (path === '/') return await this.#rootStat();
    if (isVersionsPath(path)) return this.#versionsStat(await this.#versionsTarget(path));
    const file = this.#files.get(path);
    if (file && (file.changed || file.orphan)) return this.#openFileStat(file);
    return this.#statOf(await this.#stored(path));
  }

  async #readdir(path: string): Promise<[string[], FuseStat[]]> {
    const here = await this.#getattr(path);
    const names = ['.', '..'];
    const stats = [here, here];
    if (isVersionsPath(path)) {
      for (const [name, target] of await listVersionsDir(this.#backend, await this.#versionsTarget(path))) {
        names.push(name);
        stats.push(this.#versionsStat(target));
      }
      return [names, stats];
    }
    const dir = this.#lookupPath(path);
    const seen = new Set<string>();
    for (const [name, info] of await this.#backend.list(dir)) {
      const child = dir === '/' ? `/${name}` : `${dir}/${name}`;
      // A stored /.versions is shadowed by the virtual tree.
      if (this.#pendingDeletes.has(child) || child === VERSIONS_DIR) continue;
      seen.add(name);
      const file = this.#files.get(child);
      names.push(name);
      stats.push(file?.changed ? await this.#openFileStat(file) : this.#statOf(info));
    }
    for (const [p, file] of this.#files) {
      if (file.isNew && !file.orphan && parentOf(p) === dir && !seen.has(baseName(p))) {
        names.push(baseName(p));
        stats.push(await this.#openFileStat(file));
      }
    }
    return [names, stats];
  }

  async #open(path: string, flags: number): Promise<number> {
    const writing = (flags & 3) !== 0; // O_WRONLY or O_RDWR
    if (isVersionsPath(path)) {
      if (writing) throw new PosixError('EROFS');
      const target = await this.#versionsTarget(path);
      if (target.kind !== 'version') throw new PosixError('EISDIR');
      const content = await this.#backend.versionContent(target.path, target.version.version);
      return this.#addHandle(new OpenFile(path, content, { readOnly: true, mtime: target.version.modified }));
    }
    if (this.#pendingDeletes.has(path)) throw new PosixError('ENOENT');
    if (writing) await this.#backend.checkWritable(this.#lookupPath(path));
    const open = this.#files.get(path);
    if (open) {
      // The handle first: a release of the file's last other handle, under way, then keeps it
      // (it let go of a file it found without handles, and this open kept using that file
      // unseen by the next open, getattr and truncate: the remote mount's `truncate` right after
      // a close answered the old size, and appends landed there).
      const fh = this.#addHandle(open);
      if ((flags & O_APPEND) !== 0) this.#handles.get(fh)!.append = true;
      if (open.changed || open.orphan) return fh;
      try {
        // A clean open file may be behind a change made through another face.
        const info = await this.#backend.stat(path);
        if (info?.version !== undefined && info.version !== open.baseVersion) await open.refresh(await this.#backend.content(path));
      } catch (err) {
        this.#handles.delete(fh);
        open.handles.delete(fh);
        if (open.handles.size === 0 && !open.changed && this.#files.get(path) === open) {
          this.#files.delete(path);
          await open.dispose();
        }
        throw err;
      }
      return fh;
    }
    const p = this.#lookupPath(path);
    const content = await this.#backend.content(p);
    // Another open of the same path may have won the race while this one waited.
    const file = this.#files.get(p) ?? new OpenFile(p, content, {
      mtime: Date.now(), spoolDir: this.#backend.spoolDir, hasher: this.#hasher, holds: this.#holds,
    });
    this.#files.set(p, file);
    const fh = this.#addHandle(file);
    if ((flags & O_APPEND) !== 0) this.#handles.get(fh)!.append = true;
    return fh;
  }

  /** The new file's handle, and its attributes (the binding may answer the kernel's entry with them). */
  async #create(path: string, mode: number, caller: FuseCaller | undefined): Promise<[number, FuseStat]> {
    if (isVersionsPath(path)) throw new PosixError('EROFS');
    const { p, parent } = await this.#creatable(path);
    await this.#backend.checkWritable(p);
    const { uid, gid } = this.#owner(caller, parent);
    const file = new OpenFile(p, undefined, {
      attributes: { mode: mode & 0o7777, uid, gid }, mtime: Date.now(), spoolDir: this.#backend.spoolDir,
      hasher: this.#hasher, holds: this.#holds,
    });
    this.#files.set(p, file);
    // Dirtied: even with no write, the close must store the new (empty) file.
    return [this.#addHandle(file, true), await this.#openFileStat(file)];
  }

  async #truncate(path: string, size: number): Promise<void> {
    if (isVersionsPath(path)) throw new PosixError('EROFS');
    checkFileSize(size);
    const open = this.#files.get(path);
    if (open && !open.orphan) {
      // open(O_TRUNC) arrives as open + truncate by path (the kernel sends no handle for it):
      // buffered with the writes that follow, one version, committed by the release of the handle
      // just opened. Only that one: the previous opener's release is asynchronous and may still
      // be on its way (`echo a > f; echo b > f`), and marking it too committed the truncated
      // file as a version of its own.
      await open.truncate(size, this.#reloader(open));
      const newest = [...open.handles].at(-1);
      if (newest !== undefined) this.#handles.get(newest)!.dirtied = true;
      return;
    }
    const info = await this.#stored(path);
    if (info.kind === 'dir') throw new PosixError('EISDIR');
    const file = new OpenFile(path, await this.#backend.content(path), { mtime: Date.now(), spoolDir: this.#backend.spoolDir });
    try {
      await file.truncate(size);
      await this.#commit(file);
    } finally {
      await file.dispose();
    }
  }

  async #release(fd: number): Promise<void> {
    const handle = this.#handle(fd);
    this.#handles.delete(fd);
    const { file } = handle;
    file.handles.delete(fd);
    try {
      if (handle.wrote || handle.dirtied || file.handles.size === 0) await this.#commit(file);
    } finally {
      if (file.handles.size === 0) this.#backend.closed?.(file.path);
      // Checked after the commit: an open() may have joined the file while it was committing.
      if (file.handles.size === 0 && this.#files.get(file.path) === file && !file.orphan) this.#files.delete(file.path);
      // Unused from now on (a hidden file stays listed until libfuse unlinks its name).
      if (file.handles.size === 0 && this.#files.get(file.path) !== file) await file.dispose();
    }
  }

  async #unlink(path: string): Promise<void> {
    if (isVersionsPath(path)) throw new PosixError('EROFS');
    const file = this.#files.get(path);
    if (file?.orphan || file?.isNew) {
      // libfuse removing its hidden name, or a file created here and never stored. A file hidden
      // for a rename still under way is kept: should the rename fail, it is stored again.
      file.orphan = true;
      this.#files.delete(path);
      if (file.handles.size === 0 && ![...this.#hiddenForRename.values()].some((h) => h.file === file)) await file.dispose();
      return;
    }
    await this.#stored(path);
    await this.#backend.remove(this.#lookupPath(path));
    if (file) {
      file.orphan = true;
      this.#files.delete(path);
    }
  }

  async #rename(from: string, to: string, hiding: HideFor | undefined): Promise<void> {
    // A rename over an open file follows that file's hide: failing, it gives the file its path back
    // (the binding gives the file its name back).
    const hidden = this.#hiddenForRename.get(to);
    try {
      if (isVersionsPath(from) || isVersionsPath(to)) throw new PosixError('EROFS');
      const src = this.#files.get(from);
      // fuse-native does not say which renames are its hides: there the hidden name tells.
      const hides = hiding === undefined ? baseName(to).startsWith(HIDDEN_PREFIX) : hiding !== 'none';
      if (src && !src.orphan && hides) return await this.#hide(src, to, hiding === 'none' ? undefined : hiding);
      await this.#move(from, to, src, hidden);
    } catch (err) {
      if (hidden) await this.#unhide(hidden, to);
      throw err;
    } finally {
      if (hidden) this.#hiddenForRename.delete(to);
      // Renamed over, closed and unlinked meanwhile: nothing keeps it any more.
      if (hidden?.file.orphan && hidden.file.handles.size === 0 && this.#files.get(hidden.hiddenPath) !== hidden.file) await hidden.file.dispose();
    }
  }

  /**
   * The rename over an open file failed: the file is shown at its path again (the binding gives
   * it its name back). Closed and unlinked meanwhile, it is stored there instead, with what was
   * written through it.
   */
  async #unhide(hidden: HiddenForRename, path: string): Promise<void> {
    const { file, hiddenPath } = hidden;
    if (this.#files.get(hiddenPath) === file) this.#files.delete(hiddenPath);
    file.orphan = false;
    file.path = path;
    if (file.handles.size > 0) {
      this.#files.set(path, file);
      return;
    }
    try {
      await this.#commit(file);
    } finally {
      await file.dispose();
    }
  }

  /**
   * A program's rename (POSIX: replacing the target), of the open file `src` when it is open;
   * `hidden`: the open target the binding hid for it.
   */
  async #move(from: string, to: string, src: OpenFile | undefined, hidden: HiddenForRename | undefined): Promise<void> {
    if (this.#pendingDeletes.has(from)) throw new PosixError('ENOENT');
    const target = normalizePath(to);
    await this.#cancelDelete(target);
    // Stored files unlinked while open and still waiting for their delete, below either name: the
    // store must not carry them along (the delete would miss them) nor find the target not empty.
    await this.#settleDelete(from);
    await this.#settleDelete(target);
    for (const [p, file] of this.#files) {
      if (file.isNew && !file.orphan && p !== target && isWithin(p, target)) throw new PosixError('ENOTEMPTY');
    }
    // The store must hold what is renamed, including a file created here and not committed yet.
    if (src?.changed && !src.orphan) await this.#commit(src);
    try {
      await this.#backend.rename(this.#lookupPath(from), target);
    } catch (err) {
      // Over an open file, the store may have renamed before the error (a commit hook failing
      // after the commit): the rename then stands, answered as done, and the hidden file stays
      // hidden. Given back its path, its close would store the replaced content over the new.
      const renamed = hidden && !(await this.#backend.stat(from).catch(() => undefined))
        && (await this.#backend.stat(target).catch(() => undefined))?.version !== hidden.version;
      if (!renamed) throw err;
      this.#log.error({ err, from, to: target }, 'a rename over an open file failed after the store made it');
    }
    const replaced = this.#files.get(target);
    if (replaced && replaced !== src) {
      replaced.orphan = true;
      this.#files.delete(target);
    }
    if (normalizePath(from) !== target) this.#moveOpenFiles(from, target);
  }

  /**
   * A rename of `from` to `to` (through the mount or another face): files hidden in a directory it
   * replaced at `to` go to the root, and the open files at or below `from` move to `to`, those
   * unlinked while open too (the binding moves their hidden names, and sends their last unlink
   * under the new one) but the one hidden at `from` itself.
   */
  #moveOpenFiles(from: string, to: string): void {
    this.#rehomeHidden(to);
    for (const [p, file] of [...this.#files]) {
      if (!isWithin(p, from) || (file.orphan && p === from)) continue;
      this.#files.delete(p);
      file.moveTo(to + p.slice(from.length));
      this.#files.set(file.path, file);
    }
  }

  /**
   * A directory removed or renamed over held nothing stored, but may hold files unlinked while
   * open (hidden, never stored): they move to the root under their unique hidden names, as the
   * binding moves them, so their descriptors keep working and their last close lets them go.
   */
  #rehomeHidden(dir: string): void {
    for (const [p, file] of [...this.#files]) {
      if (!file.orphan || parentOf(p) !== dir) continue;
      this.#files.delete(p);
      file.moveTo(`/${baseName(p)}`);
      this.#files.set(file.path, file);
    }
  }

  /**
   * The binding renames a file that is unlinked or renamed over while open to `.fuse_hiddenNNN`.
   * Its stored file goes with the unlink, before it is answered (so the unlink is durable, and
   * refused where the store refuses it); a rename over it replaces it. fuse-native does not say
   * which: there the deletion waits a moment for a rename onto the path (see the module note).
   */
  async #hide(file: OpenFile, hiddenPath: string, hiding: 'unlink' | 'rename' | undefined): Promise<void> {
    const from = file.path;
    const stored = !file.isNew;
    const version = file.baseVersion;
    // The open file keeps its bytes: what it still reads from the stored version is copied first.
    await file.detach();
    if (stored && hiding === 'unlink') await this.#backend.remove(from);
    file.orphan = true;
    this.#files.delete(from);
    file.path = hiddenPath;
    this.#files.set(hiddenPath, file);
    if (hiding === 'rename') this.#hiddenForRename.set(from, { file, hiddenPath, version });
    if (stored && hiding === undefined) this.#scheduleDelete(from);
  }

  async #mkdir(path: string, mode: number, caller: FuseCaller | undefined): Promise<void> {
    if (isVersionsPath(path)) throw new PosixError('EROFS');
    const p = normalizePath(path);
    await this.#settleDelete(p);
    const { uid, gid, inherited } = this.#owner(caller, await this.#parentDir(p));
    await this.#backend.mkdir(p, { mode: (mode & 0o7777) | (inherited ? S_ISGID : 0), uid, gid });
  }

  async #rmdir(path: string): Promise<void> {
    if (isVersionsPath(path)) throw new PosixError('EROFS');
    const p = this.#lookupPath(path);
    await this.#settleDelete(p);
    for (const [q, file] of this.#files) {
      if (file.isNew && !file.orphan && q !== p && isWithin(q, p)) throw new PosixError('ENOTEMPTY');
    }
    await this.#backend.rmdir(p);
    this.#rehomeHidden(p);
  }

  async #symlink(target: string, path: string, caller: FuseCaller | undefined): Promise<void> {
    if (isVersionsPath(path)) throw new PosixError('EROFS');
    const { p, parent } = await this.#creatable(path);
    const { uid, gid } = this.#owner(caller, parent);
    await this.#backend.commit(p, [memoryPiece(Buffer.from(target))], { symlink: true, attributes: { uid, gid } });
  }

  async #readlink(path: string): Promise<string> {
    if (isVersionsPath(path)) throw new PosixError('EINVAL');
    const info = await this.#stored(path);
    if (info.kind !== 'symlink') throw new PosixError('EINVAL');
    return (await readAll(await this.#backend.content(path))).toString();
  }

  async #setAttributes(path: string, changes: { mode?: number; uid?: number | undefined; gid?: number | undefined }): Promise<void> {
    if (isVersionsPath(path)) throw new PosixError('EROFS');
    // The mount's root is not an entry of its own: its attributes stay the mount's.
    if (path === '/') return;
    const file = this.#files.get(path);
    if (file?.orphan) return;
    if (file?.isNew) return file.setPendingAttributes(changes);
    await this.#stored(path);
    await this.#backend.setAttributes(this.#lookupPath(path), changes);
  }

  async #utimens(path: string, mtime: number): Promise<void> {
    if (isVersionsPath(path)) throw new PosixError('EROFS');
    if (path === '/') return;
    const file = this.#files.get(path);
    if (file?.orphan) return;
    if (file?.changed) {
      // Recorded by the commit that stores the pending content (a commit stamps the last write otherwise).
      file.explicitMtime = mtime;
      return;
    }
    await this.#stored(path);
    await this.#backend.setAttributes(this.#lookupPath(path), { modified: mtime });
  }

  // ---------------------------------------------------------------- /.versions

  async #versionsTarget(path: string): Promise<VersionsTarget> {
    const target = await resolveVersionsPath(this.#backend, path);
    if (!target) throw new PosixError('ENOENT');
    return target;
  }

  #versionsStat(target: VersionsTarget): FuseStat {
    if (target.kind === 'version') {
      const v = target.version;
      return this.#statOf({ kind: 'file', size: v.size, mode: 0o444, mtime: v.modified, ctime: v.modified });
    }
    const time = target.info?.mtime ?? this.#mountedAt;
    return this.#statOf({ kind: 'dir', size: 0, mode: 0o555, mtime: time, ctime: time });
  }
}

/** Every byte of a (small) stored content. */
async function readAll(content: StoredContent): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let i = 0, have = 0; have < content.size; i++) {
    const chunk = await content.load(i);
    parts.push(chunk);
    have += chunk.length;
  }
  return Buffer.concat(parts);
}

/** Operations that make a new name: a malformed one is refused (EINVAL) rather than found missing. */
const CREATING = new Set(['create', 'mkdir', 'symlink', 'mknod', 'link']);

/**
 * The kernel's path is exact. normalizePath trims the whole string (RPC's friendliness to
 * `" /a/b "`), which for a mount path strips the whitespace a last name ends with ("c ", "c\u00a0",
 * a lone "\u2028") and so names another entry: `rm 'c '` removed c, `rmdir 'd/\u2028'` removed d.
 * Such a name cannot exist (ENOENT), and cannot be made (EINVAL, as a space-padded name over RPC).
 */
function checkExactName(op: string, path: string): void {
  if (path.length <= 1 || path.trimEnd() === path) return;
  throw new PosixError(CREATING.has(op) ? 'EINVAL' : 'ENOENT', `name ends in whitespace: ${JSON.stringify(path)}`);
}
