/**
 * @module mounts/service
 * Active and saved mounts (spec §4.6, §3 "Mount"). Routing: among the mounts whose point is the
 * path or a prefix of it, the highest priority wins, then the longest prefix. The service guards
 * the fs service (read-only mounts, mount boundaries, paths escaping a local directory) and mirrors
 * committed changes into local backends before they are answered.
 */
import { randomUUID } from 'node:crypto';
import { homedir } from 'node:os';
import { isAbsolute, resolve, sep } from 'node:path';
import { mountTablePath } from '../native/fuse.js';
import { z } from 'zod';
import type { Logger } from '../core/log.js';
import type { MetadataStore, Table } from '../store/types.js';
import type { FsService, MutationKind } from '../fs/service.js';
import type { ChangeEvent } from '../core/events.js';
import { normalizePath, isWithin } from '../core/paths.js';
import { ExistsError, InvalidParamsError, NotFoundError, PermissionDeniedError, ValidationError } from '../core/errors.js';
import { LocalBackend } from './local.js';

import { BACKEND_TYPES, type BackendType } from './types.js';

export { BACKEND_TYPES, type BackendType };

/** What each backend type reports itself as (spec §2.3, WIRE.md "Mounts"). */
const REPORTED: Record<BackendType, string> = {
  local: 'LocalBackend', cas_bucket: 'ObjectStoreBackend', bucket_connector: 'BucketConnectorBackend', cloud_drive: 'CloudDriveBackend',
};

/** backend_config shapes of spec §2.4. */
const CONFIG_SCHEMAS: Record<BackendType, z.ZodType> = {
  local: z.object({ data_dir: z.string().min(1) }),
  cas_bucket: z.object({ bucket: z.string().min(1), project_id: z.string().min(1), credentials_path: z.string().optional() }),
  bucket_connector: z.object({
    bucket: z.string().min(1), project_id: z.string().min(1), prefix: z.string().optional(), credentials_path: z.string().optional(),
  }),
  cloud_drive: z.object({ access_token: z.string().min(1), refresh_token: z.string().min(1) }),
};

export interface MountSpec {
  mount_point: string;
  backend_type: BackendType;
  backend_config: Record<string, unknown>;
  priority: number;
  readonly: boolean;
}

export interface MountRecord {
  mount_point: string;
  priority: number;
  readonly: boolean;
  backend_type: string;
  data_dir?: string;
}

export interface SavedMount extends MountSpec {
  mount_id: string;
  owner_user_id: string | null;
  tenant_id: string | null;
  description: string | null;
  created_at: Date;
}

type StoredSaved = Omit<SavedMount, 'created_at'> & { created: number };

interface ActiveMount {
  spec: MountSpec;
  backend: LocalBackend;
}

export class MountService {
  readonly #fs: FsService;
  readonly #log: Logger;
  readonly #saved: Table<StoredSaved>;
  readonly #store: MetadataStore;
  readonly #active = new Map<string, ActiveMount>();
  /** Active mounts in routing order: priority descending, then longest mount point. */
  #order: ActiveMount[] = [];
  /**
   * The daemon's own FUSE mount point (`svc serve --mount`), real path: a host directory inside it
   * would have the daemon call into its own mount (synchronous calls deadlock it), and one holding
   * it would mirror the mount into itself without end.
   */
  #fuseDir: string | undefined;

  /** Refuse host directories that overlap the daemon's own FUSE mount point at `dir`. */
  async setFuseMountDir(dir: string): Promise<void> {
    this.#fuseDir = await mountTablePath(dir);
  }

