/**
 * @module workspaces/service
 * Workspaces and snapshots (spec §4.5, §3 "Workspace"). A snapshot is an immutable manifest of
 * the files under a workspace (relative path → content hash, size, chunks) whose chunks are pinned
 * in the fs service: no bytes are copied, so a snapshot of a large workspace is cheap, and a
 * restore writes new versions that share the same chunks.
 */
import type { MetadataStore, Table } from '../store/types.js';
import { DEFAULT_FILE_MODE, type FsService, type TreeFile } from '../fs/service.js';
import { normalizeFilePath } from '../core/paths.js';
import { ExistsError, InvalidParamsError, NotFoundError } from '../core/errors.js';
import { SEP, SEP_END } from '../fs/records.js';

export interface WorkspaceRecord {
  path: string;
  name: string | null;
  description: string | null;
  created_by: string | null;
  created_at: Date;
  tags: string[];
  metadata: Record<string, unknown>;
  session_id: string | null;
  /** The registration's lifetime in seconds, as given; null = no ttl. */
  ttl: number | null;
  /** When a registration with a ttl stops existing; null = never. */
  expires_at: Date | null;
}

interface StoredWorkspace extends Omit<WorkspaceRecord, 'created_at' | 'expires_at' | 'ttl'> {
  created: number;
  expires: number | null;
}

export interface SnapshotRecord {
  snapshot_number: number;
  workspace_path: string;
  timestamp: Date;
  description: string | null;
  tags: string[];
  created_by: string | null;
  file_count: number;
  total_size: number;
}

interface StoredSnapshot extends Omit<SnapshotRecord, 'timestamp'> {
  created: number;
}

/**
 * One file of a manifest as stored: content hash (etag), size, mode, and the chunk list only when
 * it is not just the etag (files up to one chunk are stored under their etag), which keeps a
 * 10,000-file manifest small to write and quick to decode.
 */
type StoredFile = Omit<TreeFile, 'chunks'> & { chunks?: string[] };

/**
 * A manifest: [relative path, file] pairs sorted by path. Kept apart from snapshot headers so that
 * a log never decodes them. Pairs, not an object keyed by path: a file may be named `__proto__`
 * (which the record decoder would not give back as a key), and sorted pairs diff in one merge.
 */
type Manifest = [string, StoredFile][];

