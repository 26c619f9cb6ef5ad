/**
 * @module transports/fuse/journal
 * The in-process mount's journal of small-file closes answered before their commit.
 *
 * A close of a small file (or an unlink of a file, a directory made or removed, a rename of a file
 * still queued, or an attribute change of a file or directory) is answered once its record is appended here (one plain write(), no
 * fsync: the kernel holds it, so it survives a crash of the daemon as a local disk's close() does),
 * and many closes are then committed in ONE LMDB transaction (the local backend's group commit),
 * which also stores the sequence number of the last record it applied ({@link JOURNAL_MARK}). At
 * start, before the mount and before serving, {@link FuseJournal.recover} replays the records
 * beyond that number in order, durably, and empties the file. The file is emptied again once it
 * has grown past {@link ROTATE_BYTES} and every record in it is applied (the backend waits for
 * that before appending more).
 *
 * Record: magic (u32 BE), header length (u32), data length (u32), CRC-32 of header and data (u32),
 * header (JSON: seq, path, modified, attributes, symlink, delete, change, mkdir, rmdir, renameTo, replaces), data (the
 * file's whole content; empty for the other kinds). A torn
 * or corrupt tail (a write cut short) ends the replay there: such a close was never answered.
 */
import { closeSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Logger } from '../../core/log.js';
import type { EntryAttributes } from '../../fs/records.js';
import type { AttributeChanges, BatchItem, FsService } from '../../fs/service.js';

/** The journal's file name under the data directory. */
export const JOURNAL_FILE = 'fuse-journal';
/** Name of the mark (FsService.mark) holding the last applied record's sequence number. */
export const JOURNAL_MARK = 'fuse-journal';
/** The file is emptied once it is larger than this and fully applied. */
export const ROTATE_BYTES = 8 * 1024 * 1024;
const MAGIC = 0x53564a31; // "SVJ1"
const FRAME = 16;

/** One journaled change: a file's whole new content, its deletion or rename, a change of its attributes, or a directory made or removed. */
export interface JournalRecord {
  seq: number;
  path: string;
  /** An unlink (no content). */
  delete?: boolean | undefined;
  /** An attribute change of a file or directory, stored or journaled before it (no content). */
  change?: AttributeChanges | undefined;
  /** A directory made (no content), with `attributes` and `modified`. */
  mkdir?: boolean | undefined;
  /** An empty directory removed (no content). */
  rmdir?: boolean | undefined;
  /** The file renamed to this path, replacing what is there (no content). */
  renameTo?: string | undefined;
  /**
   * A close that replaced a provisional close of its path while that was still queued: the
   * sequence numbers of that close's record and of the attribute changes folded into it, which a
   * replay skips (this record carries their attributes), so a crash leaves one version, as a run
   * without one does.
   */
  replaces?: number[] | undefined;
  /** Modification time to record, ms. */
  modified: number;
  attributes?: EntryAttributes | undefined;
  symlink?: boolean | undefined;
  data: Buffer;
}

export class FuseJournal {
  readonly file: string;
  #fd: number | undefined;
  #bytes = 0;
  #seq: number;
  /** Records were appended since everything was last applied (see {@link applied}). */
  #unapplied = false;

  private constructor(file: string, lastSeq: number) {
    this.file = file;
    this.#seq = lastSeq;
  }

