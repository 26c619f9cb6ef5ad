/**
 * @module fs/service
 * The one write path of the file tree (spec §4.3, §4.4, §4.12). Every face — RPC, WebSocket,
 * FUSE, MCP, workspace restore, rollback — goes through this service, so versions, chunk
 * references and change events are the same whoever writes.
 *
 * Invariants:
 * - a file's entry holds its current version; the versions table holds the versions it
 *   superseded. Entries and version rows own one chunk reference each per chunk they list;
 * - a chunk's reference count is its `refs` row, or 1 when it has none: most chunks have one
 *   user, and not writing a row for them keeps a new file's commit to two rows (entry, chunk);
 * - a file of at most {@link INLINE_MAX_BYTES} (ASCII; other bytes as base64 within that many
 *   characters) written with its bytes at hand keeps them in its entry (`inline`/`inline64`, no
 *   chunks): its commit is one row, not two. Chunk rows are keyed by hash, so
 *   every new one lands on its own leaf page of the B-tree; small files made about two thirds of
 *   a commit's page writes that way. Inline content has no references: a version row takes a
 *   copy, rollback and rename carry it along, and a snapshot that pins it stores it as a chunk
 *   first (snapshots share content by chunk references);
 * - a pending hold ({@link FsService.holdChunks}: a chunk stored while its file is still being
 *   written, before the commit that will list it) is one reference too, counted in the chunk's
 *   `pending_chunks` row (hash → holds). A commit takes a hold over as its entry's reference; a
 *   hold given up, or left by a crash ({@link FsService.dropPendingHolds} at start-up), is one
 *   reference fewer, so a chunk stored early never outlives the file it was written for. A file
 *   removed while the daemon's mount has it open leaves pending holds too, on the chunks the open
 *   file still reads ({@link ContentKeeper}), given up at its last close;
 * - a directory exists as an entry before anything is stored below it (writes create parents);
 *   a name made, removed or renamed in it moves its mtime and ctime (the root's: in `fs_meta`);
 * - a transaction callback does all its checks before its first write, so a refused request
 *   leaves no trace (the store also rolls back a callback that throws: LmdbStore's child transactions).
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type MimeTypes from 'mime-types';
import picomatch from 'picomatch';
import { createTwoFilesPatch } from 'diff';
import { EtagAndChunks } from '../native/sha256.js';
import type { BlobStore, MetadataStore, Table } from '../store/types.js';
import type { EventBus, ChangeEvent } from '../core/events.js';
import {
  normalizePath, normalizeFilePath, parentOf, ancestorsOf, baseName, isWithin, relativeTo, MAX_PATH_BYTES,
} from '../core/paths.js';
import {
  ConflictError, ExistsError, InvalidPathError, NotFoundError, ValidationError,
} from '../core/errors.js';
import {
  type DirRecord, type EntryAttributes, type EntryRecord, type FileRecord, type VersionRecord,
  entryKey, keyPath, childrenRange, subtreeRanges, versionKey, versionsRange, currentVersion,
  encodeInline, hasInline, inlineFields, inlineOf, changedField,
} from './records.js';
import { Grepper, type GrepFile, type GrepMatch, type GrepperOptions } from './grep.js';

export type { GrepMatch } from './grep.js';

/** What holds a file's or version's content: its chunk hashes, or the content itself. */
type ContentRecord = Pick<FileRecord, 'chunks' | 'inline' | 'inline64'>;

/**
 * Files up to this size keep their content in their entry row (see the module note). Below half
 * an LMDB page (4 KiB) with room for the key and the other fields, so an entry never needs an
 * overflow page.
 */
export const INLINE_MAX_BYTES = 1536;

/** Content is split into chunks of this size; each is stored once, keyed by its SHA-256. */
export const CHUNK_SIZE = 1024 * 1024;

/**
 * grep holds at most one line plus one chunk in memory: a longer line is searched in its first
 * this many characters, and that is the `content` of a match on it.
 */
export const GREP_MAX_LINE = 4 * CHUNK_SIZE;

/** Kinds of change a {@link MutationGuard} is asked about. */
export type MutationKind = 'write' | 'delete' | 'rename' | 'mkdir' | 'rmdir';

/**
 * The entry at a path as the one asking for a change sees it: the stored entry, or for the FUSE
 * mount its changes answered but not stored yet over the stored entries. Undefined: nothing there.
 */
export type ShownEntry = (path: string) => { readonly kind: 'file' | 'dir'; readonly symlink?: boolean | undefined } | undefined;

/** What a {@link MutationGuard} knows beyond the paths. */
export interface GuardContext {
  /** What is at a path for the asker: a guard that looks at what is there asks this, not the store. */
  readonly shown: ShownEntry;
  /**
   * The change was answered already by its face, which ran the guards then against what it showed
   * ({@link ChangeOrigin.answered}): a guard that looks at what is there must not refuse it now
   * (the store may not show yet what the face showed); one that looks only at the paths may.
   */
  readonly answered: boolean;
}

/**
 * Asked before every change made on a client's behalf; throws to refuse it (read-only mounts,
 * crossing a mount boundary, parsed views). `paths` is the target, or [from, to] for a rename;
 * `subtree` says the change reaches everything below the path too. A guard may return a function:
 * it is called once the change is settled — committed and its commit hooks done, or refused — so a
 * storage backend can tell a change in flight from an outside one.
 */
export type MutationGuard = (kind: MutationKind, paths: readonly string[], subtree: boolean, ctx: GuardContext) => void | (() => void);

/**
 * Keeps the content of a file that a change removes for a reader outside the store (the daemon
 * mount's open files: POSIX keeps an unlinked file's bytes until its last close). Called inside the
 * removing transaction with the file about to go; each chunk it names is held there (a pending
 * hold, as {@link FsService.holdChunks} takes one: `held` says which could be), and `kept` runs once
 * that transaction is committed, before the change is published: the holds are then the keeper's
 * to give up (holdChunks' `release`). When the transaction is not committed, `kept` never runs and
 * the holds are rolled back with it.
 */
export type ContentKeeper = (path: string, rec: FileRecord) => { hashes: readonly string[]; kept: (held: boolean[]) => void } | undefined;

/** Awaited after a commit and before the answer (local mount directories are mirrored here). */
export type CommitHook = (events: readonly ChangeEvent[]) => Promise<void>;

/**
 * Awaited after {@link FsService.setAttributes} commits a client's change of an entry's attributes
 * (no change event is published for those): a storage mount gives the host file the new mode.
 */
export type AttributeHook = (path: string, entry: EntryRecord) => Promise<void>;

/** Who asks for a change: a client (guards apply) or a storage backend reporting an outside change. */
export interface ChangeOrigin {
  fromBackend?: boolean | undefined;
  /**
   * false: answer once the change is committed (visible to every face, surviving a daemon crash)
   * instead of once it is flushed to stable storage; `flushed()` then waits for the flush. The
   * FUSE mount uses it (a local disk's close() does not sync either; its fsync does). Absent or
   * true, as for every RPC write: answer only after the durable commit.
   */
  durable?: boolean | undefined;
  /**
   * The change is one a barrier ({@link FsService.addBarrier}) is waiting for, being committed now
   * (the FUSE mount's queue): it does not wait for the barrier, which would wait for itself.
   */
  pastBarrier?: boolean | undefined;
  /**
   * The change was answered already (the FUSE mount's queued changes, and their replay after a
   * crash): the face ran the guards when it answered, against what it showed then
   * ({@link FsService.checkChange} with its own {@link ShownEntry}). See {@link GuardContext.answered}.
   */
  answered?: boolean | undefined;
  /**
   * Who makes the change (an object of the face's own), for a face that must tell the change
   * events it caused from other faces' ({@link FsService.madeBy}); never sent anywhere.
   */
  face?: object | undefined;
}

/**
 * Resolves once changes acknowledged elsewhere but not yet stored (the FUSE mount's queued closes)
 * are stored; undefined when there are none. See {@link FsService.addBarrier}.
 */
export type Barrier = () => Promise<void> | undefined;

export interface WriteOptions extends ChangeOrigin {
  ifMatch?: string | undefined;
  ifNoneMatch?: boolean | undefined;
  force?: boolean | undefined;
  /** POSIX attributes for the entry; absent ones are kept from the current entry. */
  attributes?: EntryAttributes | undefined;
  /** Store the content as a symbolic link's target. */
  symlink?: boolean | undefined;
  /** The entry's modification time (ms) when the writer knows better than the commit time (FUSE: the last write). */
  modified?: number | undefined;
}

/** One change of {@link FsService.writeMany}: a file's new content, or its deletion. */
export type BatchItem =
  | { path: string; pieces: readonly ContentPiece[]; opts?: WriteChunksOptions | undefined }
  | { path: string; delete: true }
  /**
   * A directory made, as {@link FsService.mkdir} without `parents`, with its modification time.
   * `keepTime`: that time was set after the batch's other changes in it (rsync and `cp -a` set a
   * directory's times once its files are written), so they do not touch it.
   */
  | { path: string; mkdir: true; attributes?: EntryAttributes | undefined; modified?: number | undefined; keepTime?: boolean | undefined }
  /** An empty directory removed, as {@link FsService.rmdir} without `recursive`. */
  | { path: string; rmdir: true }
  /** A file or directory renamed, as {@link FsService.rename} with `overwrite`. */
  | { path: string; renameTo: string }
  /** Attributes of a file or directory changed, as {@link FsService.setAttributes}. */
  | { path: string; change: AttributeChanges };

