/**
 * @module test/helpers/journaled-mount
 * The daemon's in-process mount with its journal, without a kernel, over a store the test can hold
 * or fail (GatedStore): for the tests of group commit, the journal and crash replay.
 */
import type { Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { EventBus, type ChangeEvent } from '../../src/core/events.js';
import { FsService } from '../../src/fs/service.js';
import { LmdbStore } from '../../src/store/lmdb/index.js';
import { LocalBackend } from '../../src/transports/fuse/local.js';
import { FuseJournal } from '../../src/transports/fuse/journal.js';
import { FuseFileSystem } from '../../src/transports/fuse/operations.js';
import { ParsedViews } from '../../src/views/views.js';
import { GatedStore } from './gated-store.js';

const log = pino({ level: 'silent' });

export interface JournaledMountOptions {
  gatherMs?: number;
  retryMs?: number;
  direct?: (path: string) => boolean;
  /** Add the daemon's guard on parsed views (every face's changes pass it). */
  views?: boolean;
}

/** Open the mount on `dir` (recovering its journal first, as the daemon does at start); closing it is the caller's. */
export async function openJournaled(dir: string, opts: JournaledMountOptions = {}) {
  const lmdb = new LmdbStore(dir);
  const store = new GatedStore(lmdb);
  const events = new EventBus();
  const seen: ChangeEvent[] = [];
  events.subscribe((e) => seen.push(e));
  const fs = new FsService({ store, blobs: lmdb.blobs, events });
  await fs.upgrade();
  if (opts.views) new ParsedViews(fs);
  const journal = await FuseJournal.recover({ dataDir: dir, fs, log });
  const backend = new LocalBackend({ fs, events, dataDir: dir, journal, log, gatherMs: opts.gatherMs, retryMs: opts.retryMs, direct: opts.direct });
  const fuse = new FuseFileSystem({ backend, log, uid: process.getuid!(), gid: process.getgid!() });
  return { dir, lmdb, store, events, seen, fs, journal, backend, fuse, ops: fuse.operations() };
}

/** A mount on a fresh data directory, closed and removed at the test's end (the store let go first). */
export async function journaledMount(t: Test, opts: JournaledMountOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-fuse-journaled-'));
  const s = await openJournaled(dir, opts);
  t.teardown(async () => {
    s.store.release();
    s.store.failWith(undefined);
    await s.fuse.close();
    await s.backend.close().catch(() => undefined);
    s.journal.close();
    await s.lmdb.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return s;
}

/** Start again on `dir` after a simulated crash (the journal is replayed), closed at the test's end. */
export async function reopenJournaled(t: Test, dir: string, opts: JournaledMountOptions = {}) {
  const b = await openJournaled(dir, opts);
  t.teardown(async () => {
    await b.backend.close();
    b.journal.close();
    await b.lmdb.close();
  });
  return b;
}
