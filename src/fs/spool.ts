/**
 * @module fs/spool
 * Chunk-sized pieces of content that should not be held in memory (an open FUSE file's written
 * chunks, an upload's parts), kept in an unlinked temp file on local disk: a crash leaves nothing
 * behind, and only the chunks written out take space (the file is sparse).
 */
import { mkdir, open as openAsync, unlink, type FileHandle } from 'node:fs/promises';
import { readSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { CHUNK_SIZE } from './service.js';

const CS = CHUNK_SIZE;

/**
 * Written chunks that do not fit in memory, at offset `index * CHUNK_SIZE` of an unlinked temp file
 * (sparse: only the chunks written out take space). Local disk only: never a path in a mount.
 */
export class Spool {
  readonly #dir: string;
  #file: FileHandle | undefined;
  #opening: Promise<FileHandle> | undefined;

  constructor(dir: string) {
    this.#dir = dir;
  }

  async write(index: number, data: Buffer): Promise<void> {
    const fh = await this.#open();
    for (let done = 0; done < data.length;) {
      const { bytesWritten } = await fh.write(data, done, data.length - done, index * CS + done);
      done += bytesWritten;
    }
  }

  async read(index: number, len: number): Promise<Buffer> {
    const fh = await this.#open();
    const buf = Buffer.alloc(len);
    for (let done = 0; done < len;) {
      const { bytesRead } = await fh.read(buf, done, len - done, index * CS + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return buf;
  }

  /** `len` bytes from `offset` within chunk `index` into `buf` at `at`; returns the bytes read. */
  async readInto(index: number, offset: number, buf: Buffer, at: number, len: number): Promise<number> {
    const fh = await this.#open();
    let done = 0;
    while (done < len) {
      const { bytesRead } = await fh.read(buf, at + done, len - done, index * CS + offset + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done;
  }

  /**
   * Synchronous read (a commit in process streams chunks from here inside the store transaction).
   * With `into` (at least `len` bytes) the bytes land there instead of in a new buffer: reusing one
   * buffer spares a fresh 1 MiB allocation, and its page faults, per chunk.
   */
  readSync(index: number, len: number, into?: Buffer): Buffer {
    if (!this.#file) throw new Error('spool read before any write');
    const buf = into ? into.subarray(0, len) : Buffer.alloc(len);
    let done = 0;
    while (done < len) {
      const n = readSync(this.#file.fd, buf, done, len - done, index * CS + done);
      if (n === 0) break;
      done += n;
    }
    if (into && done < len) buf.fill(0, done);
    return buf;
  }

  /** Free the file's space; the spool may be used again afterwards. */
  async close(): Promise<void> {
    const fh = this.#file ?? (this.#opening ? await this.#opening.catch(() => undefined) : undefined);
    this.#file = undefined;
    this.#opening = undefined;
    await fh?.close();
  }

  #open(): Promise<FileHandle> {
    if (this.#file) return Promise.resolve(this.#file);
    this.#opening ??= (async () => {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
      const path = join(this.#dir, `svc-spool-${process.pid}-${randomBytes(8).toString('hex')}`);
      const fh = await openAsync(path, 'wx+', 0o600);
      await unlink(path).catch(() => undefined);
      this.#file = fh;
      return fh;
    })();
    return this.#opening;
  }
}
