/**
 * @module daemon
 * The composition root: builds stores, services and faces once, starts them in order and stops
 * them in reverse. `new Daemon(config)` does no I/O; `start()` is memoised; `stop()` is idempotent.
 */
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import { createLogger, type Logger } from './core/log.js';
import { EventBus } from './core/events.js';
import { buildTable, type MethodTable } from './core/method.js';
import { LmdbStore } from './store/lmdb/index.js';
import { FsService } from './fs/service.js';
import { fsMethods } from './fs/methods.js';
import { WorkspaceService } from './workspaces/service.js';
import { workspaceMethods } from './workspaces/methods.js';
import { MountService } from './mounts/service.js';
import { mountMethods } from './mounts/methods.js';
import { Authenticator } from './auth/authenticator.js';
import { SimpleKeyProvider } from './auth/simple.js';
import { Dispatcher } from './transports/rpc/dispatch.js';
import { HttpFace } from './transports/rpc/http.js';
import { VERSION } from './version.js';

export interface Services {
  readonly store: LmdbStore;
  readonly events: EventBus;
  readonly fs: FsService;
  readonly workspaces: WorkspaceService;
  readonly mounts: MountService;
  readonly methods: MethodTable;
}

/** Build the services over one data directory (also used by tests and local-mode tools). */
export function buildServices(dataDir: string, log: Logger): Services {
  const store = new LmdbStore(dataDir);
  const events = new EventBus((err) => log.error({ err }, 'change listener failed'));
  const fs = new FsService({ store, blobs: store.blobs, events });
  const workspaces = new WorkspaceService({ store, fs });
  const mounts = new MountService({ store, fs, log: log.child({ component: 'mounts' }) });
  const methods = buildTable(fsMethods(fs), workspaceMethods(workspaces), mountMethods(mounts));
  return { store, events, fs, workspaces, mounts, methods };
}

export class Daemon {
  readonly config: Config;
  readonly log: Logger;
  #services: Services | undefined;
  #http: HttpFace | undefined;
  #authenticator: Authenticator | undefined;
  #address: AddressInfo | undefined;
  #starting: Promise<AddressInfo> | undefined;
  #stopping: Promise<void> | undefined;

  constructor(config: Config, log?: Logger) {
    this.config = config;
    this.log = log ?? createLogger(config.logLevel);
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
    const services = buildServices(config.dataDir, log);
    this.#services = services;
    await services.mounts.activateSaved();
    this.#authenticator = new Authenticator(config.apiKey ? new SimpleKeyProvider(config.apiKey) : undefined);
    const dispatcher = new Dispatcher(services.methods, log.child({ component: 'rpc' }));
    this.#http = new HttpFace({
      host: config.host, port: config.port, maxBody: config.maxBody, dispatcher, authenticator: this.#authenticator,
      events: services.events, log: log.child({ component: 'http' }),
      status: () => ({
        version: VERSION,
        backend: { type: 'local', location: services.store.blobs.describe().location },
        metadata_store: services.store.describe(),
      }),
    });
    this.#address = await this.#http.listen();
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
    await this.#http?.close();
    await this.#authenticator?.close();
    await this.#services?.mounts.close();
    await this.#services?.store.close();
    this.log.info('svc stopped');
    this.log.flush?.();
  }
}