/** One chunk of content handed to {@link FsService.writeChunks}. */
export interface ContentPiece {
  /**
   * The bytes, or a synchronous loader called each time they are needed (once to hash, once more
   * only when the chunk is new to the store), so a caller can stream a large file from disk
   * instead of holding it in memory.
   */
  data: Uint8Array | (() => Uint8Array);
  /** SHA-256 (hex) of `data`, when the caller knows it (a chunk read from this store). */
  hash?: string | undefined;
  /** Byte length of `data`, when known without loading it (with `hash`: the chunk is not loaded to hash it). */
  size?: number | undefined;
  /**
   * The caller holds this chunk ({@link FsService.holdChunks}; `hash` is then required): the
   * commit takes that hold over as the entry's reference instead of adding one.
   */
  held?: boolean | undefined;
}

/** A chunk to store ahead of its file's commit ({@link FsService.holdChunks}). */
export interface HoldRequest {
  /** SHA-256 (hex) of the bytes. */
  hash: string;
  /**
   * The bytes, asked for inside the transaction just before they are stored (used at once: they
   * may be in a buffer the next request reuses); undefined: no longer wanted (the writer changed
   * them since they were hashed), nothing is stored or held. Absent: a chunk the store already
   * holds (a stored version lists it), held by reference; not held if it is stored no more.
   */
  data?: (() => Uint8Array | undefined) | undefined;
}

/** {@link FsService.writeChunks} options. */
export interface WriteChunksOptions extends WriteOptions {
  /**
   * SHA-256 (hex) of the whole content, when the caller computed it while the bytes were written.
   * Used only when every piece also carries its `hash` and `size`: then no piece is loaded to hash
   * it (a piece new to the store is still loaded once, to store it).
   */
  etag?: string | undefined;
}

/** What {@link FsService.setAttributes} changes; absent fields stay as they are. */
export interface AttributeChanges extends EntryAttributes {
  /** Modification time, ms since epoch. */
  modified?: number | undefined;
}

export interface WriteResult {
  etag: string;
  version: number;
  size: number;
  modified_at: Date;
}

export interface FileMetadata {
  path: string;
  size: number;
  etag: string | null;
  version: number | null;
  created_at: Date;
  modified_at: Date;
  content_type: string;
  is_directory: boolean;
}

export interface ListEntry {
  path: string;
  is_directory: boolean;
  size: number;
  etag?: string;
  version?: number;
  content_type?: string;
  created_at: Date;
  modified_at: Date;
}

/** diff_versions in `metadata` mode (`content` mode is a unified diff string). */
export interface VersionDiff {
  path: string;
  v1: number;
  v2: number;
  etag_v1: string;
  etag_v2: string;
  size_v1: number;
  size_v2: number;
  content_changed: boolean;
}

/** A file's content by reference: what a workspace snapshot records per file. */
export interface TreeFile {
  etag: string;
  size: number;
  chunks: string[];
  contentType: string;
  /** POSIX mode bits (0o644 when never set). */
  mode: number;
  /** A symbolic link (the content is its target). */
  symlink?: true;
}

/** The mode a file reports when none was ever set (the FUSE face's default). */
export const DEFAULT_FILE_MODE = 0o644;

export interface VersionEntry {
  version: number;
  etag: string;
  size: number;
  modified_at: Date;
  content_type: string;
  source: string;
}

const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

// mime-types knows .ts as MPEG transport stream; in a file tree it is code far more often.
const TEXT_OVERRIDES: Record<string, string> = { ts: 'text/x-typescript', tsx: 'text/x-typescript' };

// mime-types parses its 200 KB type database when loaded (~30 ms): loaded on the first write, not
// at daemon start-up (a runtime require, so the start-up bundle does not carry it either).
let mimeTypes: typeof MimeTypes | undefined;
const mime = (): typeof MimeTypes => (mimeTypes ??= createRequire(import.meta.url)('mime-types') as typeof MimeTypes);

function contentTypeOf(path: string): string {
  const ext = baseName(path).split('.').pop()?.toLowerCase() ?? '';
  return TEXT_OVERRIDES[ext] ?? (mime().lookup(path) || 'application/octet-stream');
}

const notADirectory = (path: string) => new ValidationError(`Not a directory: ${path}`, { path, errno: 'ENOTDIR' });
const isADirectory = (path: string) => new ValidationError(`Is a directory: ${path}`, { path, errno: 'EISDIR' });
const fileNotFound = (path: string) => new NotFoundError(`File not found: ${path}`, { path });

/** The file tree over a metadata store and a chunk store. */
export class FsService {
  readonly #store: MetadataStore;
  readonly #blobs: BlobStore;
  readonly #events: EventBus;
  /** The face each published event came from, where its change named one (see {@link madeBy}). */
  readonly #faces = new WeakMap<ChangeEvent, object>();
  readonly #entries: Table<EntryRecord>;
  readonly #versions: Table<VersionRecord>;
  readonly #refs: Table<number>;
  readonly #meta: Table<number>;
  /** Pending holds per chunk (see the module note); no row: none. */
  readonly #pending: Table<number>;
  readonly #guards: MutationGuard[] = [];
  readonly #hooks: CommitHook[] = [];
  readonly #attributeHooks: AttributeHook[] = [];
  readonly #keepers: ContentKeeper[] = [];
  /** Inside a transaction: the keepers' `kept` calls, made once it is committed ({@link #transact}). */
  #kept: (() => void)[] | undefined;
  readonly #barriers: Barrier[] = [];
  /** Renames and removals under way for a client, from their start to their publication ({@link movesUnderway}). */
  readonly #moves = new Set<{ paths: readonly string[]; face: object | undefined; done: Promise<void> }>();
  readonly #grepper: Grepper;
  /**
   * Inside {@link writeMany}'s transaction: the directories its items made with a time of their
   * own, which the items' changes of names in them do not touch ({@link BatchItem}'s `keepTime`).
   */
  #keepTimes: ReadonlySet<string> | undefined;

  constructor(deps: { store: MetadataStore; blobs: BlobStore; events: EventBus; grep?: GrepperOptions }) {
    this.#grepper = new Grepper(deps.grep);
    this.#store = deps.store;
    this.#blobs = deps.blobs;
    this.#events = deps.events;
    this.#entries = deps.store.table<EntryRecord>('entries');
    this.#versions = deps.store.table<VersionRecord>('versions');
    this.#refs = deps.store.table<number>('refs');
    this.#meta = deps.store.table<number>('fs_meta');
    this.#pending = deps.store.table<number>('pending_chunks');
  }

  /**
   * Bring a data directory written with an earlier layout up to date; idempotent, and a no-op
   * once done (the composition root awaits it before serving). Until 2026-11-24 the current version
   * of every file also had a version row, and every chunk a `refs` row even with one reference.
   * Either layout is rewritten to the current one: the duplicate version rows go (their source
   * and commit time move into the entry), and so do `refs` rows of 1. Layouts 3 (small content
   * inline in the rows) and 4 (chunks stored in 64 KiB pieces) need no rewrite: earlier rows and
   * chunks are read as they are. A data directory of a later layout than this build knows is
   * refused: it may hold what this build would misread (an older build reads an inline file as
   * empty, and a chunk in pieces as its first 64 KiB).
   */
  async upgrade(): Promise<void> {
    const stored = this.#meta.get(LAYOUT_KEY);
    if (stored === LAYOUT) return;
    if (stored !== undefined && stored > LAYOUT) {
      throw new Error(`the data directory was written by a newer svc (storage layout ${stored}; this build reads layouts up to ${LAYOUT}): upgrade svc`);
    }
    await this.#store.transact(() => {
      const now = this.#meta.get(LAYOUT_KEY);
      if (now !== undefined && now >= ENTRY_HOLDS_CURRENT_LAYOUT) {
        if (now < LAYOUT) this.#meta.put(LAYOUT_KEY, LAYOUT);
        return;
      }
      const files: [string, FileRecord][] = [];
      for (const range of subtreeRanges('/')) {
        for (const { key, value } of this.#entries.range(range)) if (value.kind === 'file') files.push([key, value]);
      }
      for (const [key, rec] of files) {
        const path = keyPath(key);
        const row = this.#versions.get(versionKey(path, rec.version));
        if (!row) continue;
        this.#versions.remove(versionKey(path, rec.version));
        const next: FileRecord = { ...rec };
        if (row.source !== 'write') next.source = row.source;
        if (row.modified !== rec.modified) next.versionAt = row.modified;
        this.#entries.put(key, next);
      }
      const single = [...this.#refs.range({})].filter((r) => r.value <= 1).map((r) => r.key);
      for (const key of single) this.#refs.remove(key);
      this.#meta.put(LAYOUT_KEY, LAYOUT);
    });
  }

