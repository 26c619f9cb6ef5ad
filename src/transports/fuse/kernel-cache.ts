/**
 * @module transports/fuse/kernel-cache
 * Keeps the kernel's caches of a mount in step with changes made through the other faces (RPC,
 * WebSocket, other mounts): on each such change the kernel is told to drop the changed file's
 * attributes and pages, and the names that were created, deleted or renamed with their directory's
 * attributes. Without this a change shows up only when the kernel's cache times out
 * (KERNEL_CACHE_SECONDS), and a program that keeps a file open reads the pages it cached before
 * the change until it reopens the file.
 *
 * The kernel knows inodes by node id. svc's libfuse 3 addon keeps the table of the ids the kernel
 * holds, so the id of a path is read from it on the main thread ({@link resolveNotifications}), and
 * a path the kernel holds nothing for needs no notification. On fuse-native the id is what `stat`
 * reports as st_ino (libfuse 2 without `use_ino`), so it is read by `lstat` through the mount
 * itself. That lstat,
 * and the notification write (which waits for requests in flight on the same inode or directory),
 * need the main thread to answer FUSE requests meanwhile, so both run on a worker thread of their
 * own, one notification at a time: never on the main thread, and never on libuv's thread pool,
 * which the mount's own operations need to answer those requests.
 *
 * Changes this mount made itself are not sent: the kernel saw them happen. The in-process backend
 * names its own change events exactly (FuseBackend.isOwnChange); a remote mount goes by the paths
 * it is changing or changed moments ago ({@link OwnChanges}). A notification that is lost leaves
 * the cache to time out as before: the worker is behind by {@link MAX_PENDING}, or, on a remote
 * mount, another face changed a path while the mount's own change to it was under way, or (a
 * directory made, which carries no etag) within {@link OWN_WINDOW_MS} of it. A delete or rename
 * is the mount's own only if the mount made that one ({@link OwnChanges.isOwnEvent}).
 * Before each write the worker checks that the descriptor still is the mount's /dev/fuse
 * connection (libfuse closes it when the mount is detached from outside).
 */
import { Worker } from 'node:worker_threads';
import type { ChangeEvent } from '../../core/events.js';
import type { Logger } from '../../core/log.js';
import { baseName, parentOf } from '../../core/paths.js';
import { invalEntryMessage, invalInodeMessage, type FuseDevice } from '../../native/fuse.js';

/** A change this mount made is its own for this long after its call settles (the remote face's events come later). */
export const OWN_WINDOW_MS = 2000;
/** Notifications queued for the worker beyond which new ones are dropped (the caches then time out). */
export const MAX_PENDING = 10_000;
/** Own-change marks kept before expired ones are swept out. */
export const OWN_SWEEP_AT = 10_000;

/** Marks of one path's recent commits by this mount, kept to tell its own write events from others'. */
const OWN_ETAGS_KEPT = 8;

/**
 * What tells one commit of a path from another: its etag and version (another face's write of the
 * same bytes, a rollback to them, has the etag but not the version). Only for a remote mount,
 * whose commits are RPC writes answered with the version they got.
 */
export function commitMark(c: { etag?: string | undefined; version?: number | undefined } | undefined): string | undefined {
  if (c?.etag === undefined) return undefined;
  return c.version === undefined ? c.etag : `${c.etag}@${c.version}`;
}

/** Keys of a deletion and a rename in {@link OwnChanges} (never a path: those start with '/'). */
const removeKey = (path: string) => `\0remove\0${path}`;
const renameKey = (from: string, to: string) => `\0rename\0${from}\0${to}`;

/**
 * The paths this mount is changing or changed within {@link OWN_WINDOW_MS}: their change events are
 * its own. Where the mount's change was a commit, a write event is its own only with the mark
 * ({@link commitMark}) that commit made: another face's write to the same path moments later, or
 * its rollback to the content the mount wrote, is not mistaken for it.
 */
export class OwnChanges {
  readonly #until = new Map<string, number>();
  readonly #etags = new Map<string, string[]>();
  readonly #now: () => number;
  /** Size at which expired marks are next swept out (doubles with what stays, so sweeps stay linear). */
  #sweepAt = OWN_SWEEP_AT;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * Mark `paths` while `work` runs and for {@link OWN_WINDOW_MS} after it settles; `etagOf` reads
   * the {@link commitMark} the work gave `paths[0]` from its result, when it committed content.
   * `removes` and `renames` name the deletions and renames the work makes: only those events are
   * its own ({@link isOwnEvent}), not another face's delete or rename of a path the mount changed
   * otherwise a moment ago (its open files must follow that one).
   */
  async during<T>(
    paths: string[], work: () => Promise<T>, etagOf?: (result: T) => string | undefined,
    moves: { removes?: string[]; renames?: [string, string][] } = {},
  ): Promise<T> {
    paths = [...paths, ...(moves.removes ?? []).map(removeKey), ...(moves.renames ?? []).map(([from, to]) => renameKey(from, to))];
    this.#mark(paths, Infinity);
    try {
      const result = await work();
      const etag = etagOf?.(result);
      if (etag !== undefined) {
        const kept = this.#etags.get(paths[0]!) ?? [];
        kept.push(etag);
        if (kept.length > OWN_ETAGS_KEPT) kept.shift();
        this.#etags.set(paths[0]!, kept);
      }
      return result;
    } finally {
      this.#mark(paths, this.#now() + OWN_WINDOW_MS);
    }
  }