  /**
   * Replay what an earlier run answered but did not commit (records beyond the store's mark), in
   * order, in one durable transaction; then empty the file. Returns the journal, ready to append.
   */
  static async recover(deps: { dataDir: string; fs: FsService; log: Logger }): Promise<FuseJournal> {
    const file = join(deps.dataDir, JOURNAL_FILE);
    const applied = deps.fs.mark(JOURNAL_MARK) ?? 0;
    let records: JournalRecord[] = [];
    try {
      records = parseJournal(readFileSync(file));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    // Provisional closes replaced by a later close (and changes folded into them) are not replayed.
    const replaced = new Set(records.flatMap((r) => (r.seq > applied ? r.replaces ?? [] : [])));
    const pending = records.filter((r) => r.seq > applied && !replaced.has(r.seq));
    let last = records.reduce((max, r) => Math.max(max, r.seq), applied);
    if (pending.length > 0) {
      last = pending.at(-1)!.seq;
      // In one transaction, each record on its own (one refused does not stop the others), in order.
      // Answered before the crash, checked then against what the mount showed (see FsService's ChangeOrigin.answered).
      const results = await deps.fs.writeMany(pending.map((r) => batchItem(r)), {
        answered: true, mark: { name: JOURNAL_MARK, value: last },
        onHookFailure: (err) => deps.log.error({ err, changes: pending.length }, 'a commit hook failed after replayed FUSE changes were committed'),
      });
      results.forEach((r, i) => {
        if (r.status === 'rejected') deps.log.error({ err: r.reason, path: pending[i]!.path }, 'replaying a journaled FUSE change failed');
      });
      deps.log.info({ records: pending.length }, 'replayed FUSE closes from the journal');
    }
    const journal = new FuseJournal(file, last);
    // Emptied whatever it held: a file whose first record is torn parses as no records, and
    // records appended after the tear would never be read back at the next start.
    journal.#open();
    journal.#truncate();
    return journal;
  }

  /** Sequence number of the last record appended (or applied by an earlier run). */
  get lastSeq(): number {
    return this.#seq;
  }

  /** Bytes in the file. */
  get size(): number {
    return this.#bytes;
  }

  /** Append one record (a single write(), no fsync); returns its sequence number. */
  append(rec: Omit<JournalRecord, 'seq'>): number {
    const seq = this.#seq + 1;
    const header = Buffer.from(JSON.stringify({
      seq, path: rec.path, modified: rec.modified, attributes: rec.attributes, symlink: rec.symlink || undefined, delete: rec.delete || undefined,
      change: rec.change, mkdir: rec.mkdir || undefined, rmdir: rec.rmdir || undefined, renameTo: rec.renameTo, replaces: rec.replaces,
    }));
    const out = Buffer.allocUnsafe(FRAME + header.length + rec.data.length);
    out.writeUInt32BE(MAGIC, 0);
    out.writeUInt32BE(header.length, 4);
    out.writeUInt32BE(rec.data.length, 8);
    header.copy(out, FRAME);
    rec.data.copy(out, FRAME + header.length);
    out.writeUInt32BE(crc32(out.subarray(FRAME)), 12);
    const fd = this.#open();
    let off = 0;
    try {
      while (off < out.length) off += writeSync(fd, out, off, out.length - off);
    } catch (err) {
      // Cut short (a full disk): the file must end at the last whole record again, or the records
      // appended after this torn one would never be replayed.
      try {
        ftruncateSync(fd, this.#bytes);
      } catch {
        // the torn record stays; the replay stops there, as for a crash mid-write
      }
      throw err;
    }
    this.#bytes += out.length;
    this.#seq = seq;
    this.#unapplied = true;
    return seq;
  }

  /** Whether the file has grown past {@link ROTATE_BYTES} (empty it once every record is applied). */
  get full(): boolean {
    return this.#bytes > ROTATE_BYTES;
  }

  /** Every record appended is applied: empty the file if it has grown past {@link ROTATE_BYTES}. */
  applied(): void {
    this.#unapplied = false;
    if (this.full) this.#truncate();
  }

  /**
   * Close the file, emptied if every record appended is applied; otherwise (the store failed to
   * commit some) kept as it is, for the next start to replay.
   */
  close(): void {
    if (!this.#unapplied) this.#truncate();
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  #open(): number {
    this.#fd ??= openSync(this.file, 'a', 0o600);
    return this.#fd;
  }

  #truncate(): void {
    if (this.#fd === undefined) return;
    ftruncateSync(this.#fd, 0);
    this.#bytes = 0;
  }
}

/**
 * The store's batch item for a journaled close, unlink, rename, mkdir, rmdir or attribute change;
 * `hash`: the content's, when known; `keepTime`: a mkdir's time was set after the changes batched
 * with it (BatchItem's `keepTime`). A replay needs none: it applies each attribute change after
 * the records before it.
 */
export function batchItem(r: Omit<JournalRecord, 'seq'>, hash?: string, keepTime?: boolean): BatchItem {
  if (r.change) return { path: r.path, change: r.change };
  if (r.renameTo !== undefined) return { path: r.path, renameTo: r.renameTo };
  if (r.delete) return { path: r.path, delete: true };
  if (r.mkdir) return { path: r.path, mkdir: true, attributes: r.attributes, modified: r.modified, keepTime: keepTime || undefined };
  if (r.rmdir) return { path: r.path, rmdir: true };
  return { path: r.path, pieces: [{ data: r.data, hash }], opts: { attributes: r.attributes, modified: r.modified, symlink: r.symlink || undefined } };
}

/** The records of a journal file, up to the first torn or corrupt one. */
export function parseJournal(buf: Buffer): JournalRecord[] {
  const out: JournalRecord[] = [];
  let off = 0;
  while (off + FRAME <= buf.length) {
    if (buf.readUInt32BE(off) !== MAGIC) break;
    const hlen = buf.readUInt32BE(off + 4);
    const dlen = buf.readUInt32BE(off + 8);
    const end = off + FRAME + hlen + dlen;
    if (end > buf.length || crc32(buf.subarray(off + FRAME, end)) !== buf.readUInt32BE(off + 12)) break;
    const header = JSON.parse(buf.subarray(off + FRAME, off + FRAME + hlen).toString()) as Omit<JournalRecord, 'data'>;
    out.push({ ...header, data: Buffer.from(buf.subarray(off + FRAME + hlen, end)) });
    off = end;
  }
  return out;
}
