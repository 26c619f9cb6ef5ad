/**
 * @module fs/uploads
 * Uploads of a file in chunk-sized parts, committed as one version: how a client writes a file
 * larger than one request may carry (the remote FUSE mount commits every file this way), without
 * the daemon holding it whole in memory. Parts wait in a {@link Spool} file; the commit hands them
 * to {@link FsService.writeChunks}, which reads each part back when it needs it.
 *
 * A session belongs to the subject that began it (others get "not found"), and is dropped after
 * {@link UPLOAD_IDLE_MS} without a part or on abort. Nothing is visible before the commit.
 */
import { randomUUID } from 'node:crypto';
import { NotFoundError, InvalidParamsError } from '../core/errors.js';
import type { OperationContext } from '../core/context.js';
import { Spool } from './spool.js';
import { CHUNK_SIZE, type ContentPiece } from './service.js';

/** Idle time after which an unfinished upload is dropped. */
export const UPLOAD_IDLE_MS = 10 * 60_000;
/** Most parts one upload may have (1 MiB each: 64 GiB). */
export const MAX_UPLOAD_PARTS = 65_536;

interface Session {
  id: string;
  path: string;
  owner: string;
  spool: Spool;
  /** Part index → its size. */
  parts: Map<number, number>;
  touched: number;
}

function ownerOf(ctx: OperationContext): string {
  return `${ctx.tenantId}\u0000${ctx.subjectType}\u0000${ctx.subjectId}`;
}

export class Uploads {
  readonly #spoolDir: string;
  readonly #idleMs: number;
  readonly #sessions = new Map<string, Session>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(opts: { spoolDir: string; idleMs?: number }) {
    this.#spoolDir = opts.spoolDir;
    this.#idleMs = opts.idleMs ?? UPLOAD_IDLE_MS;
    this.#sweeper = setInterval(() => void this.#sweep(), Math.min(this.#idleMs, 60_000));
    this.#sweeper.unref();
  }

  /** Start an upload to `path` (already normalised and checked by the caller). */
  begin(path: string, ctx: OperationContext): string {
    const id = randomUUID();
    this.#sessions.set(id, { id, path, owner: ownerOf(ctx), spool: new Spool(this.#spoolDir), parts: new Map(), touched: Date.now() });
    return id;
  }

  /** The path an upload writes to (for permission checks before its commit). */
  path(id: string, ctx: OperationContext): string {
    return this.#session(id, ctx).path;
  }

  /** Store part `index` (bytes [index * CHUNK_SIZE, ...) of the file); a part sent again replaces the earlier one. */
  async part(id: string, ctx: OperationContext, index: number, data: Uint8Array): Promise<{ received: number }> {
    const s = this.#session(id, ctx);
    if (data.byteLength > CHUNK_SIZE) throw new InvalidParamsError(`a part holds at most ${CHUNK_SIZE} bytes (got ${data.byteLength})`);
    if (index >= MAX_UPLOAD_PARTS) throw new InvalidParamsError(`an upload has at most ${MAX_UPLOAD_PARTS} parts`);
    s.touched = Date.now();
    await s.spool.write(index, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    s.parts.set(index, data.byteLength);
    return { received: s.parts.size };
  }

  /**
   * The parts as writeChunks pieces (read from the spool when needed), after checking they make a
   * whole file of `size` bytes: parts 0..n-1 all present, every part but the last full.
   * `run` does the commit; the session ends whatever it does.
   */
  async finish<T>(id: string, ctx: OperationContext, size: number, run: (path: string, pieces: ContentPiece[]) => Promise<T>): Promise<T> {
    const s = this.#session(id, ctx);
    const count = Math.ceil(size / CHUNK_SIZE);
    if (s.parts.size !== count) {
      throw new InvalidParamsError(`upload ${id} has ${s.parts.size} parts; a file of ${size} bytes needs ${count}`, { upload_id: id, size });
    }
    const pieces: ContentPiece[] = [];
    for (let i = 0; i < count; i++) {
      const want = Math.min(CHUNK_SIZE, size - i * CHUNK_SIZE);
      const got = s.parts.get(i);
      if (got !== want) {
        throw new InvalidParamsError(
          got === undefined ? `upload ${id} lacks part ${i}` : `part ${i} of upload ${id} has ${got} bytes, expected ${want}`,
          { upload_id: id, part: i },
        );
      }
      pieces.push({ data: () => s.spool.readSync(i, want) });
    }
    this.#sessions.delete(id);
    try {
      return await run(s.path, pieces);
    } finally {
      await s.spool.close();
    }
  }

  async abort(id: string, ctx: OperationContext): Promise<void> {
    const s = this.#session(id, ctx);
    this.#sessions.delete(id);
    await s.spool.close();
  }

  /** Open uploads (for tests and status). */
  get size(): number {
    return this.#sessions.size;
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    for (const s of this.#sessions.values()) await s.spool.close();
    this.#sessions.clear();
  }

  #session(id: string, ctx: OperationContext): Session {
    const s = this.#sessions.get(id);
    if (!s || s.owner !== ownerOf(ctx)) throw new NotFoundError(`Upload not found: ${id}`, { upload_id: id });
    return s;
  }

  async #sweep(): Promise<void> {
    const now = Date.now();
    for (const s of [...this.#sessions.values()]) {
      if (now - s.touched < this.#idleMs) continue;
      this.#sessions.delete(s.id);
      await s.spool.close().catch(() => undefined);
    }
  }
}