  /**
   * Store chunks of a file still being written, each with a pending hold, so that its commit only
   * writes the entry (the FUSE mount calls it as chunks complete). A chunk already stored is not
   * stored again: the hold is one more reference on it. `release` gives up holds taken earlier
   * (one per hash listed; the chunk goes once nothing else references it). One transaction,
   * `durable: false` unless asked otherwise: a crash before the commit is settled at start-up by
   * {@link dropPendingHolds}. Returns, for each request, whether it is now held.
   */
  async holdChunks(
    requests: readonly HoldRequest[], release: readonly string[] = [], opts: { durable?: boolean } = {},
  ): Promise<boolean[]> {
    if (requests.length === 0 && release.length === 0) return [];
    return this.#store.transact(() => {
      // Checks first: the holds to give up, before the first write.
      const giveUp = countOf(release);
      for (const [hash, n] of giveUp) {
        if ((this.#pending.get(hash) ?? 0) < n) throw new Error(`chunk ${hash} has fewer than ${n} pending holds`);
      }
      const held = requests.map((r) => {
        // Asked for one at a time, just before it is stored (the caller may read each into one
        // reused buffer); bytes that cannot be read are not held (the commit stores them). A
        // request by reference is not held when the chunk's last reference went meanwhile.
        let data: Uint8Array | undefined;
        try {
          data = r.data?.();
        } catch {
          data = undefined;
        }
        if (r.data ? data === undefined : !this.#blobs.has(r.hash)) return false;
        this.#ref(r.hash, data);
        this.#pending.put(r.hash, (this.#pending.get(r.hash) ?? 0) + 1);
        return true;
      });
      for (const [hash, n] of giveUp) {
        for (let k = 0; k < n; k++) this.#dropHold(hash);
      }
      return held;
    }, { durable: opts.durable === true });
  }

  /**
   * Give up every pending hold (the composition root calls it at start-up, before serving: holds
   * left then belong to files a crash or a stop interrupted). Returns the holds dropped.
   */
  async dropPendingHolds(): Promise<number> {
    if (first(this.#pending.range({})) === undefined) return 0;
    return this.#store.transact(() => {
      const rows = [...this.#pending.range({})];
      let n = 0;
      for (const { key, value } of rows) {
        for (let k = 0; k < value; k++, n++) this.#dropHold(key);
      }
      return n;
    });
  }

  /** Pending holds on a chunk (tests, diagnostics). */
  pendingHolds(hash: string): number {
    return this.#pending.get(hash) ?? 0;
  }

  /** Add a check run before every client change. */
  addGuard(guard: MutationGuard): void {
    this.#guards.push(guard);
  }

  /**
   * Run the guards for a change without making it: the FUSE face refuses a write when the file is
   * opened, where the caller sees the error, rather than at close, where most tools ignore it, and
   * checks the changes it answers before storing them, against what it shows (`shown`).
   */
  checkChange(kind: MutationKind, path: string | readonly string[], subtree = false, shown: ShownEntry = this.#shownStored): void {
    this.#check({}, kind, (typeof path === 'string' ? [path] : path).map((p) => normalizeFilePath(p)), subtree, shown)();
  }

  readonly #shownStored: ShownEntry = (p) => this.stat(p);

  /**
   * Resolves once the renames and removals under way of `path` or a directory above it (from their
   * start to their change events' publication) are done; undefined when there are none.
   * A face that commits a path it resolved earlier (the FUSE mount's open files, which follow
   * another face's rename or delete when its event arrives) waits for it first, so that a close
   * racing such a change commits where the change left the file, not at the name it had. Those
   * made by `face` itself ({@link ChangeOrigin.face}) are not waited for: it moves its own files.
   */
  movesUnderway(path: string, face?: object): Promise<void> | undefined {
    if (this.#moves.size === 0) return undefined;
    const waits = [...this.#moves].filter((m) => m.face !== face && m.paths.some((p) => isWithin(path, p))).map((m) => m.done);
    return waits.length === 0 ? undefined : Promise.all(waits).then(() => undefined);
  }

  /** Record a rename or removal under way (unless the face answered it already: the FUSE queue's); returns its end. */
  #moving(origin: ChangeOrigin, paths: readonly string[]): () => void {
    if (origin.answered) return noop;
    let end!: () => void;
    const move = { paths, face: origin.face, done: new Promise<void>((resolve) => (end = resolve)) };
    this.#moves.add(move);
    return () => {
      this.#moves.delete(move);
      end();
    };
  }

  /** Add a keeper of removed files' content ({@link ContentKeeper}); returns the function that removes it. */
  addKeeper(keeper: ContentKeeper): () => void {
    this.#keepers.push(keeper);
    return () => {
      const i = this.#keepers.indexOf(keeper);
      if (i >= 0) this.#keepers.splice(i, 1);
    };
  }

  /** Add a hook awaited after a client's attribute change is committed ({@link AttributeHook}). */
  addAttributeHook(hook: AttributeHook): void {
    this.#attributeHooks.push(hook);
  }

  /** Add a hook awaited after every commit, before the change is answered and published. */
  addCommitHook(hook: CommitHook): void {
    this.#hooks.push(hook);
  }

  /**
   * Add a barrier every change waits for before it reads or checks anything (unless its origin is
   * {@link ChangeOrigin.pastBarrier}), so that changes already acknowledged elsewhere reach the
   * store first: a later write does not land under an earlier queued close, and a delete finds
   * the file that close made. Returns the function that removes it.
   */
  addBarrier(barrier: Barrier): () => void {
    this.#barriers.push(barrier);
    return () => {
      const i = this.#barriers.indexOf(barrier);
      if (i >= 0) this.#barriers.splice(i, 1);
    };
  }

  /**
   * Resolves once the changes acknowledged elsewhere but not yet committed (what the barriers wait
   * for) are in the store; undefined at once when nothing waits. Every change awaits it itself; a
   * request from another face (the RPC dispatcher) awaits it before it reads, so a file a program
   * closed in the mount reads back with what the program wrote.
   */
  settled(): Promise<void> | undefined {
    const waits = this.#barriers.map((barrier) => barrier()).filter((wait) => wait !== undefined);
    return waits.length === 0 ? undefined : Promise.all(waits).then(() => undefined);
  }

  async #pastBarriers(origin: ChangeOrigin): Promise<void> {
    if (origin.pastBarrier) return;
    const wait = this.settled();
    if (wait) await wait;
  }

  // ---------------------------------------------------------------- reads

  /** The record at a normalised path, or undefined. The root is a directory that always exists. */
  stat(path: string): EntryRecord | undefined {
    if (path === '/') {
      // The root has no entry row: its times live in the fs_meta table (see #touch).
      const modified = this.#meta.get(ROOT_MODIFIED_KEY) ?? 0;
      return modified === 0 ? ROOT : { ...ROOT, modified };
    }
    return this.#entries.get(entryKey(path));
  }

  /** The file record at `path`; -32000 when absent, EISDIR when a directory. */
  file(path: string): FileRecord {
    const rec = this.stat(path);
    if (!rec) throw fileNotFound(path);
    if (rec.kind !== 'file') throw isADirectory(path);
    return rec;
  }

  /** The chunks of a file or version, in order, one at a time (inline content is one chunk). */
  *chunks(rec: ContentRecord): Generator<Buffer> {
    const inline = inlineOf(rec);
    if (inline) {
      yield inline;
      return;
    }
    for (const hash of rec.chunks) {
      const data = this.#blobs.get(hash);
      // A missing chunk is store corruption, not a client fault: it surfaces as -32603 / EIO.
      if (!data) throw new Error(`chunk ${hash} missing from the blob store`);
      yield data;
    }
  }

  /**
   * Bytes `[from, to)` of chunk `hash` (clipped to its end) copied into `target` at `at`: how many.
   * Only those bytes are copied, with no allocation (the FUSE face's reads).
   */
  chunkRangeInto(hash: string, from: number, to: number, target: Buffer, at: number): number {
    const n = this.#blobs.readRange(hash, from, to, target, at);
    if (n === undefined) throw new Error(`chunk ${hash} missing from the blob store`);
    return n;
  }

  /** Whole content of a file or version. */
  content(rec: ContentRecord): Buffer {
    const inline = inlineOf(rec);
    if (inline) return inline;
    if (rec.chunks.length === 1) return this.chunks(rec).next().value as Buffer;
    return Buffer.concat([...this.chunks(rec)]);
  }

  read(path: string): { record: FileRecord; content: Buffer } {
    const p = normalizeFilePath(path);
    const record = this.file(p);
    return { record, content: this.content(record) };
  }

  getMetadata(path: string): FileMetadata | null {
    const p = normalizeFilePath(path);
    const rec = this.stat(p);
    return rec ? metadataOf(p, rec) : null;
  }

  exists(path: string): boolean {
    return this.stat(normalizePath(path)) !== undefined;
  }

  isDirectory(path: string): boolean {
    return this.stat(normalizePath(path))?.kind === 'dir';
  }

  // ---------------------------------------------------------------- writes

  async write(path: string, content: Uint8Array, opts: WriteOptions = {}): Promise<WriteResult> {
    const p = normalizeFilePath(path);
    await this.#pastBarriers(opts);
    const settle = this.#check(opts, 'write', [p], false);
    try {
      const { etag, chunks } = splitChunks(content);
      return await this.#commitVersion(p, etag, content.byteLength, chunks, opts);
    } finally {
      settle();
    }
  }

  /**
   * Write a file whose content the caller holds as chunks (the FUSE face commits an open file this
   * way, without joining it into one buffer): every piece but the last is exactly
   * {@link CHUNK_SIZE} bytes. One new version, like {@link write}.
   */
  async writeChunks(path: string, pieces: readonly ContentPiece[], opts: WriteChunksOptions = {}): Promise<WriteResult> {
    const p = normalizeFilePath(path);
    await this.#pastBarriers(opts);
    // From here to the transaction nothing awaits: a rename or removal that starts later commits after it.
    if (opts.face !== undefined && this.movesUnderway(p, opts.face)) throw new MoveUnderwayError(p);
    const settle = this.#check(opts, 'write', [p], false);
    try {
      const { etag, size, chunks } = hashPieces(pieces, opts.etag);
      return await this.#commitVersion(p, etag, size, chunks, opts);
    } finally {
      settle();
    }
  }

  /**
   * Write (or delete) several files in ONE transaction (the FUSE mount's group commit of many
   * closes and unlinks), each as {@link writeChunks} (or {@link delete}) would: one new version per
   * written item, in order (a path given twice gets two versions; a write after a delete of the
   * same path starts a new history). An item that is refused (guards, a directory at its path, a
   * file where a parent should be, a failed precondition, deleting what does not exist) changes
   * nothing and does not stop the others: its result is `rejected`. `batch.mark` stores a number
   * under a name in the same transaction (read it back with {@link mark}): a caller's journal
   * records which of its entries the store holds. Change events are emitted once the transaction
   * is committed, one per file, in order. A delete's result is undefined. A commit hook that fails
   * once the transaction is committed is thrown, as by every change, unless `batch.onHookFailure`
   * takes it: then the results are returned (a caller that answered its changes already must not
   * take them for uncommitted and commit them again).
   */
  async writeMany(
    items: readonly BatchItem[],
    batch: ChangeOrigin & { mark?: { name: string; value: number } | undefined; onHookFailure?: ((err: unknown) => void) | undefined } = {},
  ): Promise<PromiseSettledResult<WriteResult | undefined>[]> {
    await this.#pastBarriers(batch);
    type Prepared = { p: string; etag: string; size: number; chunks: StoredPiece[]; opts: WriteOptions } | { p: string; delete: true }
      | { p: string; mkdir: true; attributes: EntryAttributes | undefined; modified: number | undefined } | { p: string; rmdir: true }
      | { p: string; to: string } | { p: string; change: AttributeChanges } | { error: unknown };
    const settles: (() => void)[] = [];
    const prepared: Prepared[] = [];
    const keepTimes = new Set<string>();
    for (const item of items) {
      try {
        const opts = { ...('pieces' in item ? item.opts : {}), fromBackend: batch.fromBackend, answered: batch.answered };
        if ('mkdir' in item) {
          const p = normalizePath(item.path);
          if (p === '/') throw new ExistsError('Directory already exists: /', { path: p });
          settles.push(this.#check(opts, 'mkdir', [p], false));
          prepared.push({ p, mkdir: true, attributes: item.attributes, modified: item.modified });
          if (item.keepTime) keepTimes.add(p);
          continue;
        }
        if ('rmdir' in item) {
          const p = normalizePath(item.path);
          if (p === '/') throw new InvalidPathError('The root directory cannot be removed', item.path);
          settles.push(this.#check(opts, 'rmdir', [p], true));
          prepared.push({ p, rmdir: true });
          continue;
        }
        const p = normalizeFilePath(item.path);
        if ('change' in item) {
          settles.push(this.#check(opts, 'write', [p], false));
          prepared.push({ p, change: item.change });
          continue;
        }
        if ('renameTo' in item) {
          const to = normalizeFilePath(item.renameTo);
          if (to === p || isWithin(to, p)) throw new ValidationError(`Cannot move ${p} onto or into itself (${to})`, { path: to, errno: 'EINVAL' });
          settles.push(this.#check(opts, 'rename', [p, to], true));
          prepared.push({ p, to });
          continue;
        }
        if ('delete' in item) {
          settles.push(this.#check(opts, 'delete', [p], false));
          prepared.push({ p, delete: true });
        } else {
          settles.push(this.#check(opts, 'write', [p], false));
          prepared.push({ p, ...hashPieces(item.pieces, item.opts?.etag), opts });
        }
      } catch (error) {
        prepared.push({ error });
      }
    }
    try {
      const now = Date.now();
      const outcomes = await this.#transact(batch, () => {
        this.#keepTimes = keepTimes;
        let out: ({ created: string[]; version: number; entry?: EntryRecord } | { error: unknown })[];
        try {
          out = prepared.map((item) => {
            if ('error' in item) return item;
            const keptBefore = this.#kept?.length ?? 0;
            try {
              // Each item on its own: one refused half-way leaves nothing of it, and the others go on.
              return this.#store.atomically(() => {
                if ('delete' in item) {
                  this.#deleteFile(item.p, now);
                  return { created: [], version: 0 };
                }
                if ('mkdir' in item) {
                  this.#makeDir(item.p, item.attributes, item.modified ?? now, now);
                  return { created: [item.p], version: 0 };
                }
                if ('rmdir' in item) {
                  this.#removeDir(item.p, false, now);
                  return { created: [], version: 0 };
                }
                if ('to' in item) return { created: this.#renameIn(item.p, item.to, true, now), version: 0 };
                if ('change' in item) return { created: [], version: 0, entry: this.#changeAttributes(item.p, item.change, now) };
                return this.#putVersion(item.p, item.etag, item.size, item.chunks, item.opts, now);
              });
            } catch (error) {
              this.#kept?.splice(keptBefore); // rolled back with the item
              return { error };
            }
          });
        } finally {
          this.#keepTimes = undefined;
        }
        if (batch.mark) this.#meta.put(markKey(batch.mark.name), batch.mark.value);
        return out;
      });
      const events: ChangeEvent[] = [];
      const results = outcomes.map((o, i): PromiseSettledResult<WriteResult | undefined> => {
        if ('error' in o) return { status: 'rejected', reason: o.error };
        const item = prepared[i] as Exclude<Prepared, { error: unknown }>;
        if ('delete' in item) {
          events.push({ type: 'delete', path: item.p, at: iso(now) });
          return { status: 'fulfilled', value: undefined };
        }
        if ('mkdir' in item) {
          events.push(...mkdirEvents(o.created, now));
          return { status: 'fulfilled', value: undefined };
        }
        if ('rmdir' in item) {
          events.push({ type: 'rmdir', path: item.p, at: iso(now) });
          return { status: 'fulfilled', value: undefined };
        }
        if ('to' in item) {
          events.push(...mkdirEvents(o.created, now), { type: 'rename', path: item.p, new_path: item.to, at: iso(now) });
          return { status: 'fulfilled', value: undefined };
        }
        // An attribute change publishes no event (as setAttributes).
        if ('change' in item) return { status: 'fulfilled', value: undefined };
        events.push(...mkdirEvents(o.created, now), { type: 'write', path: item.p, etag: item.etag, version: o.version, at: iso(now) });
        return { status: 'fulfilled', value: { etag: item.etag, version: o.version, size: item.size, modified_at: new Date(now) } };
      });
      try {
        await this.#commit(events, batch);
        if (!batch.fromBackend) {
          for (const [i, o] of outcomes.entries()) {
            const item = prepared[i]!;
            if ('change' in item && 'entry' in o && o.entry) for (const hook of this.#attributeHooks) await hook(item.p, o.entry);
          }
        }
      } catch (err) {
        if (!batch.onHookFailure) throw err;
        batch.onHookFailure(err);
      }
      return results;
    } finally {
      for (const settle of settles) settle();
    }
  }

  /**
   * Inside a transaction: a name was made, removed or renamed in directory `dir`, which changes it
   * (POSIX: its mtime and ctime become the change's time). Python's import system, make and git's
   * untracked cache rescan a directory only when its mtime moved. A directory {@link writeMany}
   * made with a time of its own in the same batch keeps it.
   */
  #touch(dir: string, now: number): void {
    if (this.#keepTimes?.has(dir)) return;
    if (dir === '/') {
      this.#meta.put(ROOT_MODIFIED_KEY, now);
      return;
    }
    const key = entryKey(dir);
    const rec = this.#entries.get(key);
    if (rec?.kind !== 'dir' || (rec.modified === now && rec.changed === undefined)) return;
    const { changed: _changed, ...kept } = rec;
    this.#entries.put(key, { ...kept, modified: now });
  }

  /** Inside a transaction: remove directory `p`, with what is below it only when `recursive`. */
  #removeDir(p: string, recursive: boolean, now: number): void {
    const rec = this.#entries.get(entryKey(p));
    if (!rec) throw new NotFoundError(`Directory not found: ${p}`, { path: p });
    if (rec.kind !== 'dir') throw notADirectory(p);
    const hasChild = first(this.#entries.keys({ ...childrenRange(p), limit: 1 })) !== undefined;
    if (hasChild && !recursive) throw new ValidationError(`Directory not empty: ${p}`, { path: p, errno: 'ENOTEMPTY' });
    this.#removeSubtree(p);
    this.#touch(parentOf(p), now);
  }

  /**
   * Inside a transaction: rename `from` to `to` (a file over a file, a directory over an empty
   * one, missing parents made); returns the directories made.
   */
  #renameIn(from: string, to: string, overwrite: boolean, now: number): string[] {
    const src = this.#entries.get(entryKey(from));
    if (!src) throw fileNotFound(from);
    const dst = this.#entries.get(entryKey(to));
    if (dst && !overwrite) {
      throw new ExistsError(`Destination path already exists: ${to}`, { path: to });
    }
    if (dst?.kind === 'dir' && src.kind === 'file') throw isADirectory(to);
    if (dst?.kind === 'file' && src.kind === 'dir') throw notADirectory(to);
    if (dst?.kind === 'dir' && first(this.#entries.keys({ ...childrenRange(to), limit: 1 })) !== undefined) {
      throw new ValidationError(`Directory not empty: ${to}`, { path: to, errno: 'ENOTEMPTY' });
    }
    // Collect first: the ranges change under us as we move. Every new path is checked before
    // anything is written: a descendant past the path limit would be unreachable (every face
    // refuses such a path), and one past LMDB's key size threw half-way through the moves, which
    // were committed all the same (the transaction's writes are not undone).
    const below: [string, EntryRecord][] = [];
    if (src.kind === 'dir') {
      for (const range of subtreeRanges(from)) {
        for (const { key, value } of this.#entries.range(range)) {
          const path = keyPath(key);
          const target = to + path.slice(from.length);
          if (Buffer.byteLength(target) > MAX_PATH_BYTES) {
            throw new ValidationError(`Path longer than ${MAX_PATH_BYTES} bytes: ${target}`, { path: to, errno: 'ENAMETOOLONG' });
          }
          below.push([path, value]);
        }
      }
    }
    const missingParents = this.#checkParents(to, true);
    this.#createDirs(missingParents, now);
    this.#touch(parentOf(from), now);
    this.#touch(parentOf(to), now);
    if (dst?.kind === 'file' && src.kind === 'file') {
      this.#replaceFile(from, src, to, dst, now);
      return missingParents;
    }
    if (dst) this.#entries.remove(entryKey(to));
    // A rename changes the renamed entry (its ctime), not what moves with it below.
    const { changed: _changed, ...renamed } = src;
    this.#move(from, to, { ...renamed, ...changedField(src.modified, now) } as EntryRecord);
    for (const [path, rec] of below) this.#move(path, to + path.slice(from.length), rec);
    return missingParents;
  }

  /** Inside a transaction: make directory `p` in an existing directory (mkdir without `parents`). */
  #makeDir(p: string, attributes: EntryAttributes | undefined, modified: number, now: number): void {
    const existing = this.#entries.get(entryKey(p));
    if (existing) throw new ExistsError(existing.kind === 'dir' ? `Directory already exists: ${p}` : `File exists: ${p}`, { path: p });
    this.#checkParents(p, false);
    this.#entries.put(entryKey(p), { kind: 'dir', created: now, modified, ...changedField(modified, now), ...attributes } satisfies DirRecord);
    this.#touch(parentOf(p), now);
  }

  /** Inside a transaction: check that `p` is a file, then remove it. */
  #deleteFile(p: string, now: number): void {
    const rec = this.#entries.get(entryKey(p));
    if (!rec) throw fileNotFound(p);
    if (rec.kind === 'dir') throw isADirectory(p);
    this.#keepContent(p, rec);
    this.#removeFile(p, rec);
    this.#touch(parentOf(p), now);
  }

  /** The number last stored under `name` by {@link writeMany}'s `mark` (undefined: never). */
  mark(name: string): number | undefined {
    return this.#meta.get(markKey(name));
  }

  /** Store one new version of `p` made of `pieces` (checks first, then writes: see the module note). */
  async #commitVersion(p: string, etag: string, size: number, pieces: StoredPiece[], opts: WriteOptions): Promise<WriteResult> {
    const now = Date.now();
    const result = await this.#transact(opts, () => this.#putVersion(p, etag, size, pieces, opts, now));
    await this.#commit([...mkdirEvents(result.created, now), { type: 'write', path: p, etag, version: result.version, at: iso(now) }], opts);
    return { etag, version: result.version, size, modified_at: new Date(now) };
  }

  /** Inside a transaction: check, then write one new version of `p` (throws before writing anything). */
  #putVersion(p: string, etag: string, size: number, pieces: StoredPiece[], opts: WriteOptions, now: number): { created: string[]; version: number } {
    const existing = this.#entries.get(entryKey(p));
    if (existing?.kind === 'dir') throw isADirectory(p);
    const missingParents = this.#checkParents(p, true);
    if (!opts.force) {
      // spec §4.3: if_none_match is create-only; if_match is optimistic concurrency.
      if (opts.ifNoneMatch && existing) throw new ExistsError(`File already exists: ${p}`, { path: p });
      if (opts.ifMatch !== undefined) {
        const current = existing?.etag;
        if (current !== opts.ifMatch) {
          throw new ConflictError(
            current === undefined ? `Conflict: ${p} does not exist` : `Conflict: etag mismatch for ${p}`,
            { path: p, expected_etag: opts.ifMatch, current_etag: current ?? null },
          );
        }
      }
    }
    const holds = countOf(pieces.filter((c) => c.held).map((c) => c.hash));
    for (const [hash, n] of holds) {
      if ((this.#pending.get(hash) ?? 0) < n) throw new Error(`chunk ${hash} has fewer than ${n} pending holds`);
    }
    this.#createDirs(missingParents, now);
    if (!existing) this.#touch(parentOf(p), now);
    const version = (existing?.version ?? 0) + 1;
    const inline = inlineContent(size, pieces);
    // A held chunk's hold becomes the entry's reference: one pending hold fewer, the count unchanged.
    if (!inline) {
      for (const piece of pieces) {
        if (piece.held) this.#takeHold(piece.hash);
        else this.#ref(piece.hash, piece.data);
      }
    }
    const contentType = contentTypeOf(p);
    const chunks = inline ? [] : pieces.map((c) => c.hash);
    // The version being replaced joins the history; the new one lives in the entry.
    if (existing) this.#versions.put(versionKey(p, existing.version), currentVersion(existing));
    const modified = opts.modified ?? now;
    this.#entries.put(entryKey(p), {
      kind: 'file', version, etag, size, chunks, ...inline, contentType,
      created: existing?.created ?? now, modified, ...changedField(modified, now),
      ...(modified === now ? {} : { versionAt: now }),
      ...keptAttributes(existing, opts.attributes),
      ...(opts.symlink ? { symlink: true } : {}),
    });
    return { created: missingParents, version };
  }

  /** Resolves once every change committed so far (durable or not) is flushed to stable storage. */
  flushed(): Promise<void> {
    return this.#store.flushed();
  }

  /**
   * A mutation's transaction, durable unless the origin asks otherwise ({@link ChangeOrigin.durable});
   * once committed, the keepers learn what they kept in it ({@link ContentKeeper}).
   */
  async #transact<T>(origin: ChangeOrigin, fn: () => T): Promise<T> {
    const kept: (() => void)[] = [];
    const result = await this.#store.transact(() => {
      this.#kept = kept;
      try {
        return fn();
      } finally {
        this.#kept = undefined;
      }
    }, { durable: origin.durable !== false });
    for (const k of kept) k();
    return result;
  }