  constructor(deps: { store: MetadataStore; fs: FsService; log: Logger }) {
    this.#fs = deps.fs;
    this.#log = deps.log;
    this.#store = deps.store;
    this.#saved = deps.store.table('saved_mounts');
    deps.fs.addGuard((kind, paths, subtree) => this.#guard(kind, paths, subtree));
    deps.fs.addCommitHook((events) => this.#mirror(events));
    deps.fs.addAttributeHook(async (path, entry) => {
      const m = this.route(path);
      if (m && path !== m.spec.mount_point && entry.mode !== undefined) await m.backend.applyMode(path, entry.mode);
    });
  }

  /** The mount a path is routed to, if any. */
  route(path: string): ActiveMount | undefined {
    for (const m of this.#order) if (isWithin(path, m.spec.mount_point)) return m;
    return undefined;
  }

  async add(input: { mount_point: string; backend_type: BackendType; backend_config: Record<string, unknown>; priority?: number; readonly?: boolean }): Promise<string> {
    const spec = validateSpec(input);
    if (this.#active.has(spec.mount_point)) {
      throw new ExistsError(`Mount point already in use: ${spec.mount_point}`, { path: spec.mount_point });
    }
    if (spec.backend_type !== 'local') {
      throw new ValidationError(`Backend type '${spec.backend_type}' is not available yet: only 'local' mounts can be activated`, {
        backend_type: spec.backend_type,
      });
    }
    if (this.#fuseDir !== undefined) {
      const host = await mountTablePath(spec.backend_config.data_dir as string);
      if (isWithinHost(host, this.#fuseDir) || isWithinHost(this.#fuseDir, host)) {
        throw new ValidationError(`Cannot mount ${spec.backend_config.data_dir as string}: it overlaps the daemon's own FUSE mount at ${this.#fuseDir}`, { path: spec.mount_point });
      }
    }
    const active: ActiveMount = { spec, backend: undefined as unknown as LocalBackend };
    active.backend = new LocalBackend(spec.mount_point, spec.backend_config.data_dir as string, {
      fs: this.#fs, log: this.#log.child({ mount: spec.mount_point }),
      ownership: {
        owns: (p) => this.route(p) === active,
        holdsOther: (p) => [...this.#active.values()].some((m) => m !== active && isWithin(m.spec.mount_point, p)),
      },
    });
    const backend = active.backend;
    // Reserve the point first so a concurrent add of the same point is refused.
    this.#active.set(spec.mount_point, active);
    try {
      await backend.prepare();
      // Route to it before importing: what its first sync changes below the point is its own, and
      // must not be mirrored into a mount it overlaps.
      this.#reorder();
      await backend.start();
    } catch (err) {
      this.#active.delete(spec.mount_point);
      this.#reorder();
      await backend.stop().catch(() => undefined);
      throw new ValidationError(`Cannot mount ${spec.backend_config.data_dir as string}: ${(err as Error).message}`, { path: spec.mount_point });
    }
    this.#log.info({ mount_point: spec.mount_point, data_dir: spec.backend_config.data_dir }, 'mounted');
    return spec.mount_point;
  }

  /** Deactivate a mount; the host directory and the saved configuration are untouched. */
  async remove(mountPoint: string): Promise<boolean> {
    const mp = normalizePath(mountPoint);
    const m = this.#active.get(mp);
    if (!m) return false;
    this.#active.delete(mp);
    this.#reorder();
    await m.backend.stop();
    // What the removed mount covered of an enclosing mount is that mount's again: resync it.
    for (const outer of this.#order) {
      if (isWithin(mp, outer.spec.mount_point)) await outer.backend.resync();
    }
    return true;
  }

  list(): MountRecord[] {
    return [...this.#active.values()].sort((a, b) => (a.spec.mount_point < b.spec.mount_point ? -1 : 1)).map((m) => recordOf(m.spec));
  }

  get(mountPoint: string): MountRecord | null {
    const m = this.#active.get(normalizePath(mountPoint));
    return m ? recordOf(m.spec) : null;
  }

  has(mountPoint: string): boolean {
    return this.#active.has(normalizePath(mountPoint));
  }

  async save(input: {
    mount_point: string; backend_type: BackendType; backend_config: Record<string, unknown>; priority?: number; readonly?: boolean;
    owner_user_id?: string | undefined; tenant_id?: string | undefined; description?: string | undefined;
  }): Promise<string> {
    const spec = validateSpec(input);
    const stored: StoredSaved = {
      ...spec, mount_id: randomUUID(), owner_user_id: input.owner_user_id ?? null, tenant_id: input.tenant_id ?? null,
      description: input.description ?? null, created: Date.now(),
    };
    await this.#store.transact(() => {
      if (this.#saved.get(spec.mount_point)) {
        throw new ExistsError(`Mount already exists at ${spec.mount_point}`, { path: spec.mount_point });
      }
      this.#saved.put(spec.mount_point, stored);
    });
    return stored.mount_id;
  }

  listSaved(filters: { owner_user_id?: string | undefined; tenant_id?: string | undefined } = {}): SavedMount[] {
    const out: SavedMount[] = [];
    for (const { value } of this.#saved.range({})) {
      if (filters.owner_user_id !== undefined && value.owner_user_id !== filters.owner_user_id) continue;
      if (filters.tenant_id !== undefined && value.tenant_id !== filters.tenant_id) continue;
      out.push(savedOf(value));
    }
    return out;
  }

  async load(mountPoint: string): Promise<MountRecord> {
    const mp = normalizePath(mountPoint);
    const saved = this.#saved.get(mp);
    if (!saved) throw new NotFoundError(`Mount not found in database: ${mp}`, { path: mp });
    await this.add(saved);
    return recordOf(this.#active.get(mp)!.spec);
  }

  async deleteSaved(mountPoint: string): Promise<boolean> {
    const mp = normalizePath(mountPoint);
    return this.#store.transact(() => {
      if (!this.#saved.get(mp)) return false;
      this.#saved.remove(mp);
      return true;
    });
  }

  /** Activate every saved mount (daemon start). A mount that fails is logged, not fatal. */
  async activateSaved(): Promise<void> {
    for (const { value } of [...this.#saved.range({})]) {
      if (this.#active.has(value.mount_point)) continue;
      try {
        await this.add(value);
      } catch (err) {
        this.#log.warn({ err, mount_point: value.mount_point }, 'saved mount could not be activated');
      }
    }
  }

  async close(): Promise<void> {
    const all = [...this.#active.values()];
    this.#active.clear();
    this.#order = [];
    await Promise.all(all.map((m) => m.backend.stop()));
  }

  #reorder(): void {
    this.#order = [...this.#active.values()].sort((a, b) =>
      b.spec.priority - a.spec.priority || b.spec.mount_point.length - a.spec.mount_point.length);
  }

  /**
   * Refuse what a mount does not allow; otherwise tell every backend the change reaches that it is
   * in flight, until it is settled (see LocalBackend.beginChange).
   */
  #guard(kind: MutationKind, paths: readonly string[], subtree: boolean): (() => void) | undefined {
    if (this.#active.size === 0) return undefined;
    const reached = new Set<ActiveMount>();
    for (const p of paths) {
      const m = this.route(p);
      if (m) reached.add(m);
      if (m?.spec.readonly) {
        throw new PermissionDeniedError(`Read-only mount: ${p} (mounted at ${m.spec.mount_point})`, { path: p, errno: 'EROFS' });
      }
      if (m && kind !== 'delete' && kind !== 'rmdir') m.backend.checkInside(p);
    }
    if (subtree) {
      for (const m of this.#active.values()) {
        const mp = m.spec.mount_point;
        if (!isWithin(mp, paths[0]!)) continue;
        reached.add(m);
        if (m.spec.readonly) {
          throw new PermissionDeniedError(`Read-only mount: ${mp} lies within ${paths[0]}`, { path: mp, errno: 'EROFS' });
        }
        if (kind === 'rename' || kind === 'rmdir') {
          throw new ValidationError(`${paths[0]} contains the mount point ${mp}: remove the mount first`, { path: paths[0], errno: 'EBUSY' });
        }
      }
    }
    if (kind === 'rename' && this.route(paths[0]!) !== this.route(paths[1]!)) {
      const name = (p: string) => this.route(p)?.spec.mount_point ?? 'the main store';
      throw new ValidationError(
        `Cannot rename across a mount boundary: ${paths[0]} is on ${name(paths[0]!)}, ${paths[1]} on ${name(paths[1]!)}; copy and delete instead`,
        { path: paths[1], errno: 'EXDEV' },
      );
    }
    if (reached.size === 0) return undefined;
    const ends = [...reached].map((m) => m.backend.beginChange());
    return () => { for (const end of ends) end(); };
  }

  async #mirror(events: readonly ChangeEvent[]): Promise<void> {
    if (this.#active.size === 0) return;
    for (const e of events) {
      const m = this.route(e.path);
      if (m && e.path !== m.spec.mount_point) await m.backend.apply(e);
    }
  }
}

function validateSpec(input: { mount_point: string; backend_type: BackendType; backend_config: Record<string, unknown>; priority?: number; readonly?: boolean }): MountSpec {
  const mountPoint = normalizePath(input.mount_point);
  const parsed = CONFIG_SCHEMAS[input.backend_type].safeParse(input.backend_config);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = ['backend_config', ...issue.path.map(String)].join('.');
    throw new InvalidParamsError(`Invalid params: '${param}': ${issue.message}`, { param });
  }
  const config = { ...input.backend_config };
  if (input.backend_type === 'local') {
    let dir = config.data_dir as string;
    if (dir === '~' || dir.startsWith('~/')) dir = homedir() + dir.slice(1);
    if (!isAbsolute(dir)) {
      throw new InvalidParamsError("Invalid params: 'backend_config.data_dir' must be an absolute path", { param: 'backend_config.data_dir' });
    }
    config.data_dir = resolve(dir);
  }
  return { mount_point: mountPoint, backend_type: input.backend_type, backend_config: config, priority: input.priority ?? 0, readonly: input.readonly ?? false };
}

function recordOf(spec: MountSpec): MountRecord {
  return {
    mount_point: spec.mount_point, priority: spec.priority, readonly: spec.readonly, backend_type: REPORTED[spec.backend_type],
    ...(spec.backend_type === 'local' ? { data_dir: spec.backend_config.data_dir as string } : {}),
  };
}

function savedOf(s: StoredSaved): SavedMount {
  const { created, ...rest } = s;
  return { ...rest, created_at: new Date(created) };
}

function isWithinHost(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}