  /**
   * Whether `event` is this mount's own: a delete or rename only if the mount made that very one,
   * any other change if the mount is changing its path or did within {@link OWN_WINDOW_MS} (a
   * write: with the {@link commitMark} the mount's commit made).
   */
  isOwnEvent(event: ChangeEvent): boolean {
    if (event.type === 'delete' || event.type === 'rmdir') return this.isOwn(removeKey(event.path));
    if (event.type === 'rename') return event.new_path !== undefined && this.isOwn(renameKey(event.path, event.new_path));
    return this.isOwn(event.path, event.type === 'write' ? commitMark(event) : undefined);
  }

  /** Whether a change to `path` (a write's {@link commitMark}, if it has one) is this mount's own. */
  isOwn(path: string, etag?: string): boolean {
    const until = this.#until.get(path);
    if (until === undefined) return false;
    if (until === Infinity) return true; // under way: what it commits is not known yet
    if (until < this.#now()) {
      this.#forget(path);
      return false;
    }
    const kept = this.#etags.get(path);
    return etag === undefined || kept === undefined || kept.includes(etag);
  }

  #mark(paths: string[], until: number): void {
    if (this.#until.size >= this.#sweepAt) this.#sweep();
    for (const p of paths) this.#until.set(p, until);
  }

  #forget(path: string): void {
    this.#until.delete(path);
    this.#etags.delete(path);
  }

  #sweep(): void {
    const now = this.#now();
    for (const [p, until] of this.#until) if (until < now) this.#forget(p);
    this.#sweepAt = Math.max(OWN_SWEEP_AT, this.#until.size * 2);
  }

  /** Paths marked (tests). */
  get size(): number {
    return this.#until.size;
  }
}

/** One notification: the node id of `path` is written into `message` (at the same offset for both kinds). */
export interface Notification {
  path: string;
  message: Buffer;
  /** The node id is in `message` already ({@link resolveNotifications}): no lstat. */
  resolved?: boolean;
  /**
   * Nothing to write: look `path` up through the mount (an lstat). After another face's rename, the
   * kernel dropped the old name's dentry; a lookup of the new name gives the same node its dentry
   * back under that name (d_splice_alias), so a shell whose working directory it is, and getcwd(2),
   * find it there instead of failing with ENOENT.
   */
  relook?: boolean;
}

/** Offset of the node id (fuse_notify_inval_inode_out.ino, fuse_notify_inval_entry_out.parent). */
const NODE_ID_OFFSET = 16;

/**
 * What the kernel must forget after another face's change, in the order to send it. On fuse-native
 * the node id of each path is read through the mount, which makes the kernel look up a path it does
 * not hold, so nothing is asked about a path the kernel cannot hold: a file's first version (it is new), or a
 * rename's target (its pages are the renamed file's, unchanged; a file it replaced stays as it was
 * for whoever has it open, as POSIX says).
 */
export function notificationsFor(event: ChangeEvent, byNodeTable = false): Notification[] {
  const out: Notification[] = [];
  const content = (path: string) => out.push({ path, message: invalInodeMessage(0, false) });
  const name = (path: string) => {
    if (path === '/') return;
    const parent = parentOf(path);
    out.push({ path: parent, message: invalEntryMessage(0, baseName(path)) });
    out.push({ path: parent, message: invalInodeMessage(0, true) });
  };
  // The file itself first, while its name still leads to the inode the kernel has. With the
  // binding's node table (no lookup through the mount), also a first version: the node the kernel
  // holds for that name may be a file deleted meanwhile, whose pages it would keep where size and
  // mtime match (auto_cache). (A rename's target needs nothing: the table gives the name to the
  // renamed node, FuseFileSystem's followRenames, and the node it replaced no longer has it.)
  if (event.type === 'write' && (event.version !== 1 || byNodeTable)) content(event.path);
  // A name created, removed, or now naming something else (a symlink replaced by a file).
  name(event.path);
  if (event.type === 'rename' && event.new_path !== undefined) name(event.new_path);
  return out;
}

/**
 * The notifications of `batch` with their node ids written in from the binding's node table
 * (`nodeOf`: 0 where the kernel holds nothing), those for a path the kernel holds nothing for left
 * out: there is nothing to drop, and nothing is looked up only to be forgotten.
 */
export function resolveNotifications(batch: Notification[], nodeOf: (path: string) => number): Notification[] {
  const out: Notification[] = [];
  for (const n of batch) {
    const id = nodeOf(n.path);
    if (id === 0) continue;
    n.message.writeBigUInt64LE(BigInt(id), NODE_ID_OFFSET);
    out.push({ ...n, resolved: true });
  }
  return out;
}