  async delete(path: string, origin: ChangeOrigin = {}): Promise<void> {
    const p = normalizeFilePath(path);
    const moved = this.#moving(origin, [p]);
    try {
      await this.#pastBarriers(origin);
      const settle = this.#check(origin, 'delete', [p], false);
      try {
        const now = Date.now();
        await this.#transact(origin, () => this.#deleteFile(p, now));
        await this.#commit([{ type: 'delete', path: p, at: iso(now) }], origin);
      } finally {
        settle();
      }
    } finally {
      moved();
    }
  }

  /**
   * Move a file or a directory with everything below it. An existing destination is -32001 unless
   * `overwrite` (POSIX rename, the FUSE face): then a file replaces a file, keeping the
   * destination's history (the moved content becomes its next version), and a directory replaces
   * an empty directory; file over directory is EISDIR, directory over file ENOTDIR.
   */
  async rename(oldPath: string, newPath: string, origin: { overwrite?: boolean | undefined } & ChangeOrigin = {}): Promise<void> {
    const from = normalizeFilePath(oldPath);
    const to = normalizeFilePath(newPath);
    const moved = this.#moving(origin, [from, to]);
    try {
      await this.#rename(from, to, origin);
    } finally {
      moved();
    }
  }

  async #rename(from: string, to: string, origin: { overwrite?: boolean | undefined } & ChangeOrigin): Promise<void> {
    await this.#pastBarriers(origin);
    const settle = this.#check(origin, 'rename', [from, to], true);
    try {
      if (from === to) {
        if (!this.stat(from)) throw fileNotFound(from);
        return;
      }
      if (isWithin(to, from)) {
        throw new ValidationError(`Cannot move ${from} into itself (${to})`, { path: to, errno: 'EINVAL' });
      }
      const now = Date.now();
      const created = await this.#transact(origin, () => this.#renameIn(from, to, origin.overwrite ?? false, now));
      await this.#commit([...mkdirEvents(created, now), { type: 'rename', path: from, new_path: to, at: iso(now) }], origin);
    } finally {
      settle();
    }
  }

  async mkdir(
    path: string, opts: { parents?: boolean; existOk?: boolean; attributes?: EntryAttributes | undefined } & ChangeOrigin = {},
  ): Promise<void> {
    const p = normalizePath(path);
    await this.#pastBarriers(opts);
    const settle = p !== '/' ? this.#check(opts, 'mkdir', [p], false) : () => undefined;
    try {
      if (p === '/') {
        if (opts.parents || opts.existOk) return;
        throw new ExistsError('Directory already exists: /', { path: p });
      }
      const now = Date.now();
      const created = await this.#transact(opts, () => {
        const existing = this.#entries.get(entryKey(p));
        if (existing?.kind === 'dir') {
          if (opts.parents || opts.existOk) return [];
          throw new ExistsError(`Directory already exists: ${p}`, { path: p });
        }
        if (existing) throw new ExistsError(`File exists: ${p}`, { path: p });
        const missing = this.#checkParents(p, opts.parents ?? false);
        this.#createDirs(missing, now);
        this.#entries.put(entryKey(p), { kind: 'dir', created: now, modified: now, ...opts.attributes } satisfies DirRecord);
        this.#touch(parentOf(p), now);
        return [...missing, p];
      });
      await this.#commit(mkdirEvents(created, now), opts);
    } finally {
      settle();
    }
  }

  async rmdir(path: string, opts: { recursive?: boolean } & ChangeOrigin = {}): Promise<void> {
    const p = normalizePath(path);
    if (p === '/') throw new InvalidPathError('The root directory cannot be removed', path);
    const moved = this.#moving(opts, [p]);
    try {
      await this.#pastBarriers(opts);
      const settle = this.#check(opts, 'rmdir', [p], true);
      try {
        const now = Date.now();
        await this.#transact(opts, () => this.#removeDir(p, opts.recursive ?? false, now));
        await this.#commit([{ type: 'rmdir', path: p, at: iso(now) }], opts);
      } finally {
        settle();
      }
    } finally {
      moved();
    }
  }

  /**
   * Change the POSIX attributes of a file or directory (chmod, chown, utimes through the FUSE
   * face). Metadata only: no new version, no change event. Returns the updated record.
   */
  async setAttributes(path: string, changes: AttributeChanges, origin: ChangeOrigin = {}): Promise<EntryRecord> {
    const p = normalizeFilePath(path);
    await this.#pastBarriers(origin);
    const settle = this.#check(origin, 'write', [p], false);
    try {
      const entry = await this.#transact(origin, () => this.#changeAttributes(p, changes, Date.now()));
      if (!origin.fromBackend) for (const hook of this.#attributeHooks) await hook(p, entry);
      return entry;
    } finally {
      settle();
    }
  }

  /** Inside a transaction: the attribute change of {@link setAttributes} (also a {@link writeMany} item). */
  #changeAttributes(p: string, changes: AttributeChanges, now: number): EntryRecord {
    const rec = this.#entries.get(entryKey(p));
    if (!rec) throw new NotFoundError(`Not found: ${p}`, { path: p });
    const next: EntryRecord = { ...rec };
    if (changes.mode !== undefined) next.mode = changes.mode & 0o7777;
    if (changes.uid !== undefined) next.uid = changes.uid;
    if (changes.gid !== undefined) next.gid = changes.gid;
    if (changes.modified !== undefined && changes.modified !== rec.modified) {
      // The current version keeps its commit time (versions list), whatever the file's mtime.
      if (next.kind === 'file') {
        const at = next.versionAt ?? next.modified;
        if (at === changes.modified) delete next.versionAt;
        else next.versionAt = at;
      }
      next.modified = changes.modified;
    }
    // Any change of the entry is one of its ctime, which no change can set back.
    delete next.changed;
    Object.assign(next, changedField(next.modified, now));
    this.#entries.put(entryKey(p), next);
    return next;
  }

  // ---------------------------------------------------------------- listing and search

  /** Every entry below `dir` (or its direct children), sorted by path; directories end with `/`. */
  list(path: string, opts: { recursive?: boolean; prefix?: string | undefined } = {}): ListEntry[] {
    const dir = this.#directory(path);
    const prefix = opts.prefix === undefined ? undefined : opts.prefix.startsWith('/') ? opts.prefix : '/' + opts.prefix;
    const out: ListEntry[] = [];
    const ranges = opts.recursive ?? true ? subtreeRanges(dir) : [childrenRange(dir)];
    for (const range of ranges) {
      for (const { key, value } of this.#entries.range(range)) {
        const entry = listEntryOf(keyPath(key), value);
        if (prefix === undefined || entry.path.startsWith(prefix)) out.push(entry);
      }
    }
    return out.sort(byPath);
  }

  /** Paths below `path` matching a glob pattern relative to it; directories end with `/`. */
  glob(pattern: string, path = '/'): string[] {
    const dir = this.#directory(path);
    let rel = pattern;
    if (rel.startsWith('/')) {
      // An absolute pattern: make it relative to `dir` when it names a place inside it.
      const absBase = dir === '/' ? '/' : dir + '/';
      rel = rel.startsWith(absBase) ? rel.slice(absBase.length) : dir === '/' ? rel.slice(1) : '\u0000';
    }
    // posix: `[!ab]` negates a bracket, as in the usual glob syntax (picomatch treats `!` literally otherwise).
    const isMatch = picomatch(rel, { dot: true, posix: true });
    // Narrow the scan to the pattern's literal leading directories (src/**/*.ts scans src/ only).
    const { base } = picomatch.scan(rel);
    let scanDir = dir;
    if (base) {
      let candidate: string;
      try {
        candidate = normalizePath(dir === '/' ? '/' + base : dir + '/' + base);
      } catch {
        return []; // a literal part that is no valid path (too long, `..`, control characters) names nothing stored
      }
      const rec = this.stat(candidate);
      if (!rec) return [];
      if (rec.kind === 'dir') scanDir = candidate;
    }
    const out: string[] = [];
    if (scanDir !== dir && isMatch(relativeTo(scanDir, dir))) out.push(scanDir + '/');
    for (const range of subtreeRanges(scanDir)) {
      for (const { key, value } of this.#entries.range(range)) {
        const p = keyPath(key);
        if (isMatch(relativeTo(p, dir))) out.push(value.kind === 'dir' ? p + '/' : p);
      }
    }
    return out.sort();
  }

  /**
   * Lines matching a regex in the text files below `path`, scanned on a worker thread (see
   * fs/grep.ts: a pattern that backtracks without end is stopped, not the daemon). Content is
   * copied out of the store one chunk at a time, in batches; a file that turns out not to be
   * UTF-8 contributes nothing, even if earlier chunks matched.
   */
  async grep(opts: {
    pattern: string; path?: string; filePattern?: string | undefined; ignoreCase?: boolean; maxResults?: number;
    /** Only files this accepts are searched (the caller's read permission). */
    include?: ((path: string) => boolean) | undefined;
  }): Promise<GrepMatch[]> {
    const dir = this.#directory(opts.path ?? '/');
    Grepper.compile(opts.pattern, opts.ignoreCase ?? false);
    const fp = opts.filePattern;
    const fileMatch = fp === undefined ? undefined : picomatch(fp, { dot: true, posix: true, basename: !fp.includes('/') });
    const files: [string, FileRecord][] = [];
    for (const range of subtreeRanges(dir)) {
      for (const { key, value } of this.#entries.range(range)) {
        if (value.kind !== 'file' || value.size === 0) continue;
        const p = keyPath(key);
        if (fileMatch && !fileMatch(relativeTo(p, dir))) continue;
        if (opts.include && !opts.include(p)) continue;
        files.push([p, value]);
      }
    }
    files.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const blobs = this.#blobs;
    return this.#grepper.run({
      pattern: opts.pattern, ignoreCase: opts.ignoreCase ?? false, max: opts.maxResults ?? 1000, maxLine: GREP_MAX_LINE,
      // Read while the grep is under way: a file overwritten or deleted meanwhile may have lost its chunks.
      files: files.map(([path, rec]): GrepFile => {
        if (hasInline(rec)) {
          const inline = inlineOf(rec)!;
          return { path, chunkCount: 1, chunkSize: () => inline.length, chunkInto: (_i, target, at) => (target.set(inline, at), true) };
        }
        const chunkSize = (i: number) => Math.min(CHUNK_SIZE, rec.size - i * CHUNK_SIZE);
        return {
          path, chunkCount: rec.chunks.length, chunkSize,
          chunkInto: (i, target, at) => blobs.readRange(rec.chunks[i]!, 0, CHUNK_SIZE, target, at) === chunkSize(i),
        };
      }),
    });
  }

  /** Stops what the service runs besides the store (grep's idle workers). */
  close(): Promise<void> {
    return this.#grepper.close();
  }

  // ---------------------------------------------------------------- versions

  listVersions(path: string): VersionEntry[] {
    const p = normalizeFilePath(path);
    const out: VersionEntry[] = [];
    const range = versionsRange(p);
    const rows = [currentVersion(this.file(p))];
    for (const { value } of this.#versions.range({ start: range.end, end: range.start, reverse: true })) rows.push(value);
    for (const value of rows) {
      out.push({
        version: value.version, etag: value.etag, size: value.size, modified_at: new Date(value.modified),
        content_type: value.contentType, source: value.source,
      });
    }
    return out;
  }

  #version(p: string, version: number): VersionRecord {
    const rec = this.file(p);
    if (rec.version === version) return currentVersion(rec);
    const v = version < rec.version ? this.#versions.get(versionKey(p, version)) : undefined;
    if (!v) {
      throw new NotFoundError(`Version ${version} not found for ${p}`, { path: p, version });
    }
    return v;
  }

  /** The record of one version (its chunks, for reading it piecewise); -32000 when absent. */
  versionRecord(path: string, version: number): VersionRecord {
    return this.#version(normalizeFilePath(path), version);
  }

  getVersion(path: string, version: number): Buffer {
    const p = normalizeFilePath(path);
    return this.content(this.#version(p, version));
  }

  async rollback(path: string, version: number): Promise<{ success: true; version: number; etag: string }> {
    const p = normalizeFilePath(path);
    await this.#pastBarriers({});
    const settle = this.#check({}, 'write', [p], false);
    try {
      const now = Date.now();
      const result = await this.#store.transact(() => {
        const rec = this.file(p);
        const old = this.#version(p, version);
        const next = rec.version + 1;
        for (const hash of old.chunks) this.#ref(hash);
        // History is never rewritten: the old content comes back as a new version.
        this.#versions.put(versionKey(p, rec.version), currentVersion(rec));
        const { versionAt: _at, changed: _changed, inline: _inline, inline64: _inline64, ...rest } = rec;
        this.#entries.put(entryKey(p), {
          ...rest, version: next, etag: old.etag, size: old.size, chunks: old.chunks, ...inlineFields(old),
          contentType: old.contentType, modified: now, source: `rollback:${version}`,
        });
        return { version: next, etag: old.etag };
      });
      await this.#commit([{ type: 'write', path: p, etag: result.etag, version: result.version, at: iso(now) }]);
      return { success: true, ...result };
    } finally {
      settle();
    }
  }

  diffVersions(path: string, v1: number, v2: number, mode: 'metadata' | 'content'): VersionDiff | string {
    const p = normalizeFilePath(path);
    const a = this.#version(p, v1);
    const b = this.#version(p, v2);
    if (mode === 'metadata') {
      return {
        path: p, v1, v2, etag_v1: a.etag, etag_v2: b.etag, size_v1: a.size, size_v2: b.size,
        content_changed: a.etag !== b.etag,
      };
    }
    const text = (v: VersionRecord) => this.content(v).toString('utf8');
    return createTwoFilesPatch(`${p} (v${v1})`, `${p} (v${v2})`, text(a), text(b), undefined, undefined, { context: 3 });
  }

  // ---------------------------------------------------------------- trees (workspace snapshots)

  /**
   * The files below `dir` by relative path, each pinned: one more reference on every chunk, so
   * the content outlives later writes and deletes of the live files. No bytes are copied.
   * Release with {@link unpinTree}.
   */
  async pinTree(dir: string): Promise<Map<string, TreeFile>>;
  /**
   * The same, in one transaction with the caller's own checks (`before`, run first: it may throw)
   * and records (`after`, given the pinned files): a snapshot and its references commit together.
   */
  async pinTree<T>(dir: string, before: () => void, after: (files: Map<string, TreeFile>) => T): Promise<T>;
  async pinTree<T>(dir: string, before?: () => void, after?: (files: Map<string, TreeFile>) => T): Promise<T | Map<string, TreeFile>> {
    const d = normalizePath(dir);
    return this.#store.transact(() => {
      before?.();
      const files = new Map<string, TreeFile>();
      for (const range of subtreeRanges(d)) {
        for (const { key, value } of this.#entries.range(range)) {
          if (value.kind !== 'file') continue;
          // Snapshots share content by chunk references: inline content is stored as its one chunk
          // (its hash is the etag), referenced by the snapshot alone.
          const inline = inlineOf(value);
          if (inline) this.#ref(value.etag, inline);
          else for (const hash of value.chunks) this.#ref(hash);
          files.set(relativeTo(keyPath(key), d), {
            etag: value.etag, size: value.size, chunks: inline ? [value.etag] : value.chunks, contentType: value.contentType,
            mode: value.mode ?? DEFAULT_FILE_MODE, ...(value.symlink ? { symlink: true as const } : {}),
          });
        }
      }
      return after ? after(files) : files;
    });
  }

  /** Drop the references {@link pinTree} took. */
  async unpinTree(files: Iterable<TreeFile>): Promise<void> {
    const list = [...files];
    await this.#store.transact(() => {
      for (const f of list) for (const hash of f.chunks) this.#unref(hash);
    });
  }

  /**
   * Make the tree below `dir` equal to `files` in one transaction: files that differ come back as
   * a new version (their history is kept), missing ones are recreated, files not in `files` are
   * deleted. Directories in the way of a file are removed. Content is shared, never copied.
   * `before` runs first inside the same transaction (it may throw): the caller's proof that what
   * pins `files` (a snapshot) still exists, so no chunk can be released between the two.
   */
  async restoreTree(
    dir: string, files: ReadonlyMap<string, TreeFile>, before?: () => void,
  ): Promise<{ restored: number; deleted: number }> {
    const d = normalizePath(dir);
    await this.#pastBarriers({});
    const settle = this.#check({}, 'write', [d], true);
    try {
      const abs = (rel: string) => (d === '/' ? '/' + rel : d + '/' + rel);
      const now = Date.now();
      const changes: ChangeEvent[] = [];
      const result = await this.#transact({}, () => {
        before?.();
        const current = new Map<string, FileRecord>();
        for (const range of subtreeRanges(d)) {
          for (const { key, value } of this.#entries.range(range)) {
            if (value.kind === 'file') current.set(keyPath(key), value);
          }
        }
        let deleted = 0;
        for (const [p, rec] of current) {
          if (!files.has(relativeTo(p, d))) {
            this.#keepContent(p, rec);
            this.#removeFile(p, rec);
            this.#touch(parentOf(p), now);
            changes.push({ type: 'delete', path: p, at: iso(now) });
            deleted++;
          }
        }
        let restored = 0;
        for (const [rel, f] of files) {
          const p = abs(rel);
          const existing = this.#entries.get(entryKey(p));
          // Manifests written before modes were recorded have none: the live mode stays then.
          const mode = f.mode ?? (existing?.kind === 'file' ? existing.mode : undefined);
          if (existing?.kind === 'file' && existing.etag === f.etag && !existing.symlink === !f.symlink) {
            // Same content: only the mode may differ, and that is metadata, not a new version.
            if ((existing.mode ?? DEFAULT_FILE_MODE) !== (mode ?? DEFAULT_FILE_MODE)) {
              // The current version keeps its commit time (versions list), as in setAttributes.
              const { changed: _changed, ...kept } = existing;
              this.#entries.put(entryKey(p), {
                ...kept, mode: mode ?? DEFAULT_FILE_MODE, modified: now, versionAt: existing.versionAt ?? existing.modified,
              });
            }
            continue;
          }
          if (existing?.kind === 'dir') this.#removeSubtree(p);
          for (const a of ancestorsOf(p)) {
            const rec = this.#entries.get(entryKey(a));
            if (rec?.kind === 'file') this.#removeFile(a, rec);
            if (rec?.kind !== 'dir') {
              this.#entries.put(entryKey(a), { kind: 'dir', created: now, modified: now });
              this.#touch(parentOf(a), now);
              changes.push({ type: 'mkdir', path: a, at: iso(now) });
            }
          }
          if (existing?.kind !== 'file') this.#touch(parentOf(p), now);
          const kept = existing?.kind === 'file' ? existing : undefined;
          const version = (kept?.version ?? 0) + 1;
          for (const hash of f.chunks) this.#ref(hash);
          // The replaced version joins the history; the entry holds the current one.
          if (kept) this.#versions.put(versionKey(p, kept.version), currentVersion(kept));
          this.#entries.put(entryKey(p), {
            kind: 'file', version, etag: f.etag, size: f.size, chunks: f.chunks, contentType: f.contentType,
            created: kept?.created ?? now, modified: now, source: 'restore',
            ...(mode !== undefined ? { mode } : {}),
            ...(kept?.uid !== undefined ? { uid: kept.uid } : {}),
            ...(kept?.gid !== undefined ? { gid: kept.gid } : {}),
            ...(f.symlink ? { symlink: true } : {}),
          });
          changes.push({ type: 'write', path: p, etag: f.etag, version, at: iso(now) });
          restored++;
        }
        return { restored, deleted };
      });
      await this.#commit(changes);
      return result;
    } finally {
      settle();
    }
  }

  // ---------------------------------------------------------------- internals (inside transactions)

  /** Remove a directory entry and everything below it. */
  #removeSubtree(p: string): void {
    const below: [string, EntryRecord][] = [];
    for (const range of subtreeRanges(p)) {
      for (const { key, value } of this.#entries.range(range)) below.push([keyPath(key), value]);
    }
    for (const [path, rec] of below) {
      if (rec.kind === 'file') {
        this.#keepContent(path, rec);
        this.#removeFile(path, rec);
      } else {
        this.#entries.remove(entryKey(path));
      }
    }
    this.#entries.remove(entryKey(p));
  }

  /** `p` must be a directory (or the root). */
  #directory(path: string): string {
    const dir = normalizePath(path);
    const rec = this.stat(dir);
    if (!rec) throw new NotFoundError(`Directory not found: ${dir}`, { path: dir });
    if (rec.kind !== 'dir') throw notADirectory(dir);
    return dir;
  }

  /**
   * Check the ancestors of `p`: none may be a file. Returns the missing ones (outermost first);
   * when `create` is false a missing parent is -32000.
   */
  #checkParents(p: string, create: boolean): string[] {
    // Every entry's parent is a directory entry (or the root), so an existing parent settles it
    // with one lookup: its own ancestors are directories.
    const parent = parentOf(p);
    if (parent === '/') return [];
    const direct = this.#entries.get(entryKey(parent));
    if (direct?.kind === 'dir') return [];
    if (direct) throw notADirectory(parent);
    const missing: string[] = [];
    for (const dir of ancestorsOf(p)) {
      const rec = missing.length ? undefined : this.#entries.get(entryKey(dir));
      if (rec?.kind === 'file') throw notADirectory(dir);
      if (!rec) missing.push(dir);
    }
    if (missing.length && !create) {
      throw new NotFoundError(`Parent directory not found: ${parentOf(p)}`, { path: parentOf(p) });
    }
    return missing;
  }

  /** Inside a transaction: make the missing directories `dirs` (outermost first, as {@link #checkParents} gives them). */
  #createDirs(dirs: string[], now: number): void {
    if (dirs.length === 0) return;
    for (const dir of dirs) this.#entries.put(entryKey(dir), { kind: 'dir', created: now, modified: now } satisfies DirRecord);
    this.#touch(parentOf(dirs[0]!), now);
  }

  /** A pending hold turns into an ordinary reference (the chunk's count is unchanged). */
  #takeHold(hash: string): void {
    const n = this.#pending.get(hash) ?? 0;
    if (n <= 1) this.#pending.remove(hash);
    else this.#pending.put(hash, n - 1);
  }

  /** A pending hold is given up: one reference fewer. */
  #dropHold(hash: string): void {
    this.#takeHold(hash);
    this.#unref(hash);
  }

  /** One more reference on a chunk, storing it if it is new (then `data`, or a loader of it, is required). */
  #ref(hash: string, data?: Uint8Array | (() => Uint8Array)): void {
    // A stored chunk without a refs row has one reference; an absent chunk has none (and no row).
    if (data !== undefined && typeof data !== 'function') {
      // The bytes are at hand (every RPC write): store them unless present, in one lookup.
      if (this.#blobs.putIfAbsent(hash, data)) return;
    } else if (!this.#blobs.has(hash)) {
      // A loader is called only when the store lacks the chunk (a FUSE file's unchanged pieces).
      if (!data) throw new Error(`chunk ${hash} has no references and no data`);
      this.#blobs.put(hash, data());
      return;
    }
    this.#refs.put(hash, (this.#refs.get(hash) ?? 1) + 1);
  }

  /** One reference fewer; the last one frees the chunk. */
  #unref(hash: string): void {
    const n = this.#refs.get(hash) ?? 1;
    if (n <= 1) {
      this.#refs.remove(hash);
      this.#blobs.delete(hash);
    } else if (n === 2) {
      this.#refs.remove(hash);
    } else {
      this.#refs.put(hash, n - 1);
    }
  }

  /** Inside a transaction: the keepers hold what they keep of file `p`, about to be removed ({@link ContentKeeper}). */
  #keepContent(p: string, rec: FileRecord): void {
    for (const keeper of this.#keepers) {
      const keep = keeper(p, rec);
      if (!keep) continue;
      const held = keep.hashes.map((hash) => {
        if (!this.#blobs.has(hash)) return false;
        this.#ref(hash);
        this.#pending.put(hash, (this.#pending.get(hash) ?? 0) + 1);
        return true;
      });
      if (!this.#kept) throw new Error('a file was removed outside FsService\'s transactions');
      this.#kept.push(() => keep.kept(held));
    }
  }

  /** Remove a file with its history, dropping the references of every version. */
  #removeFile(p: string, rec: FileRecord): void {
    for (const { key, value } of [...this.#versions.range(versionsRange(p))]) {
      for (const hash of value.chunks) this.#unref(hash);
      this.#versions.remove(key);
    }
    for (const hash of rec.chunks) this.#unref(hash);
    this.#entries.remove(entryKey(p));
  }

  /**
   * rename() of a file over a file: `to` keeps its history and gains a version with the content of
   * `from` (and its attributes, as the moved inode would have); `from` and its history go.
   */
  #replaceFile(from: string, src: FileRecord, to: string, dst: FileRecord, now: number): void {
    const version = dst.version + 1;
    // Reference the content for `to` before `from` drops its references, so no chunk reaches zero.
    for (const hash of src.chunks) this.#ref(hash);
    const contentType = contentTypeOf(to);
    this.#versions.put(versionKey(to, dst.version), currentVersion(dst));
    const { versionAt: _at, source: _source, changed: _changed, ...moved } = src;
    this.#entries.put(entryKey(to), {
      ...moved, version, contentType, created: dst.created, source: 'rename', ...(src.modified === now ? {} : { versionAt: now }),
      ...changedField(src.modified, now),
    });
    this.#removeFile(from, src);
  }

  #move(from: string, to: string, rec: EntryRecord): void {
    this.#entries.remove(entryKey(from));
    this.#entries.put(entryKey(to), rec);
    if (rec.kind !== 'file') return;
    for (const { key, value } of [...this.#versions.range(versionsRange(from))]) {
      this.#versions.remove(key);
      this.#versions.put(versionKey(to, value.version), value);
    }
  }

  /** Run the guards; returns what to call once the change is settled (committed and mirrored, or refused). */
  #check(origin: ChangeOrigin, kind: MutationKind, paths: readonly string[], subtree: boolean, shown = this.#shownStored): () => void {
    if (origin.fromBackend) return noop;
    const settles: (() => void)[] = [];
    const ctx: GuardContext = { shown, answered: origin.answered === true };
    try {
      for (const guard of this.#guards) {
        const settle = guard(kind, paths, subtree, ctx);
        if (settle) settles.push(settle);
      }
    } catch (err) {
      for (const settle of settles) settle();
      throw err;
    }
    return settles.length === 0 ? noop : () => { for (const settle of settles) settle(); };
  }

  /** The {@link ChangeOrigin.face} whose change published `event`, when it named one. */
  madeBy(event: ChangeEvent): object | undefined {
    return this.#faces.get(event);
  }

  /** After a commit: run the hooks, then publish. A failing hook is reported after publishing. */
  async #commit(events: readonly ChangeEvent[], origin?: ChangeOrigin): Promise<void> {
    if (origin?.face) for (const e of events) this.#faces.set(e, origin.face);
    let failure: unknown;
    for (const hook of this.#hooks) {
      try {
        await hook(events);
      } catch (err) {
        failure ??= err;
      }
    }
    for (const e of events) this.#events.publish(e);
    if (failure) throw failure;
  }
}

