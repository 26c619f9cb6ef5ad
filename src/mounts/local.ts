/**
 * @module mounts/local
 * The `local` mount backend: a mount point mirrored onto a host directory of plain files.
 *
 * The fs service stays the one write path and the version store: changes made through svc are
 * written to the host directory before they are answered (temp file + rename, so another program
 * never sees half a file), and changes other programs make there are imported through the fs
 * service as new versions within a second (chokidar). Symlinks stay symlinks both ways (never
 * followed). The host directory is the truth when a mount is activated: svc's view of the mount
 * point is made equal to it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, realpathSync, type Stats } from 'node:fs';
import { chmod, lstat, mkdir, stat, open, readFile, readdir, readlink, realpath, rename, rm, symlink, unlink } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import chokidar, { type FSWatcher } from 'chokidar';
import type { Logger } from '../core/log.js';
import type { ChangeEvent } from '../core/events.js';
import { NotFoundError, PermissionDeniedError, SvcError } from '../core/errors.js';
import { isWithin, relativeTo } from '../core/paths.js';
import type { FsService } from '../fs/service.js';

const TEMP_PREFIX = '.svc-tmp-';
/** How often the host directory itself is looked at (removed and made again: {@link LocalBackend}'s checkRoot). */
const ROOT_POLL_MS = 250;

