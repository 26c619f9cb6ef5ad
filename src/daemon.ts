/**
 * @module daemon
 * The composition root: builds stores, services and faces once, starts them in order and stops
 * them in reverse. `new Daemon(config)` does no I/O; `start()` is memoised; `stop()` is idempotent.
 */
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Config } from './config.js';
import { createLogger, type Logger } from './core/log.js';
import { EventBus } from './core/events.js';
import { buildTable, type MethodTable } from './core/method.js';
import { LmdbStore } from './store/lmdb/index.js';
import { FsService } from './fs/service.js';
import { fsMethods } from './fs/methods.js';
import { ParsedViews } from './views/views.js';
import { reserveVersionsDir } from './transports/fuse/versions.js';
import { posixMethods } from './fs/posix.js';
import { Uploads } from './fs/uploads.js';
import { WorkspaceService } from './workspaces/service.js';
import { workspaceMethods } from './workspaces/methods.js';
import { MountService } from './mounts/service.js';
import { mountMethods } from './mounts/methods.js';
import { Authenticator } from './auth/authenticator.js';
import { createAuthProvider } from './auth/factory.js';
import { ApiKeyStore } from './auth/keys.js';
import { LocalAuthProvider } from './auth/local.js';
import { AdminService } from './admin/service.js';
import { adminMethods } from './admin/methods.js';
import { NamespaceService } from './namespaces/service.js';
import { namespaceMethods } from './namespaces/methods.js';
import { RebacService } from './rebac/service.js';
import { rebacMethods } from './rebac/methods.js';
import { Permissions } from './auth/permissions.js';
import { Dispatcher } from './transports/rpc/dispatch.js';
import { HttpFace } from './transports/rpc/http.js';
import { FuseMount } from './transports/fuse/mount.js';
import { cacheDropper } from './native/fuse.js';
import { LocalBackend as FuseLocalBackend } from './transports/fuse/local.js';
import { FuseJournal } from './transports/fuse/journal.js';
import { VERSION } from './version.js';
import { lockDataDir } from './core/data-lock.js';

export interface Services {
  readonly store: LmdbStore;
  readonly events: EventBus;
  readonly fs: FsService;
  readonly workspaces: WorkspaceService;
  readonly mounts: MountService;
  readonly keys: ApiKeyStore;
  readonly admin: AdminService;
  readonly namespaces: NamespaceService;
  readonly rebac: RebacService;
  /** The permission check of every face (RPC here; FUSE and MCP call the same one). */
  readonly permissions: Permissions;
  /** Read-only markdown views of stored documents (`X_parsed.pdf.md`); converters load on first use. */
  readonly views: ParsedViews;
  readonly methods: MethodTable;
}

/** What buildServices needs beyond the data directory. */
export interface BuildOptions {
  /** The daemon's auth mode; key administration is live only for `database`. */
  authType?: string | undefined;
  /** Whether permissions are enforced (default true); the ReBAC and namespace methods guard themselves with it. */
  enforcePermissions?: boolean | undefined;
  /** Milliseconds since the epoch, for key and tuple expiry and token lifetimes (tests move it instead of sleeping). */
  clock?: (() => number) | undefined;
}

/** Build the services over one data directory (also used by tests and local-mode tools). */
export function buildServices(dataDir: string, log: Logger, opts: BuildOptions = {}): Services {
  // Drop-behind of what bulk writes append to the data file (where svc's native addon is built).
  const store = new LmdbStore(dataDir, { dropCached: cacheDropper() });
  const events = new EventBus((err) => log.error({ err }, 'change listener failed'));
  const fs = new FsService({ store, blobs: store.blobs, events });
  const workspaces = new WorkspaceService({ store, fs, clock: opts.clock });
  const mounts = new MountService({ store, fs, log: log.child({ component: 'mounts' }) });
  const keys = new ApiKeyStore({
    store, secretPath: join(dataDir, 'auth-secret'), onWriteError: (err) => log.error({ err }, 'auth audit write failed'), clock: opts.clock,
  });
  const admin = new AdminService({ keys, authType: opts.authType });
  const namespaces = new NamespaceService({ store });
  const rebac = new RebacService({ store, namespaces, clock: opts.clock });
  // A rename is answered only once the tuples on the moved paths have followed it.
  fs.addCommitHook((changes) => rebac.followRenames(changes));
  const enforce = { enforce: opts.enforcePermissions ?? true };
  // No-op for unauthenticated callers (no auth configured) and admins; see auth/permissions.
  const permissions = new Permissions(rebac, enforce);
  const uploads = new Uploads({ spoolDir: join(dataDir, 'spool') });
  const views = new ParsedViews(fs);
  reserveVersionsDir(fs);
  const methods = buildTable(fsMethods(fs, permissions, views), posixMethods(fs, permissions, uploads),
    workspaceMethods(workspaces, permissions, (p) => fs.exists(p)), mountMethods(mounts, permissions), adminMethods(admin),
    rebacMethods(rebac, enforce), namespaceMethods(namespaces, enforce));
  return { store, events, fs, workspaces, mounts, keys, admin, namespaces, rebac, permissions, views, methods };
}