/**
 * A face's write of a path another face is renaming or removing at that moment
 * ({@link FsService.movesUnderway}): the face waits for that change, then writes where it left
 * the file. Never reaches a client.
 */
export class MoveUnderwayError extends Error {
  constructor(readonly path: string) {
    super(`${path} is being renamed or removed by another face`);
  }
}

/** The layout {@link FsService.upgrade} brings a data directory to. */
const LAYOUT_KEY = 'layout';
/**
 * 2: the current version lives in the entry, no `refs` row for one reference; 3: small content
 * inline; 4: chunks stored in 64 KiB pieces (store/lmdb), so a build that read whole chunks refuses it.
 */
const ENTRY_HOLDS_CURRENT_LAYOUT = 2;
const LAYOUT = 4;
const noop = (): void => undefined;

const ROOT: DirRecord = Object.freeze({ kind: 'dir', created: 0, modified: 0 }) as DirRecord;
/** The fs_meta row of the root's mtime (and ctime): the last change of a name in it; no row: none since 2026-11-25. */
const ROOT_MODIFIED_KEY = 'root:modified';

/**
 * The POSIX attributes a new version of a file carries: the writer's, else the entry's own. Writing
 * content over a symbolic link makes a regular file, so a link's attributes are not kept.
 */
function keptAttributes(existing: EntryRecord | undefined, given: EntryAttributes | undefined): EntryAttributes {
  const own = existing?.kind === 'file' && existing.symlink ? undefined : existing;
  const out: EntryAttributes = {};
  const mode = given?.mode ?? own?.mode;
  const uid = given?.uid ?? own?.uid;
  const gid = given?.gid ?? own?.gid;
  if (mode !== undefined) out.mode = mode;
  if (uid !== undefined) out.uid = uid;
  if (gid !== undefined) out.gid = gid;
  return out;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function mkdirEvents(dirs: string[], now: number): ChangeEvent[] {
  return dirs.map((dir) => ({ type: 'mkdir', path: dir, at: iso(now) }));
}

function first<T>(it: Iterable<T>): T | undefined {
  for (const x of it) return x;
  return undefined;
}

function byPath(a: { path: string }, b: { path: string }): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/** A chunk of a new version: its hash, bytes (or their loader) and whether the writer holds it. */
type StoredPiece = { hash: string; data: Uint8Array | (() => Uint8Array); held?: boolean | undefined };

/** Where {@link FsService.writeMany} keeps a caller's mark. */
function markKey(name: string): string {
  return `mark:${name}`;
}

/**
 * The etag, size and chunk hashes of content given as pieces. With `knownEtag`, and every piece's
 * hash and size known, nothing is loaded (FUSE hashes chunks while they are written).
 */
function hashPieces(pieces: readonly ContentPiece[], knownEtag?: string): { etag: string; size: number; chunks: StoredPiece[] } {
  const check = (i: number, n: number) => {
    if (n > CHUNK_SIZE || (n < CHUNK_SIZE && i < pieces.length - 1)) {
      throw new Error(`writeChunks: piece ${i} of ${pieces.length} has ${n} bytes (chunks are ${CHUNK_SIZE})`);
    }
  };
  if (knownEtag !== undefined && pieces.length > 0 && pieces.every((c) => c.hash !== undefined && c.size !== undefined)) {
    let size = 0;
    for (const [i, piece] of pieces.entries()) {
      check(i, piece.size!);
      size += piece.size!;
    }
    return { etag: knownEtag, size, chunks: pieces.map((c) => ({ hash: c.hash!, data: c.data, held: c.held })) };
  }
  const whole = new EtagAndChunks();
  const chunks: StoredPiece[] = [];
  let size = 0;
  for (const [i, piece] of pieces.entries()) {
    const data = typeof piece.data === 'function' ? piece.data() : piece.data;
    const n = data.byteLength;
    check(i, n);
    size += n;
    // A loaded piece is not kept: it is loaded again inside the commit if the store lacks it.
    if (piece.held && piece.hash === undefined) throw new Error(`writeChunks: held piece ${i} has no hash`);
    const own = piece.hash === undefined ? whole.add(data, true) : whole.add(data);
    chunks.push({ hash: piece.hash ?? own!, data: piece.data, held: piece.held });
  }
  const etag = whole.etag();
  // An empty file is one empty chunk, as write() stores it.
  if (chunks.length === 0) chunks.push({ hash: etag, data: new Uint8Array(0) });
  return { etag, size, chunks };
}

/**
 * The bytes a new version keeps in its entry: those of a one-chunk content of at most
 * {@link INLINE_MAX_BYTES} that the writer did not store ahead (a held chunk stays a chunk).
 * No copy: the entry's put encodes them into the row at once (msgpack copies the bytes).
 */
function inlineContent(size: number, pieces: readonly StoredPiece[]): ReturnType<typeof encodeInline> {
  if (size > INLINE_MAX_BYTES || pieces.length !== 1 || pieces[0]!.held) return undefined;
  const { data } = pieces[0]!;
  return encodeInline(typeof data === 'function' ? data() : data, INLINE_MAX_BYTES);
}

/** `content`'s etag and its chunks with their addresses (one pass over the bytes where svc's SHA-256 addon is). */
function splitChunks(content: Uint8Array): { etag: string; chunks: { hash: string; data: Uint8Array }[] } {
  if (content.byteLength <= CHUNK_SIZE) {
    const etag = sha256(content);
    return { etag, chunks: [{ hash: etag, data: content }] };
  }
  const whole = new EtagAndChunks();
  const chunks: { hash: string; data: Uint8Array }[] = [];
  for (let off = 0; off < content.byteLength; off += CHUNK_SIZE) {
    const data = content.subarray(off, Math.min(off + CHUNK_SIZE, content.byteLength));
    chunks.push({ hash: whole.add(data, true), data });
  }
  return { etag: whole.etag(), chunks };
}

function metadataOf(path: string, rec: EntryRecord): FileMetadata {
  return rec.kind === 'file'
    ? {
      path, size: rec.size, etag: rec.etag, version: rec.version, created_at: new Date(rec.created),
      modified_at: new Date(rec.modified), content_type: rec.contentType, is_directory: false,
    }
    : {
      path, size: 0, etag: null, version: null, created_at: new Date(rec.created), modified_at: new Date(rec.modified),
      content_type: 'inode/directory', is_directory: true,
    };
}

function listEntryOf(path: string, rec: EntryRecord): ListEntry {
  return rec.kind === 'file'
    ? {
      path, is_directory: false, size: rec.size, etag: rec.etag, version: rec.version, content_type: rec.contentType,
      created_at: new Date(rec.created), modified_at: new Date(rec.modified),
    }
    : { path: path + '/', is_directory: true, size: 0, created_at: new Date(rec.created), modified_at: new Date(rec.modified) };
}

/** How many times each value occurs. */
function countOf(values: Iterable<string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const v of values) out.set(v, (out.get(v) ?? 0) + 1);
  return out;
}