/** The worker (CommonJS, evaluated like the hasher's: the same from src/ under tsx and from dist/). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { lstatSync, fstatSync, writeSync } = require('node:fs');
const { dir, fd, rdev, offset } = workerData;
let gone = false;
parentPort.on('message', (batch) => {
  let error;
  for (const { path, message, resolved, relook } of batch) {
    if (gone) break;
    if (relook) {
      try { lstatSync(dir + path); } catch {}
      continue;
    }
    const msg = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
    if (!resolved) {
      let id;
      try {
        id = lstatSync(path === '/' ? dir : dir + path).ino;
      } catch {
        continue; // not there (any more): nothing of it to forget
      }
      msg.writeBigUInt64LE(BigInt(id), offset);
    }
    try {
      const st = fstatSync(fd);
      if (!st.isCharacterDevice() || st.rdev !== rdev) { gone = true; break; }
      writeSync(fd, msg);
    } catch (err) {
      // ENOENT: the kernel holds nothing for that node id.
      if (err.code === 'ENOENT') continue;
      if (err.code === 'EBADF' || err.code === 'ENODEV' || err.code === 'ENOTCONN') { gone = true; break; }
      error = String(err.message || err);
    }
  }
  parentPort.postMessage({ done: batch.length, gone, error });
});
`;

/** Sends the kernel the notifications for other faces' changes; see the module note. */
export class KernelCache {
  readonly #dir: string;
  readonly #device: FuseDevice;
  readonly #log: Logger;
  readonly #nodeOf: ((path: string) => number) | undefined;
  #worker: Worker | undefined;
  /** Notifications posted to the worker and not yet reported done. */
  #pending = 0;
  #stopped = false;
  #warned = false;

  /** `nodeOf`: the binding's node table, where it keeps one (NativeMount.nodeOf). */
  constructor(dir: string, device: FuseDevice, log: Logger, nodeOf?: (path: string) => number) {
    this.#dir = dir;
    this.#device = device;
    this.#log = log;
    this.#nodeOf = nodeOf;
  }

  /** Another face changed something: tell the kernel (in the background). */
  changed(event: ChangeEvent): void {
    const batch = this.#resolved(notificationsFor(event, this.#nodeOf !== undefined));
    // A renamed node the kernel holds (the binding's table has moved it already): its dentry, dropped
    // with the old name, is given back under the new one ({@link Notification.relook}). fuse-native's
    // lstat of the names does that already.
    if (this.#nodeOf && event.type === 'rename' && event.new_path !== undefined && this.#nodeOf(event.new_path) !== 0) {
      batch.push({ path: event.new_path, message: Buffer.alloc(0), relook: true });
    }
    this.#post(batch);
  }

  /** The kernel's cached pages (and attributes) of the file at `path` are wrong: drop them (in the background). */
  dropPages(path: string): void {
    this.#post(this.#resolved([{ path, message: invalInodeMessage(0, false) }]));
  }

  #resolved(all: Notification[]): Notification[] {
    return this.#nodeOf ? resolveNotifications(all, this.#nodeOf) : all;
  }

  #post(batch: Notification[]): void {
    if (this.#stopped || batch.length === 0) return;
    if (this.#pending + batch.length > MAX_PENDING) {
      this.#warnOnce('kernel cache notifications are behind; the caches time out instead');
      return;
    }
    const worker = this.#start();
    if (!worker) return;
    this.#pending += batch.length;
    worker.postMessage(batch);
  }

  /** Stop: what is queued is dropped, the notification being written finishes first. Call before unmounting. */
  async close(): Promise<void> {
    this.#stopped = true;
    const worker = this.#worker;
    this.#worker = undefined;
    if (worker) await worker.terminate();
  }

  #start(): Worker | undefined {
    if (this.#worker) return this.#worker;
    try {
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { dir: this.#dir, fd: this.#device.fd, rdev: this.#device.rdev, offset: NODE_ID_OFFSET },
      });
      worker.unref(); // never what keeps the process alive
      worker.on('message', (r: { done: number; gone: boolean; error?: string }) => {
        this.#pending = Math.max(0, this.#pending - r.done);
        if (r.error) this.#warnOnce(`a kernel cache notification failed: ${r.error}`);
        if (r.gone) {
          this.#log.debug({ dir: this.#dir }, 'the mount\'s FUSE connection is gone; no more kernel cache notifications');
          void this.close();
        }
      });
      worker.on('error', (err) => {
        this.#log.warn({ err, dir: this.#dir }, 'the kernel cache notifier stopped; changes from other faces show when the caches time out');
        void this.close();
      });
      worker.on('exit', () => {
        if (this.#worker !== worker) return; // closed
        this.#worker = undefined;
        this.#stopped = true;
      });
      this.#worker = worker;
      return worker;
    } catch (err) {
      this.#log.warn({ err, dir: this.#dir }, 'cannot start the kernel cache notifier; changes from other faces show when the caches time out');
      this.#stopped = true;
      return undefined;
    }
  }

  #warnOnce(message: string): void {
    if (this.#warned) return;
    this.#warned = true;
    this.#log.warn({ dir: this.#dir }, message);
  }
}