export class Daemon {
  readonly config: Config;
  readonly log: Logger;
  #services: Services | undefined;
  #http: HttpFace | undefined;
  #fuse: FuseMount | undefined;
  #fuseJournal: FuseJournal | undefined;
  #authenticator: Authenticator | undefined;
  #address: AddressInfo | undefined;
  #starting: Promise<AddressInfo> | undefined;
  #stopping: Promise<void> | undefined;
  readonly #clock: (() => number) | undefined;
  readonly #sweepEveryMs: number;
  #sweeper: NodeJS.Timeout | undefined;
  #unlock: (() => Promise<void>) | undefined;

  /**
   * `opts.clock` replaces Date.now for expiry decisions (tests); production passes nothing.
   * `opts.sweepEveryMs` is how often registrations whose ttl has passed are dropped (default 60 s).
   */
  constructor(config: Config, log?: Logger, opts: { clock?: () => number; sweepEveryMs?: number } = {}) {
    this.config = config;
    this.log = log ?? createLogger(config.logLevel);
    this.#clock = opts.clock;
    this.#sweepEveryMs = opts.sweepEveryMs ?? 60_000;
  }

  get services(): Services {
    if (!this.#services) throw new Error('daemon not started');
    return this.#services;
  }

  get address(): AddressInfo {
    if (!this.#address) throw new Error('daemon not started');
    return this.#address;
  }

  /** Open stores and start listening; resolves with the bound address. */
  start(): Promise<AddressInfo> {
    this.#starting ??= this.#start();
    return this.#starting;
  }

  async #start(): Promise<AddressInfo> {
    const { config, log } = this;
    // Before the store and the FUSE journal are opened: a second daemon must not touch them.
    this.#unlock = await lockDataDir(config.dataDir);
    const services = buildServices(config.dataDir, log, {
      authType: config.authType, enforcePermissions: config.enforcePermissions, clock: this.#clock,
    });
    this.#services = services;
    await services.fs.upgrade();
    // Chunks stored ahead of a commit that never came (the FUSE mount writes a large file's chunks
    // as they complete): a crash or a stop left their holds; nothing else references them.
    const dropped = await services.fs.dropPendingHolds();
    if (dropped > 0) log.info({ holds: dropped }, 'dropped chunk holds of files left uncommitted');
    // Before the saved mounts: none may have its host directory in or around the FUSE mount point.
    if (config.mount) await services.mounts.setFuseMountDir(config.mount);
    await services.mounts.activateSaved();
    // Closes the in-process mount answered but had not committed when the daemon stopped (kill -9).
    this.#fuseJournal = await FuseJournal.recover({ dataDir: config.dataDir, fs: services.fs, log: log.child({ component: 'fuse' }) });
    await services.workspaces.sweepExpired();
    // An expired workspace is invisible at once; this releases what its snapshots pinned.
    this.#sweeper = setInterval(() => {
      services.workspaces.sweepExpired().catch((err: unknown) => log.error({ err }, 'workspace ttl sweep failed'));
    }, this.#sweepEveryMs).unref();
    const provider = createAuthProvider(
      config.authType, config.authType === 'simple' ? { api_key: config.apiKey } : config.authConfig,
      { store: services.keys, log: log.child({ component: 'auth' }), clock: this.#clock },
    );
    this.#authenticator = new Authenticator(provider);
    if (provider && !config.enforcePermissions) {
      log.warn('permission enforcement is off (--enforce-permissions=false): every authenticated caller may touch every file');
    }
    const dispatcher = new Dispatcher(services.methods, log.child({ component: 'rpc' }), { settle: () => services.fs.settled() });
    this.#http = new HttpFace({
      host: config.host, port: config.port, maxBody: config.maxBody, dispatcher, authenticator: this.#authenticator,
      events: services.events, log: log.child({ component: 'http' }),
      mayRead: (ctx, path) => services.permissions.can(ctx, 'read', path), clock: this.#clock,
      login: provider instanceof LocalAuthProvider ? (username, password) => provider.login(username, password) : undefined,
      status: () => ({
        version: VERSION,
        backend: { type: 'local', location: services.store.blobs.describe().location },
        metadata_store: services.store.describe(),
        fuse_mount: this.#fuse?.mounted && this.#fuse.binding ? { dir: this.#fuse.dir, binding: this.#fuse.binding } : undefined,
      }),
    });
    this.#address = await this.#http.listen();
    if (config.mount) {
      // In-process mount: the FUSE face calls the services directly, after the HTTP face is up.
      this.#fuse = new FuseMount({
        dir: config.mount, log: log.child({ component: 'fuse' }),
        backend: new FuseLocalBackend({
          fs: services.fs, events: services.events, dataDir: config.dataDir, journal: this.#fuseJournal, log: log.child({ component: 'fuse' }),
          // A storage mount's host directory is written when the change is committed: not queued.
          direct: (path) => services.mounts.route(path) !== undefined,
        }),
      });
      await this.#fuse.start();
    }
    log.info({ host: this.#address.address, port: this.#address.port, dataDir: config.dataDir, auth: this.#authenticator.enabled }, 'svc ready');
    return this.#address;
  }

  /** Stop accepting, drain in-flight requests, close the store. Safe to call twice. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    await this.#starting?.catch(() => undefined);
    clearInterval(this.#sweeper);
    await this.#http?.close();
    await this.#authenticator?.close();
    await this.#fuse?.stop();
    this.#fuseJournal?.close();
    await this.#services?.mounts.close();
    await this.#services?.views.close();
    await this.#services?.fs.close();
    await this.#services?.store.close();
    await this.#unlock?.();
    this.log.info('svc stopped');
    this.log.flush?.();
  }
}
