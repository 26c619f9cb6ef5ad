/**
 * @module transports/fuse/backend
 * What the FUSE operations need from the file tree, as one small interface with two
 * implementations: in-process (the daemon's own FsService, no RPC hop) and remote (the typed RPC
 * client, for `svc mount --remote-url`). Errors are the service's SvcErrors (in-process) or
 * RpcErrors carrying the same codes (remote); the operations map both to errno.
 */
import { createHash } from 'node:crypto';
import type { ChangeEvent } from '../../core/events.js';
import { CHUNK_SIZE, type AttributeChanges, type ContentKeeper, type HoldRequest } from '../../fs/service.js';
import type { EntryAttributes } from '../../fs/records.js';

export type NodeKind = 'file' | 'dir' | 'symlink';

/** What getattr needs about an entry: sizes and times from records, never from content. */
export interface NodeInfo {
  kind: NodeKind;
  size: number;
  /** Permission bits; absent: 0o644 for files, 0o755 for directories. */
  mode?: number | undefined;
  uid?: number | undefined;
  gid?: number | undefined;
  /** ms since the epoch. */
  mtime: number;
  ctime: number;
  version?: number | undefined;
  etag?: string | undefined;
  /**
   * Bytes of the content that are stored, not counting whole chunks of zeros (the holes a sparse
   * extension leaves): what `st_blocks` reports, so `du` shows a sparse file's real usage. Absent:
   * the size.
   */
  allocated?: number | undefined;
}

/** One version of a file, as `/.versions/<path>/` lists it. */
export interface VersionInfo {
  version: number;
  size: number;
  /** ms since the epoch. */
  modified: number;
}

/**
 * A stored file content (current or an older version), read chunk by chunk: chunk `i` covers bytes
 * `[i * CHUNK_SIZE, (i + 1) * CHUNK_SIZE)`.
 */
export interface StoredContent {
  size: number;
  version: number;
  etag: string;
  load(index: number): Promise<Buffer>;
  /** The same, synchronously, when the store allows it (in process: lets a commit stream chunks). */
  loadSync?(index: number): Buffer;
  /**
   * Bytes `[from, to)` of chunk `index` (clipped to its end) copied into `target` at `at`: how many.
   * Only those bytes are copied (in process: only the store's pieces they lie in), so a read needs
   * no copy of the whole chunk kept between reads; without it, chunks are loaded whole.
   */
  loadRange?(index: number, from: number, to: number, target: Buffer, at: number): number;
  /**
   * Bytes `[from, to)` of chunk `index` fetched alone (a remote store: one `read_range` of just
   * those bytes), for a read that does not follow the last one: a random 4 KiB read then moves
   * 4 KiB, not the whole 1 MiB chunk.
   */
  fetchRange?(index: number, from: number, to: number): Promise<Buffer>;
  /** The chunk's SHA-256 when known without reading it (saves hashing it again on commit). */
  hash(index: number): string | undefined;
  /**
   * The open file this content backs was renamed to `path` (it or a directory above it): a store
   * read by path (remote) reads from there. Absent where content is read by chunk hash.
   */
  moved?(path: string): void;
}

/**
 * One chunk of an open file handed to a commit: every piece but the last is CHUNK_SIZE bytes. Its
 * bytes are read when the commit needs them, so a large file is never held whole in memory.
 */
export interface CommitPiece {
  size: number;
  /** SHA-256 of the bytes when known without reading them (an unchanged stored chunk). */
  hash?: string | undefined;
  /** Stored ahead of the commit with a pending hold ({@link FuseBackend.hold}), which the commit takes over. */
  held?: boolean | undefined;
  read(): Promise<Buffer>;
  /**
   * Present when the bytes can be read synchronously (memory, the spool file, the local store).
   * The bytes returned may be overwritten by the next readSync of a piece of the same commit (a
   * spooled chunk is read into one reused buffer): use them before reading the next piece.
   */
  readSync?: (() => Buffer) | undefined;
}

let zeroChunk: string | undefined;

/**
 * The SHA-256 of CHUNK_SIZE zero bytes: the chunk a sparse extension stores for each whole chunk
 * of its hole (the mount counts such chunks as unallocated and reports them to SEEK_HOLE).
 */
export function zeroChunkHash(): string {
  return (zeroChunk ??= createHash('sha256').update(Buffer.alloc(CHUNK_SIZE)).digest('hex'));
}

/** A piece held in memory. */
export function memoryPiece(data: Buffer): CommitPiece {
  return { size: data.length, read: async () => data, readSync: () => data };
}

export interface CommitOptions {
  attributes?: EntryAttributes | undefined;
  symlink?: boolean | undefined;
  /** Modification time to record (ms): the open file's last write, not the commit's own time. */
  modified?: number | undefined;
  /** SHA-256 of the whole content when computed while it was written (every piece then has its hash). */
  etag?: string | undefined;
  /**
   * Stored only so that a file created or truncated, and closed without a write, outlives a crash
   * (the flush: the release that would commit it comes after close(2) has returned). While it is
   * still queued, the next commit of the same path replaces it instead of following it, so a
   * shell's `echo x > f` (a flush before the write) still makes one version. See
   * {@link FuseBackend.holdsProvisional} and {@link FuseBackend.closed}.
   */
  provisional?: boolean | undefined;
}