async function hashFile(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** What {@link LocalBackend}'s record of the disk holds for a path: the etag, marked for a symlink. */
const onDiskKey = (etag: string, symlink: boolean | undefined): string => (symlink ? `symlink:${etag}` : etag);

/** A host symlink as svc stores one: its target's text is the content (never followed). */
async function readLink(host: string): Promise<{ content: Buffer; etag: string }> {
  const content = Buffer.from(await readlink(host), 'utf8');
  return { content, etag: createHash('sha256').update(content).digest('hex') };
}

/** Which svc paths a backend answers for, given the other active mounts (routing, spec §4.6). */
export interface Ownership {
  /** `path` routes to this backend (no mount of higher precedence claims it). */
  owns(path: string): boolean;
  /** Another active mount point lies at or below `path` (its content is not this backend's). */
  holdsOther(path: string): boolean;
}

export class LocalBackend {
  readonly #fs: FsService;
  readonly #log: Logger;
  readonly #own: Ownership;
  /**
   * Client changes to this mount in flight (from the guard until committed and mirrored, see
   * {@link beginChange}), mirrorings in progress, and a count of both started: an outside change
   * is imported only if no svc change to the directory was in flight or started while it was being
   * looked at, so a late watcher event never brings back what svc has just removed (or undoes what
   * it wrote).
   */
  readonly #mirroring = new Set<Promise<void>>();
  #pending = 0;
  #waiters: (() => void)[] = [];
  #generation = 0;
  /**
   * What is on disk ({@link onDiskKey}: etag, and whether a symlink), by path relative to the root:
   * lets both directions skip their own echo.
   */
  readonly #onDisk = new Map<string, string>();
  #root = '';
  #watcher: FSWatcher | undefined;
  /** Looks at the host directory itself ({@link #checkRoot}), and the one being watched ({@link dirIdentity}). */
  #rootPoll: NodeJS.Timeout | undefined;
  #rootId: string | undefined;
  /** The host directory was found missing since it was last watched: when it is there again, it is another one. */
  #rootGone = false;
  #rechecking = false;
  #queue: Promise<void> = Promise.resolve();

  /** How a watcher event looks at the disk (injectable, so tests can hold it mid-look). */
  readonly #probe: (host: string) => Promise<Stats | undefined>;

  constructor(
    readonly mountPoint: string, readonly dataDir: string,
    deps: { fs: FsService; log: Logger; ownership: Ownership; probe?: ((host: string) => Promise<Stats | undefined>) | undefined },
  ) {
    this.#fs = deps.fs;
    this.#log = deps.log;
    this.#own = deps.ownership;
    this.#probe = deps.probe ?? ((host) => lstat(host).catch(() => undefined));
  }

  /** Create the directory if needed and resolve it; after this, svc changes can be mirrored into it. */
  async prepare(): Promise<void> {
    await mkdir(this.dataDir, { recursive: true });
    this.#root = await realpath(this.dataDir);
  }

  /** Make svc's view equal to the directory, and start watching it ({@link prepare} first). */
  async start(): Promise<void> {
    await this.#fs.mkdir(this.mountPoint, { parents: true, fromBackend: true });
    await this.#initialSync();
    await this.#watch();
    this.#rootPoll = setInterval(() => void this.#checkRoot(), ROOT_POLL_MS);
    this.#rootPoll.unref();
  }

  async #watch(): Promise<void> {
    this.#rootId = await stat(this.#root).then(dirIdentity, () => undefined);
    const watcher = chokidar.watch(this.#root, {
      ignoreInitial: true,
      followSymlinks: false,
      awaitWriteFinish: { stabilityThreshold: 120, pollInterval: 40 },
      ignored: (p: string) => p.split(sep).pop()!.startsWith(TEMP_PREFIX),
    });
    watcher.on('all', (event, path) => this.#enqueue(() => this.#onHostChange(event, path)));
    watcher.on('error', (err) => this.#log.warn({ err, mount: this.mountPoint }, 'watcher error'));
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    this.#watcher = watcher;
  }

  /**
   * The host directory itself removed and made again (`rm -rf out && mkdir out` on the host): the
   * watcher stays with the removed directory, so nothing made in the new one was imported until
   * the mount was activated again. Every {@link ROOT_POLL_MS} the directory is looked at; once it
   * is another one than the watcher's (found missing in between, or with another identity: made
   * again within one look), svc's view is made equal to it and it is watched instead.
   */
  async #checkRoot(): Promise<void> {
    if (this.#rechecking || !this.#watcher) return;
    this.#rechecking = true;
    try {
      const now = await stat(this.dataDir).catch(() => undefined);
      if (!now?.isDirectory()) {
        this.#rootGone = true;
        return;
      }
      // Seen gone since: another directory, whatever its identity (a new one may reuse the inode).
      if (!this.#rootGone && dirIdentity(now) === this.#rootId) return;
      this.#rootGone = false;
      const old = this.#watcher;
      this.#watcher = undefined;
      await old.close();
      if (!this.#rootPoll) return; // stopped meanwhile
      this.#root = await realpath(this.dataDir);
      await this.#watch();
      if (!this.#rootPoll) return void (await (this.#watcher as FSWatcher | undefined)?.close()); // stopped meanwhile
      this.#enqueue(() => this.#initialSync());
      await this.#queue;
    } catch (err) {
      this.#log.warn({ err, mount: this.mountPoint }, 'could not watch the host directory again');
    } finally {
      this.#rechecking = false;
    }
  }

  async stop(): Promise<void> {
    if (this.#rootPoll) clearInterval(this.#rootPoll);
    this.#rootPoll = undefined;
    await this.#watcher?.close();
    this.#watcher = undefined;
    await this.#queue;
  }

  /**
   * Make svc's view of what this backend owns equal to the directory again (after a mount that
   * covered part of it is removed), in turn with the watcher's imports.
   */
  resync(): Promise<void> {
    this.#enqueue(() => this.#initialSync());
    return this.#queue;
  }

  /**
   * Refuse a path whose host location would leave the directory, e.g. through a symlink that
   * points outside. Synchronous: called by the mount guard before the change is committed.
   * The last name itself is not followed: a change replaces or removes it (rename over it,
   * unlink), so a symlink there, wherever it points, is only ever changed as a link.
   */
  checkInside(svcPath: string): void {
    let host = this.#hostPath(svcPath);
    if (host !== this.#root) host = dirname(host);
    // The nearest existing ancestor decides where a new file would really land.
    for (;;) {
      // Past the host directory itself: it is gone (removed on the host), which is no way out.
      if (host !== this.#root && !host.startsWith(this.#root + sep)) {
        throw new NotFoundError(`The host directory of ${this.mountPoint} is missing: ${this.#root}`, { path: svcPath });
      }
      try {
        const real = realpathSync(host);
        if (real !== this.#root && !real.startsWith(this.#root + sep)) {
          throw new PermissionDeniedError(`Path escapes the mount directory of ${this.mountPoint}: ${svcPath}`, { path: svcPath });
        }
        return;
      } catch (err) {
        if (err instanceof SvcError) throw err;
        const parent = dirname(host);
        if (parent === host) return;
        host = parent;
      }
    }
  }

  /**
   * A client change that reaches this mount is about to be made (called by the mount guard,
   * before the change's transaction); the function returned is called once it is settled.
   */
  beginChange(): () => void {
    this.#generation++;
    this.#pending++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#generation++;
      if (--this.#pending === 0) {
        const waiters = this.#waiters;
        this.#waiters = [];
        for (const wake of waiters) wake();
      }
    };
  }

  /** Until no client change is in flight and nothing is being mirrored. */
  async #quiet(): Promise<void> {
    for (;;) {
      if (this.#pending) await new Promise<void>((resolve) => this.#waiters.push(resolve));
      else if (this.#mirroring.size) await Promise.allSettled([...this.#mirroring]);
      else return;
    }
  }

  /** Mirror committed svc changes (already routed to this mount) into the host directory. */
  async apply(event: ChangeEvent): Promise<void> {
    this.#generation++;
    const done = this.#applyNow(event);
    this.#mirroring.add(done);
    try {
      await done;
    } finally {
      this.#mirroring.delete(done);
    }
  }

  /**
   * A client changed the mode of `svcPath` (set_attributes, chmod in a mount): the host file or
   * directory gets it too (not a symlink, whose mode means nothing), so a script made executable
   * through svc runs on the host. The host's watcher sees no content change in it.
   */
  async applyMode(svcPath: string, mode: number): Promise<void> {
    const host = this.#hostPath(svcPath);
    const now = await lstat(host).catch(() => undefined);
    if (!now || now.isSymbolicLink() || (now.mode & 0o7777) === (mode & 0o7777)) return;
    await chmod(host, mode & 0o7777).catch(ignoreMissing);
  }

  async #applyNow(event: ChangeEvent): Promise<void> {
    const rel = this.#rel(event.path);
    const host = this.#hostPath(event.path);
    switch (event.type) {
      case 'write': {
        const rec = this.#fs.stat(event.path);
        if (this.#onDisk.get(rel) === onDiskKey(event.etag!, rec?.kind === 'file' && rec.symlink)) return;
        this.#onDisk.set(rel, await this.#writeHost(event.path, host));
        return;
      }
      case 'delete':
        this.#onDisk.delete(rel);
        // Not a directory the host has there now: a host file replaced by a directory is imported
        // as the file's delete, and that delete must not touch the directory.
        if ((await lstat(host).catch(() => undefined))?.isDirectory()) return;
        await unlink(host).catch(ignoreMissingOrNotDir);
        return;
      case 'mkdir':
        await mkdir(host, { recursive: true });
        return;
      case 'rmdir': {
        this.#forget(rel);
        // Only a directory: a host directory replaced by a file is imported as the directory's
        // removal, which must not remove the file the host has there now.
        const now = await lstat(host).catch(() => undefined);
        if (!now?.isDirectory()) return;
        await rm(host, { recursive: true, force: true });
        return;
      }
      case 'rename': {
        const toRel = this.#rel(event.new_path!);
        const to = this.#hostPath(event.new_path!);
        await mkdir(dirname(to), { recursive: true });
        await rename(host, to).catch(ignoreMissing);
        for (const [k, onDisk] of [...this.#onDisk]) {
          if (k === rel || k.startsWith(rel + '/')) {
            this.#onDisk.delete(k);
            this.#onDisk.set(toRel + k.slice(rel.length), onDisk);
          }
        }
        return;
      }
    }
  }

  #rel(svcPath: string): string {
    return relativeTo(svcPath, this.mountPoint);
  }

  #hostPath(svcPath: string): string {
    const rel = this.#rel(svcPath);
    return rel === '' ? this.#root : join(this.#root, ...rel.split('/'));
  }

  #svcPath(host: string): string | undefined {
    const rel = relative(this.#root, host);
    if (rel.startsWith('..')) return undefined;
    const parts = rel.split(sep).filter(Boolean);
    const base = this.mountPoint === '/' ? '' : this.mountPoint;
    return parts.length ? base + '/' + parts.join('/') : this.mountPoint;
  }

  #forget(rel: string): void {
    for (const k of [...this.#onDisk.keys()]) if (rel === '' || k === rel || k.startsWith(rel + '/')) this.#onDisk.delete(k);
  }

  /**
   * Stream a file's content from svc to a temp file beside the target, then rename it into place;
   * a symlink becomes a host symlink the same way. Returns what is on disk now ({@link onDiskKey}).
   */
  async #writeHost(svcPath: string, host: string): Promise<string> {
    const rec = this.#fs.file(svcPath);
    await mkdir(dirname(host), { recursive: true });
    const tmp = join(dirname(host), TEMP_PREFIX + randomBytes(6).toString('hex'));
    try {
      if (rec.symlink) {
        await symlink(this.#fs.content(rec).toString('utf8'), tmp);
      } else {
        // The mode svc holds; for a file svc never gave one (an RPC write), the host file's, so
        // an edit through svc does not make a host script lose its executable bit.
        const mode = rec.mode ?? (await lstat(host).then((st) => (st.isFile() ? st.mode & 0o7777 : undefined), () => undefined)) ?? 0o644;
        const fh = await open(tmp, 'w', mode);
        try {
          await fh.chmod(mode); // past the umask
          for (const chunk of this.#fs.chunks(rec)) await fh.write(chunk);
          await fh.sync();
        } finally {
          await fh.close();
        }
      }
      await rename(tmp, host);
    } catch (err) {
      // A full disk, most likely: the part written must not stay behind, taking the space.
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    return onDiskKey(rec.etag, rec.symlink);
  }

  /**
   * The host has a directory (`dir`) or a file at `svcPath` where svc holds the other kind (the
   * host replaced one by the other while the daemon was down, or faster than the watcher's
   * unlink could tell): svc's entry goes first, so the host's can be imported. The removal's
   * mirror leaves the host's new entry alone (it removes only its own kind). False when another
   * mount lies below svc's directory (that mount's content is not this one's to remove).
   */
  async #clearOtherKind(svcPath: string, dir: boolean): Promise<boolean> {
    const current = this.#fs.stat(svcPath);
    if (!current || (current.kind === 'dir') === dir) return true;
    if (current.kind === 'dir') {
      if (this.#own.holdsOther(svcPath)) return false;
      this.#forget(this.#rel(svcPath));
      await this.#fs.rmdir(svcPath, { recursive: true, fromBackend: true });
    } else {
      this.#onDisk.delete(this.#rel(svcPath));
      await this.#fs.delete(svcPath, { fromBackend: true });
    }
    return true;
  }

  /** Import a host file, or a host symlink as a symlink (its target is never followed). */
  async #import(svcPath: string, host: string, isLink: boolean): Promise<void> {
    const link = isLink ? await readLink(host) : undefined;
    const etag = link?.etag ?? (await hashFile(host));
    const mode = isLink ? undefined : (await lstat(host)).mode & 0o7777;
    if (!(await this.#clearOtherKind(svcPath, false))) return;
    this.#onDisk.set(this.#rel(svcPath), onDiskKey(etag, isLink));
    if (this.#holds(svcPath, etag, isLink)) return await this.#importMode(svcPath, mode);
    await this.#fs.write(svcPath, link?.content ?? (await readFile(host)), {
      force: true, fromBackend: true, symlink: isLink, attributes: mode === undefined ? undefined : { mode },
    });
  }

  /** The host file's mode, where svc holds another for the same content. */
  async #importMode(svcPath: string, mode: number | undefined): Promise<void> {
    if (mode === undefined) return;
    const current = this.#fs.stat(svcPath);
    if (current?.kind === 'file' && (current.mode ?? 0o644) !== mode) {
      await this.#fs.setAttributes(svcPath, { mode }, { fromBackend: true });
    }
  }

  /** svc already holds this content at `svcPath`, as a symlink or not as the host has it. */
  #holds(svcPath: string, etag: string, isLink: boolean): boolean {
    const current = this.#fs.stat(svcPath);
    return current?.kind === 'file' && current.etag === etag && !current.symlink === !isLink;
  }

  /**
   * Import what the host directory `dir` holds, everything below it included; the svc paths seen
   * are added to `seen`.
   */
  async #importTree(dir: string, seen: Set<string>): Promise<void> {
    for (const ent of await readdir(dir, { withFileTypes: true })) {
      if (ent.name.startsWith(TEMP_PREFIX)) continue;
      const host = join(dir, ent.name);
      const svcPath = this.#svcPath(host);
      // A path another mount takes precedence for is that mount's, with everything below it.
      if (!svcPath || !this.#own.owns(svcPath)) continue;
      try {
        if (ent.isDirectory()) {
          seen.add(svcPath);
          if (!(await this.#clearOtherKind(svcPath, true))) continue;
          await this.#fs.mkdir(svcPath, { parents: true, fromBackend: true });
          await this.#importTree(host, seen);
        } else if (ent.isFile() || ent.isSymbolicLink()) {
          seen.add(svcPath);
          await this.#import(svcPath, host, ent.isSymbolicLink());
        }
      } catch (err) {
        this.#log.warn({ err, mount: this.mountPoint, path: host }, 'could not import');
      }
    }
  }

  /**
   * A host file replaced by a directory, which the watcher reports as a change of the file and
   * nothing more (chokidar 4): it goes on watching the path as a file, so neither what the
   * directory already holds nor what is made in it later would reach svc. svc's file goes, the
   * path is watched again (as the directory it is now), and the directory's tree is imported.
   */
  async #fileBecameDir(svcPath: string, host: string): Promise<void> {
    if (!(await this.#clearOtherKind(svcPath, true))) return;
    await this.#fs.mkdir(svcPath, { parents: true, fromBackend: true });
    this.#watcher?.unwatch(host);
    this.#watcher?.add(host);
    await this.#importTree(host, new Set());
  }

  async #initialSync(): Promise<void> {
    const seen = new Set<string>();
    await this.#importTree(this.#root, seen);
    // Whatever svc holds under the mount point that the directory does not is gone.
    const pathOf = (e: { path: string; is_directory: boolean }) => (e.is_directory ? e.path.slice(0, -1) : e.path);
    const stale = this.#fs.list(this.mountPoint, { recursive: true })
      .filter((e) => !seen.has(pathOf(e)) && this.#own.owns(pathOf(e)) && !this.#own.holdsOther(pathOf(e)))
      .sort((a, b) => b.path.length - a.path.length);
    for (const e of stale) {
      const p = e.is_directory ? e.path.slice(0, -1) : e.path;
      if (!this.#fs.stat(p)) continue;
      if (e.is_directory) await this.#fs.rmdir(p, { recursive: true, fromBackend: true });
      else await this.#fs.delete(p, { fromBackend: true });
    }
  }

  #enqueue(job: () => Promise<void>): void {
    this.#queue = this.#queue.then(job).catch((err) => this.#log.warn({ err, mount: this.mountPoint }, 'could not import a change'));
  }

  async #onHostChange(event: string, host: string): Promise<void> {
    const svcPath = this.#svcPath(host);
    if (!svcPath || svcPath === this.mountPoint || !isWithin(svcPath, this.mountPoint)) return;
    if (!this.#own.owns(svcPath)) return;
    // Look at the disk while no svc change is being mirrored into it; if one started meanwhile,
    // look again once it is done: what the disk held then may be what svc has just replaced.
    for (let attempt = 0; attempt < 20; attempt++) {
      await this.#quiet();
      const generation = this.#generation;
      const action = await this.#decide(event, host, svcPath);
      if (this.#generation !== generation || this.#pending || this.#mirroring.size) continue;
      if (action) await action();
      return;
    }
    this.#log.warn({ mount: this.mountPoint, path: host }, 'outside change not imported: svc kept changing the same directory');
  }

  /**
   * What an outside change asks svc to do, decided from what the disk holds now (events arrive
   * late: write-finish stabilisation), returned as an action to run at once, with svc's state
   * compared synchronously inside it.
   */
  async #decide(event: string, host: string, svcPath: string): Promise<(() => Promise<void>) | undefined> {
    const now = await this.#probe(host);
    const rel = this.#rel(svcPath);
    switch (event) {
      case 'add':
      case 'change': {
        if (now?.isDirectory()) return () => this.#fileBecameDir(svcPath, host);
        const isLink = now?.isSymbolicLink() === true;
        if (!now || (!isLink && !now.isFile())) return undefined;
        let link: { content: Buffer; etag: string } | undefined;
        let content: Buffer;
        try {
          link = isLink ? await readLink(host) : undefined;
          content = link?.content ?? (await readFile(host));
        } catch (err) {
          // Gone, or replaced by a directory, since: that change has its own event.
          if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EISDIR') return undefined;
          throw err;
        }
        const etag = link?.etag ?? createHash('sha256').update(content).digest('hex');
        const mode = isLink ? undefined : now.mode & 0o7777;
        return async () => {
          this.#onDisk.set(rel, onDiskKey(etag, isLink));
          if (this.#holds(svcPath, etag, isLink)) return await this.#importMode(svcPath, mode);
          // A directory replaced by a file on the host, whose unlinkDir came late.
          if (!(await this.#clearOtherKind(svcPath, false))) return;
          this.#onDisk.set(rel, onDiskKey(etag, isLink));
          await this.#fs.write(svcPath, content, {
            force: true, fromBackend: true, symlink: isLink, attributes: mode === undefined ? undefined : { mode },
          });
        };
      }
      case 'unlink':
        // Gone, or a directory now (`rm f && mkdir f`): svc's file goes either way.
        if (now && !now.isDirectory()) return undefined;
        return async () => {
          this.#onDisk.delete(rel);
          if (this.#fs.stat(svcPath)?.kind === 'file') await this.#fs.delete(svcPath, { fromBackend: true });
        };
      case 'addDir':
        if (!now?.isDirectory()) return undefined;
        return async () => {
          // A file replaced by a directory on the host, whose unlink came late.
          if (!(await this.#clearOtherKind(svcPath, true))) return;
          if (this.#fs.stat(svcPath)?.kind !== 'dir') await this.#fs.mkdir(svcPath, { parents: true, fromBackend: true });
        };
      case 'unlinkDir':
        // Gone, or a file or link now (`rm -r d && echo > d`): svc's directory goes either way.
        if (now?.isDirectory()) return undefined;
        return async () => {
          this.#forget(rel);
          if (this.#fs.stat(svcPath)?.kind === 'dir' && !this.#own.holdsOther(svcPath)) {
            await this.#fs.rmdir(svcPath, { recursive: true, fromBackend: true });
          }
        };
      default:
        return undefined;
    }
  }
}

/**
 * Which directory a path names: device, inode and birth time. ext4 gives a directory made right
 * after one was removed the freed inode number again (`rm -rf out && mkdir out`): the birth time
 * tells them apart, where the file system keeps one (0 elsewhere).
 */
function dirIdentity(st: Stats): string {
  return `${st.dev}:${st.ino}:${st.birthtimeMs}`;
}

/** Also a path below what is a file on the host now (svc's stale tree under a directory the host replaced). */
function ignoreMissingOrNotDir(err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOTDIR') ignoreMissing(err);
}

function ignoreMissing(err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOENT') throw err;
}