const byRel = (a: [string, unknown], b: [string, unknown]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/** Manifests stored as objects keyed by path (before pairs) read as pairs. */
function pairsOf(m: Manifest | Record<string, StoredFile>): Manifest {
  return Array.isArray(m) ? m : Object.entries(m).sort(byRel);
}

function packFile(f: TreeFile): StoredFile {
  const { chunks, ...rest } = f;
  return chunks.length === 1 && chunks[0] === f.etag ? rest : f;
}

function unpackFile(s: StoredFile): TreeFile {
  return s.chunks ? (s as TreeFile) : { ...s, chunks: [s.etag] };
}

const NUMBER_DIGITS = 10;
const snapKey = (ws: string, n: number) => ws + SEP + String(n).padStart(NUMBER_DIGITS, '0');
const snapRange = (ws: string) => ({ start: ws + SEP, end: ws + SEP_END });

export interface RegisterOptions {
  name?: string | undefined;
  description?: string | undefined;
  created_by?: string | undefined;
  tags?: string[] | undefined;
  metadata?: Record<string, unknown> | undefined;
  session_id?: string | undefined;
  /** seconds */
  ttl?: number | undefined;
}

export class WorkspaceService {
  readonly #store: MetadataStore;
  readonly #fs: FsService;
  readonly #workspaces: Table<StoredWorkspace>;
  readonly #snapshots: Table<StoredSnapshot>;
  readonly #manifests: Table<Manifest | Record<string, StoredFile>>;

  /** Milliseconds since the epoch: ttl expiry and timestamps (injectable for tests). */
  readonly #clock: () => number;

  constructor(deps: { store: MetadataStore; fs: FsService; clock?: (() => number) | undefined }) {
    this.#clock = deps.clock ?? Date.now;
    this.#store = deps.store;
    this.#fs = deps.fs;
    this.#workspaces = deps.store.table('workspaces');
    this.#snapshots = deps.store.table('snapshots');
    this.#manifests = deps.store.table('snapshot_manifests');
  }

  /** Resolve the (deprecated) agent_id form: `agent_id` means `/workspace/<agent_id>`. */
  static resolvePath(workspacePath: string | undefined, agentId: string | undefined): string {
    if (workspacePath !== undefined) return normalizeFilePath(workspacePath);
    if (agentId !== undefined) return normalizeFilePath(`/workspace/${agentId}`);
    throw new InvalidParamsError("Invalid params: missing required parameter 'workspace_path'", { param: 'workspace_path' });
  }

  async register(path: string, opts: RegisterOptions = {}): Promise<WorkspaceRecord> {
    const p = normalizeFilePath(path);
    const now = this.#clock();
    const stored: StoredWorkspace = {
      path: p, name: opts.name ?? null, description: opts.description ?? null, created_by: opts.created_by ?? null,
      tags: opts.tags ?? [], metadata: opts.metadata ?? {}, session_id: opts.session_id ?? null,
      created: now, expires: opts.ttl === undefined ? null : now + opts.ttl * 1000,
    };
    const released = await this.#store.transact(() => {
      const existing = this.#workspaces.get(p);
      if (existing && !expired(existing, now)) throw new ExistsError(`Workspace already registered: ${p}`, { path: p });
      // An expired registration is gone: its snapshots go with it before the path is reused.
      const manifests = existing ? this.#dropSnapshots(p) : [];
      this.#workspaces.put(p, stored);
      return manifests;
    });
    await this.#release(released);
    return toRecord(stored);
  }

  /** Remove the registration and its snapshots; the files stay. True if something was registered. */
  async unregister(path: string): Promise<boolean> {
    const p = normalizeFilePath(path);
    const now = this.#clock();
    const { found, released } = await this.#store.transact(() => {
      const existing = this.#workspaces.get(p);
      if (!existing) return { found: false, released: [] as Manifest[] };
      const manifests = this.#dropSnapshots(p);
      this.#workspaces.remove(p);
      return { found: !expired(existing, now), released: manifests };
    });
    await this.#release(released);
    return found;
  }

  /**
   * Drop the registrations whose ttl has passed, with their snapshots, releasing the content those
   * pinned (run when the daemon starts; an expired registration is already invisible before that).
   * Returns how many were dropped.
   */
  async sweepExpired(now = this.#clock()): Promise<number> {
    const { count, released } = await this.#store.transact(() => {
      const gone = [...this.#workspaces.range({})].filter(({ value }) => expired(value, now)).map(({ key }) => key);
      const manifests: Manifest[] = [];
      for (const p of gone) {
        manifests.push(...this.#dropSnapshots(p));
        this.#workspaces.remove(p);
      }
      return { count: gone.length, released: manifests };
    });
    await this.#release(released);
    return count;
  }

  list(): WorkspaceRecord[] {
    const now = this.#clock();
    const out: WorkspaceRecord[] = [];
    for (const { value } of this.#workspaces.range({})) if (!expired(value, now)) out.push(toRecord(value));
    return out;
  }

  get(path: string): WorkspaceRecord | null {
    const rec = this.#live(normalizeFilePath(path));
    return rec ? toRecord(rec) : null;
  }

  async snapshot(path: string, opts: { description?: string | undefined; tags?: string[] | undefined; created_by?: string | undefined } = {}): Promise<SnapshotRecord> {
    const ws = this.#require(path);
    const now = this.#clock();
    // One transaction: the references the snapshot takes commit with its manifest, or not at all.
    const stored = await this.#fs.pinTree(
      ws,
      () => {
        if (!this.#live(ws, now)) throw notRegistered(ws);
      },
      (files) => {
        const manifest: Manifest = [...files].sort(byRel).map(([rel, f]) => [rel, packFile(f)]);
        let total = 0;
        for (const f of files.values()) total += f.size;
        const last = first(this.#snapshots.range({ start: snapRange(ws).end, end: snapRange(ws).start, reverse: true, limit: 1 }));
        const n = (last?.value.snapshot_number ?? 0) + 1;
        const header: StoredSnapshot = {
          snapshot_number: n, workspace_path: ws, created: now, description: opts.description ?? null, tags: opts.tags ?? [],
          created_by: opts.created_by ?? null, file_count: files.size, total_size: total,
        };
        this.#snapshots.put(snapKey(ws, n), header);
        this.#manifests.put(snapKey(ws, n), manifest);
        return header;
      },
    );
    return toSnapshot(stored);
  }

  async restore(path: string, snapshotNumber: number) {
    const ws = this.#require(path);
    const { header, manifest } = this.#snapshot(ws, snapshotNumber);
    const files = new Map<string, TreeFile>();
    for (const [rel, f] of manifest) files.set(rel, unpackFile(f));
    // An unregister racing this restore may release the snapshot's chunks: the snapshot must still
    // be there in the restore's own transaction, or the restore is -32000 like any absent snapshot.
    const { restored, deleted } = await this.#fs.restoreTree(ws, files, () => {
      if (!this.#live(ws)) throw notRegistered(ws);
      if (!this.#snapshots.get(snapKey(ws, snapshotNumber))) {
        throw new NotFoundError(`Snapshot not found: ${ws} #${snapshotNumber}`, { path: ws, snapshot_number: snapshotNumber });
      }
    });
    return {
      restored: true, files_restored: restored, files_deleted: deleted, snapshot_number: header.snapshot_number,
      timestamp: new Date(header.created),
    };
  }

  /** Snapshots of a workspace, newest first. */
  log(path: string, limit = 100): SnapshotRecord[] {
    const ws = this.#require(path);
    const range = snapRange(ws);
    const out: SnapshotRecord[] = [];
    for (const { value } of this.#snapshots.range({ start: range.end, end: range.start, reverse: true, limit })) {
      out.push(toSnapshot(value));
    }
    return out;
  }

  diff(path: string, a: number, b: number) {
    const ws = this.#require(path);
    const m1 = this.#snapshot(ws, a).manifest;
    const m2 = this.#snapshot(ws, b).manifest;
    const abs = (rel: string) => ws + '/' + rel;
    const added: string[] = [];
    const modified: string[] = [];
    const deleted: string[] = [];
    // Both are sorted by path: one merge walk.
    let i = 0;
    let k = 0;
    while (i < m1.length || k < m2.length) {
      const before = m1[i];
      const after = m2[k];
      if (!after || (before && before[0] < after[0])) {
        deleted.push(abs(before![0]));
        i++;
      } else if (!before || after[0] < before[0]) {
        added.push(abs(after[0]));
        k++;
      } else {
        const [x, y] = [before[1], after[1]];
        if (x.etag !== y.etag || modeOf(x) !== modeOf(y) || !x.symlink !== !y.symlink) modified.push(abs(after[0]));
        i++;
        k++;
      }
    }
    added.sort();
    modified.sort();
    deleted.sort();
    return {
      added, modified, deleted,
      summary: { added_count: added.length, modified_count: modified.length, deleted_count: deleted.length },
    };
  }

  #live(path: string, now = this.#clock()): StoredWorkspace | undefined {
    const rec = this.#workspaces.get(path);
    return rec && !expired(rec, now) ? rec : undefined;
  }

  #require(path: string): string {
    const p = normalizeFilePath(path);
    if (!this.#live(p)) throw notRegistered(p);
    return p;
  }

  #snapshot(ws: string, n: number): { header: StoredSnapshot; manifest: Manifest } {
    const header = this.#snapshots.get(snapKey(ws, n));
    const manifest = this.#manifests.get(snapKey(ws, n));
    if (!header || !manifest) throw new NotFoundError(`Snapshot not found: ${ws} #${n}`, { path: ws, snapshot_number: n });
    return { header, manifest: pairsOf(manifest) };
  }

  /** Inside a transaction: delete every snapshot of `ws`; returns their manifests to unpin. */
  #dropSnapshots(ws: string): Manifest[] {
    const manifests: Manifest[] = [];
    for (const { key, value } of [...this.#manifests.range(snapRange(ws))]) {
      manifests.push(pairsOf(value));
      this.#manifests.remove(key);
      this.#snapshots.remove(key);
    }
    return manifests;
  }

  async #release(manifests: Manifest[]): Promise<void> {
    if (manifests.length) await this.#fs.unpinTree(manifests.flatMap((m) => m.map(([, f]) => unpackFile(f))));
  }
}

/** A manifest entry's mode (entries recorded before modes were kept count as the default). */
const modeOf = (f: StoredFile) => (f.mode as number | undefined) ?? DEFAULT_FILE_MODE;

function expired(rec: StoredWorkspace, now: number): boolean {
  return rec.expires !== null && rec.expires <= now;
}

function notRegistered(path: string) {
  return new NotFoundError(`Workspace not registered: ${path}`, { path });
}

function toRecord(s: StoredWorkspace): WorkspaceRecord {
  const { created, expires, ...rest } = s;
  return {
    ...rest, created_at: new Date(created), ttl: expires === null ? null : (expires - created) / 1000,
    expires_at: expires === null ? null : new Date(expires),
  };
}

function toSnapshot(s: StoredSnapshot): SnapshotRecord {
  const { created, ...rest } = s;
  return { ...rest, timestamp: new Date(created) };
}

function first<T>(it: Iterable<T>): T | undefined {
  for (const x of it) return x;
  return undefined;
}