export interface CommitResult {
  version: number;
  etag: string;
  size: number;
}

export interface SpaceInfo {
  blockSize: number;
  blocks: number;
  blocksFree: number;
  files: number;
  filesFree: number;
}

export interface FuseBackend {
  /** Human name for logs: `in-process` or the remote URL. */
  readonly description: string;
  /**
   * Whether a {@link CommitOptions.provisional} commit of `size` bytes at `path` would be queued
   * (and so replaced by the next commit of the path): absent or false, the mount makes none.
   */
  holdsProvisional?(path: string, size: number): boolean;
  /**
   * The mount's last handle of the file at `path` is released: a provisional commit of it still
   * queued waits no longer for the close that would replace it.
   */
  closed?(path: string): void;
  /**
   * Answers in process, most requests without waiting for I/O: the mount then watches for the next
   * request a moment before its thread sleeps (FUSE_SPIN_MICROS). A remote backend's answers come
   * over the network, so waiting would only delay them.
   */
  readonly inProcess?: boolean;
  /**
   * The commit uses the piece hashes and etag it is given instead of hashing again (in process): the
   * mount then hashes chunks on a worker thread while a file is written.
   */
  readonly reusesHashes?: boolean;
  /**
   * Store chunks of a file still being written, each with a pending hold, and give up one hold per
   * hash of `release` (in process: FsService.holdChunks). Absent: chunks are stored by the commit.
   */
  hold?(requests: HoldRequest[], release: string[]): Promise<boolean[]>;
  /** A stored chunk's bytes by hash (present with {@link hold}). */
  chunk?(hash: string): Buffer;
  /** Bytes `[from, to)` of a stored chunk copied into `target` at `at`: how many. */
  chunkRange?(hash: string, from: number, to: number, target: Buffer, at: number): number;
  /** Local directory for the spool files of open files' written chunks (never inside a mount). */
  readonly spoolDir: string;
  /** The entry at a path, or undefined. Paths are absolute and normalised (FUSE gives them so). */
  stat(path: string): Promise<NodeInfo | undefined>;
  /** Direct children of a directory: [name, info]. */
  list(dir: string): Promise<[string, NodeInfo][]>;
  /** The current content of a file (for reading and as the base of an open file). */
  content(path: string): Promise<StoredContent>;
  /** Throws when a write to `path` would be refused (read-only mount): checked at open, not at close. */
  checkWritable(path: string): Promise<void>;
  /** Store `pieces` as the file's next version (creating it and its parents when missing). */
  commit(path: string, pieces: CommitPiece[], opts?: CommitOptions): Promise<CommitResult>;
  remove(path: string): Promise<void>;
  /** POSIX rename: replaces an existing file or empty directory at `to`. */
  rename(from: string, to: string): Promise<void>;
  mkdir(path: string, attributes: EntryAttributes): Promise<void>;
  rmdir(path: string): Promise<void>;
  setAttributes(path: string, changes: AttributeChanges): Promise<void>;
  /** Versions of a file, oldest first. */
  versions(path: string): Promise<VersionInfo[]>;
  /**
   * One version of a file, undefined when it has none of that number. Optional: without it the
   * mount finds it in {@link versions}, which lists them all (a lookup or open of each of n
   * versions under /.versions then reads n of them).
   */
  version?(path: string, version: number): Promise<VersionInfo | undefined>;
  versionContent(path: string, version: number): Promise<StoredContent>;
  space(): Promise<SpaceInfo>;
  /** Changes committed through any face (RPC, WebSocket, other mounts, this one); returns unsubscribe. */
  onChange(listener: (event: ChangeEvent) => void): () => void;
  /**
   * Calls `listener` when changes may have been missed and the backend is in touch again (a remote
   * mount's change watch reconnected): anything may have changed meanwhile. Returns unsubscribe.
   */
  onLostChanges?(listener: () => void): () => void;
  /**
   * Resolves once another face's renames and removals under way of `path` or a directory above it
   * are done and their events delivered (FsService.movesUnderway); undefined when there are none.
   * Where the backend cannot tell (a remote mount), absent.
   */
  movesUnderway?(path: string): Promise<void> | undefined;
  /**
   * Let `keeper` keep what an open file still reads of a stored file another face removes (FsService's
   * ContentKeeper, with the removed version's content as `current`), so its descriptors read on as
   * on a local disk. Returns the function that stops it. Where the backend cannot (a remote mount), absent.
   */
  keepContent?(keeper: (path: string, current: StoredContent) => ReturnType<ContentKeeper>): () => void;
  /**
   * Whether `event` is a change this backend made, where it can tell exactly (the in-process
   * backend: FsService.madeBy). Absent: the mount tells by the paths it is changing or changed
   * moments ago (transports/fuse/kernel-cache, OwnChanges).
   */
  isOwnChange?(event: ChangeEvent): boolean;
  /**
   * Resolves once every change this backend has stored so far is durable (fsync). The in-process
   * backend commits without waiting for the flush (as a local disk's close() does not sync) and
   * waits for it here; the remote one's RPC writes are answered only once durable already.
   */
  sync(): Promise<void>;
  close(): Promise<void>;
}
