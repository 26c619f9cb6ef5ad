/**
 * @module test/fuse/journal-review
 * The in-process mount's journal, in process (no kernel), beyond test/fuse/batch.test.ts: what a
 * change answered from the journal must never become afterwards (lost, applied twice, reordered,
 * shown with a version the store does not give it), queued renames mixed with other queued
 * changes, and replays after a crash of such sequences.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsService } from '../../src/fs/service.js';
import { StoreWriteError } from '../../src/store/types.js';
import { JOURNAL_FILE, JOURNAL_MARK, parseJournal } from '../../src/transports/fuse/journal.js';
import type { FuseOperations } from '../../src/native/fuse.js';
import { call, readFile, writeFile, rewrite, settlesSoon } from '../helpers/fuse-ops.js';
import { journaledMount as setup, openJournaled as open, reopenJournaled as reopen, type JournaledMountOptions as Options } from '../helpers/journaled-mount.js';
import { eventually } from './harness.js';

/** A fresh data directory, removed at the test's end, opened once (the first run, "crashed" by the test). */
async function crashable(t: Test, opts: Options = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-fuse-review-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return open(dir, opts);
}

/** Each stored version of `path`, newest first, as [version, text]. */
function history(fs: FsService, path: string): [number, string][] {
  return fs.listVersions(path).map((v) => [v.version, fs.content(fs.versionRecord(path, v.version)).toString()]);
}

async function names(ops: FuseOperations, dir: string): Promise<string[]> {
  const [c, list] = await call<string[]>(ops.readdir, dir);
  if (c !== 0) throw new Error(`readdir ${dir}: ${c}`);
  return list!.filter((n) => n !== '.' && n !== '..').sort();
}

// ---------------------------------------------------------------- found in review (each failed before its fix)

t.test('a commit hook failing after the batch committed: the batch is not committed a second time', async (t) => {
  // The daemon's hooks run after every commit (rebac.followRenames makes a transaction of its own
  // for every rename event): one failing once, as a full disk makes it, after the batch's
  // transaction was committed.
  const s = await setup(t, { retryMs: 20 });
  let fail = 0;
  s.fs.addCommitHook(async () => {
    if (fail > 0) {
      fail--;
      throw new StoreWriteError('the disk is full', 'ENOSPC');
    }
  });
  await writeFile(s.ops, '/doc', 'v1');
  await s.backend.drain();
  fail = 1;
  await rewrite(s.ops, '/doc', 'v2');
  await writeFile(s.ops, '/.doc.tmp', 'v3');
  t.equal((await call(s.ops.rename, '/.doc.tmp', '/doc'))[0], 0);
  const [, st] = await call<{ size: number }>(s.ops.getattr, '/doc');
  t.equal(st!.size, 2);
  t.ok(await eventually(async () => fail === 0 && s.backend.queued === 0, 5000, 5), 'the batch was committed, and the hook failed once');
  t.same(history(s.fs, '/doc'), [[3, 'v3'], [2, 'v2'], [1, 'v1']], 'each close is one version, as the mount answered (v2 then v3)');
  t.same(s.seen.filter((e) => e.path === '/doc' || e.new_path === '/doc').map((e) => `${e.type} ${e.path}`),
    ['write /doc', 'write /doc', 'rename /.doc.tmp'], 'one event per change');
  t.equal((await call(s.ops.fsyncdir, '/', 0, 0))[0], 0, 'fsync succeeds');
});

t.test('a view-shaped name whose original is still queued is refused at once (EROFS), as once the original is stored; nothing answered is dropped at the commit', async (t) => {
  // Before: the guard asked the store, which did not hold report.pdf yet; the create was allowed,
  // and the batch committing it (after report.pdf's) refused it: an answered close lost.
  const s = await setup(t, { views: true });
  s.store.hold({ transactions: true });
  await writeFile(s.ops, '/report.pdf', '%PDF-1.4 not really');
  await new Promise((r) => setTimeout(r, 30)); // its batch is under way (held by the store)
  t.equal((await call(s.ops.create, '/report_parsed.pdf.md', 0o100644))[0], -30, 'create: EROFS, the mount shows the original');
  await writeFile(s.ops, '/notes.tmp', '# my own notes');
  t.equal((await call(s.ops.rename, '/notes.tmp', '/report_parsed.pdf.md'))[0], -30, 'a rename onto it: EROFS too');
  t.same(await names(s.ops, '/'), ['notes.tmp', 'report.pdf'], 'the mount shows both files where they were');
  s.store.release();
  await s.backend.drain();
  t.same(await names(s.ops, '/'), ['notes.tmp', 'report.pdf'], 'and so does the store once committed');
  t.equal(s.fs.stat('/notes.tmp')?.kind, 'file', 'the renamed-from file is stored');
  t.equal(s.fs.stat('/report_parsed.pdf.md'), undefined, 'nothing stored at the view\'s name');
});

t.test('creating a view-shaped name whose original the mount shows unlinked (still queued) is allowed, as once committed', async (t) => {
  const s = await setup(t, { views: true, gatherMs: 600_000 });
  await writeFile(s.ops, '/report.pdf', '%PDF-1.4 not really');
  await s.backend.drain();
  t.equal((await call(s.ops.create, '/report_parsed.pdf.md', 0o100644))[0], -30, 'a view of a stored file: EROFS');
  t.equal((await call(s.ops.unlink, '/report.pdf'))[0], 0, 'the original unlinked (queued)');
  t.equal((await call(s.ops.getattr, '/report.pdf'))[0], -2, 'the mount shows it gone');
  const [c, fd] = await call<number>(s.ops.create, '/report_parsed.pdf.md', 0o100644);
  t.equal(c, 0, 'no view without its original: the name can be created (as it can once the unlink is committed)');
  if (c === 0) await call(s.ops.release, '/report_parsed.pdf.md', fd);
  await s.backend.drain();
  t.equal(s.fs.stat('/report.pdf'), undefined, 'the unlink is committed');
  t.equal(s.fs.stat('/report_parsed.pdf.md')?.kind, 'file', 'and the file made at the view\'s name after it, in the same batch');
});

// ---------------------------------------------------------------- checked, correct (coverage beyond batch.test.ts)

t.test('two queued files swapped through a temporary name: shown swapped at once, stored swapped, histories follow', async (t) => {
  const s = await setup(t);
  await writeFile(s.ops, '/a', 'a1');
  await writeFile(s.ops, '/b', 'b1');
  await s.backend.drain();
  s.store.hold({ transactions: true });
  await rewrite(s.ops, '/a', 'a2');
  await rewrite(s.ops, '/b', 'b2');
  const renamed = Promise.all([['/a', '/t'], ['/b', '/a'], ['/t', '/b']].map(([from, to]) => call(s.ops.rename, from, to)));
  t.ok(await settlesSoon(renamed), 'the three renames answer while the store is held');
  t.same((await renamed).map(([c]) => c), [0, 0, 0]);
  t.same([await readFile(s.ops, '/a'), await readFile(s.ops, '/b')], ['b2', 'a2'], 'swapped at once');
  t.same(await names(s.ops, '/'), ['a', 'b'], 'no temporary name listed');
  t.same([(await s.backend.stat('/a'))?.version, (await s.backend.stat('/b'))?.version], [2, 2], 'each keeps its version');
  s.store.release();
  await s.backend.drain();
  t.same(history(s.fs, '/a'), [[2, 'b2'], [1, 'b1']], '/a holds what was /b, with its history');
  t.same(history(s.fs, '/b'), [[2, 'a2'], [1, 'a1']]);
  t.equal(s.fs.stat('/t'), undefined);
  t.same(s.seen.filter((e) => e.type === 'rename').map((e) => `${e.path}>${e.new_path}`), ['/a>/t', '/b>/a', '/t>/b'], 'rename events in order');
});

t.test('a queued rename followed by changes to both names before the commit: unlink, mkdir, a new close, folded chmod', async (t) => {
  const s = await setup(t, { gatherMs: 600_000 });
  await writeFile(s.ops, '/keep', 'stored');
  await s.backend.drain();
  s.store.hold({ transactions: true });
  await writeFile(s.ops, '/x', 'x');
  t.equal((await call(s.ops.rename, '/x', '/y'))[0], 0);
  t.equal((await call(s.ops.unlink, '/x'))[0], -2, 'the old name: ENOENT');
  t.equal((await call(s.ops.mkdir, '/x', 0o40700))[0], 0, 'a directory at the old name (queued)');
  await rewrite(s.ops, '/y', 'y2');
  t.equal((await s.backend.stat('/y'))?.version, 2, 'a close over the renamed file: the next version');
  t.equal((await call(s.ops.chmod, '/y', 0o600))[0], 0, 'folded into that close');
  t.equal((await call(s.ops.rename, '/y', '/keep'))[0], 0, 'renamed again, over a stored file');
  t.equal((await s.backend.stat('/keep'))?.version, 2, 'one version more than the stored file');
  t.equal((await call(s.ops.unlink, '/keep'))[0], 0, 'and unlinked');
  t.same(await names(s.ops, '/'), ['x'], 'only the directory is left');
  t.equal(s.fs.read('/keep').content.toString(), 'stored', 'nothing committed yet');
  s.store.release();
  await s.backend.drain();
  t.same([s.fs.stat('/x')?.kind, s.fs.stat('/x')?.mode], ['dir', 0o700]);
  t.same([s.fs.stat('/y'), s.fs.stat('/keep')], [undefined, undefined], 'both names gone');
  t.same(s.seen.slice(1).map((e) => `${e.type} ${e.path}${e.new_path ? ` ${e.new_path}` : ''}`),
    ['write /x', 'rename /x /y', 'mkdir /x', 'write /y', 'rename /y /keep', 'delete /keep'], 'events in the order answered');
});

t.test('a queued file renamed into a directory whose mkdir is queued: rmdir is ENOTEMPTY until it is unlinked', async (t) => {
  const s = await setup(t);
  s.store.hold({ transactions: true });
  t.equal((await call(s.ops.mkdir, '/new', 0o40755))[0], 0);
  await writeFile(s.ops, '/f.tmp', 'f');
  t.equal((await call(s.ops.rename, '/f.tmp', '/new/f'))[0], 0, 'queued: the directory is shown');
  t.same(await names(s.ops, '/new'), ['f'], 'readdir of the queued directory lists the renamed file');
  t.same(await names(s.ops, '/'), ['new'], 'and its parent no longer the old name');
  t.equal((await call(s.ops.rmdir, '/new'))[0], -39, 'ENOTEMPTY');
  t.equal((await call(s.ops.unlink, '/new/f'))[0], 0);
  t.equal((await call(s.ops.rmdir, '/new'))[0], 0, 'emptied: removed (queued)');
  t.equal(s.backend.queued > 0, true);
  s.store.release();
  await s.backend.drain();
  t.same([s.fs.stat('/new'), s.fs.stat('/new/f'), s.fs.stat('/f.tmp')], [undefined, undefined, undefined]);
  t.same(s.seen.map((e) => `${e.type} ${e.path}`), ['mkdir /new', 'write /f.tmp', 'rename /f.tmp', 'delete /new/f', 'rmdir /new']);
});

t.test('a queued file renamed onto a name whose close is queued too: shown with the next version, stored with it', async (t) => {
  const s = await setup(t);
  s.store.hold({ transactions: true });
  await writeFile(s.ops, '/target', 'first');
  await rewrite(s.ops, '/target', 'second');
  await writeFile(s.ops, '/src', 'third');
  t.equal((await call(s.ops.rename, '/src', '/target'))[0], 0);
  t.equal((await s.backend.stat('/target'))?.version, 3);
  t.equal((await s.backend.versionContent('/target', 3)).size, 5, 'the version the mount shows can be read by number');
  s.store.release();
  await s.backend.drain();
  t.same(history(s.fs, '/target'), [[3, 'third'], [2, 'second'], [1, 'first']]);
});

t.test('queued renames across directories: both parents list the change before the commit', async (t) => {
  const s = await setup(t);
  t.equal((await call(s.ops.mkdir, '/p', 0o40755))[0], 0);
  t.equal((await call(s.ops.mkdir, '/q', 0o40755))[0], 0);
  await writeFile(s.ops, '/q/old', 'stored, replaced');
  await s.backend.drain();
  s.store.hold({ transactions: true });
  await writeFile(s.ops, '/p/one', '1');
  await writeFile(s.ops, '/p/two', '2');
  t.equal((await call(s.ops.rename, '/p/one', '/q/old'))[0], 0);
  t.equal((await call(s.ops.rename, '/p/two', '/q/two'))[0], 0);
  t.same(await names(s.ops, '/p'), [], 'the source directory lists nothing');
  t.same(await names(s.ops, '/q'), ['old', 'two'], 'the target directory lists each name once');
  t.equal((await call(s.ops.rmdir, '/p'))[0], 0, 'the emptied source directory can be removed at once');
  s.store.release();
  await s.backend.drain();
  t.same(s.fs.list('/q', { recursive: false }).map((e) => e.path), ['/q/old', '/q/two']);
  t.equal(s.fs.stat('/p'), undefined);
  t.same(history(s.fs, '/q/old').map(([v]) => v), [2, 1]);
});

t.test('after a crash: a queued rename chain, a swap, a rename into a queued directory and changes after them replay as answered', async (t) => {
  const a = await crashable(t, { gatherMs: 600_000 });
  await writeFile(a.ops, '/s1', 's1');
  await writeFile(a.ops, '/s2', 's2');
  await a.backend.drain();
  a.store.hold({ transactions: true });
  await rewrite(a.ops, '/s1', 's1-2');
  await rewrite(a.ops, '/s2', 's2-2');
  for (const [from, to] of [['/s1', '/tmp'], ['/s2', '/s1'], ['/tmp', '/s2']]) t.equal((await call(a.ops.rename, from, to))[0], 0);
  t.equal((await call(a.ops.mkdir, '/dir', 0o40750))[0], 0);
  await writeFile(a.ops, '/c1', 'chain');
  for (const [from, to] of [['/c1', '/c2'], ['/c2', '/dir/c3']]) t.equal((await call(a.ops.rename, from, to))[0], 0);
  await rewrite(a.ops, '/dir/c3', 'chain-2');
  const mtime = Date.UTC(2003, 3, 5);
  t.equal((await call(a.ops.utimens, '/dir/c3', mtime, mtime))[0], 0, 'folded into the close after the renames');
  await writeFile(a.ops, '/gone.tmp', 'g');
  t.equal((await call(a.ops.rename, '/gone.tmp', '/gone'))[0], 0);
  t.equal((await call(a.ops.unlink, '/gone'))[0], 0);
  const shown = await Promise.all(['/s1', '/s2', '/dir/c3'].map((p) => readFile(a.ops, p)));
  const versions = await Promise.all(['/s1', '/s2', '/dir/c3'].map(async (p) => (await a.backend.stat(p))?.version));
  void a.backend.drain(); // ends the window: the batch then waits on the held store for good, as in a crash
  await a.lmdb.close();
  const b = await reopen(t, a.dir);
  t.same(['/s1', '/s2', '/dir/c3'].map((p) => b.fs.read(p).content.toString()), shown, 'what the mount showed');
  t.same(['/s1', '/s2', '/dir/c3'].map((p) => (b.fs.stat(p) as { version?: number } | undefined)?.version), versions, 'with the versions it showed');
  t.same(history(b.fs, '/s1'), [[2, 's2-2'], [1, 's2']]);
  t.equal(b.fs.stat('/dir/c3')?.modified, mtime);
  t.same(['/tmp', '/c1', '/c2', '/gone.tmp', '/gone'].map((p) => b.fs.stat(p)), [undefined, undefined, undefined, undefined, undefined]);
  t.equal(b.fs.mark(JOURNAL_MARK), b.journal.lastSeq, 'every record applied');
});

t.test('after a crash that tore the last record (a rename): the replay stops before it', async (t) => {
  const a = await crashable(t);
  a.store.hold({ transactions: true });
  await writeFile(a.ops, '/a', 'a');
  t.equal((await call(a.ops.rename, '/a', '/b'))[0], 0);
  t.equal((await call(a.ops.rename, '/b', '/c'))[0], 0);
  const file = join(a.dir, JOURNAL_FILE);
  const whole = readFileSync(file);
  const records = parseJournal(whole);
  t.same(records.map((r) => [r.path, r.renameTo]), [['/a', undefined], ['/a', '/b'], ['/b', '/c']]);
  await a.lmdb.close();
  // The last write cut short: its record lacks its final bytes (it was never answered).
  writeFileSync(file, whole.subarray(0, whole.length - 3));
  const b = await reopen(t, a.dir);
  t.equal(b.fs.read('/b').content.toString(), 'a', 'the records before the torn one are applied');
  t.same([b.fs.stat('/a'), b.fs.stat('/c')], [undefined, undefined]);
  t.equal(b.fs.mark(JOURNAL_MARK), 2);
  t.equal(statSync(file).size, 0, 'emptied');
  await writeFile(b.ops, '/d', 'd');
  t.equal(b.journal.lastSeq, 3, 'numbering continues after the last applied record');
});

t.test('a batch the store refuses for a while (a full disk) keeps its queued renames served, and commits them in order once it can', async (t) => {
  const s = await setup(t, { retryMs: 20 });
  s.store.failWith(new StoreWriteError('the disk is full', 'ENOSPC'));
  await writeFile(s.ops, '/tmp1', 'one');
  t.ok(await eventually(async () => s.store.failures > 0, 5000, 5), 'its batch was tried and failed');
  t.equal((await call(s.ops.rename, '/tmp1', '/final'))[0], 0, 'a rename of the queued file is still queued (answered)');
  await writeFile(s.ops, '/tmp1', 'two');
  t.same([await readFile(s.ops, '/final'), await readFile(s.ops, '/tmp1')], ['one', 'two']);
  s.store.failWith(undefined);
  t.ok(await eventually(async () => s.backend.queued === 0, 5000, 5));
  t.same([s.fs.read('/final').content.toString(), s.fs.read('/tmp1').content.toString()], ['one', 'two']);
  t.same(history(s.fs, '/final').map(([v]) => v), [1]);
});

// ---------------------------------------------------------------- provisional closes

t.test('a file created and flushed before its first write is stored provisionally; the close that follows replaces it', async (t) => {
  const s = await setup(t);
  const [c, fd] = await call<number>(s.ops.create, '/f', 0o100640);
  t.equal(c, 0);
  t.equal((await call(s.ops.flush, '/f', fd))[0], 0, 'flush (a shell closing its first descriptor before writing)');
  t.equal(s.backend.queued, 1, 'journaled and queued at the flush');
  const buf = Buffer.from('x');
  await call(s.ops.write, '/f', fd, buf, 1, 0);
  await call(s.ops.flush, '/f', fd);
  await call(s.ops.release, '/f', fd);
  await s.backend.drain();
  t.same(history(s.fs, '/f'), [[1, 'x']], 'one version: the provisional one was replaced');
  t.equal(s.fs.stat('/f')?.mode, 0o640);
  // Left alone, the provisional close is a version of its own (an empty file, `touch`).
  const [, fd2] = await call<number>(s.ops.create, '/g', 0o100644);
  await call(s.ops.flush, '/g', fd2);
  await call(s.ops.release, '/g', fd2);
  await s.backend.drain();
  t.same(history(s.fs, '/g'), [[1, '']], 'touch: one empty version');
});

t.test('a provisional close waits while its file is open: a write that comes late (a loaded machine) still makes one version', async (t) => {
  // A shell's `echo x > f` flushes the descriptor it duplicated, then writes through the other one.
  // The batch took a provisional close older than 2 ms: on a loaded machine, an empty version first.
  const s = await setup(t, { gatherMs: 1 });
  const [, fd] = await call<number>(s.ops.create, '/late', 0o100644);
  await call(s.ops.flush, '/late', fd);
  await new Promise((resolve) => setTimeout(resolve, 60)); // several batch windows
  t.equal(s.fs.stat('/late'), undefined, 'not stored while the file is open and nobody waits');
  await call(s.ops.write, '/late', fd, Buffer.from('x'), 1, 0);
  await call(s.ops.flush, '/late', fd);
  await call(s.ops.release, '/late', fd);
  await s.backend.drain();
  t.same(history(s.fs, '/late'), [[1, 'x']], 'one version');
});

t.test('a provisional close is taken once its file is released, and at once when somebody waits for the batch', async (t) => {
  const s = await setup(t, { gatherMs: 1 });
  // `touch new`: flushed, then released; no write comes. Nothing waits: the batch takes it itself.
  const [, fd] = await call<number>(s.ops.create, '/touched', 0o100644);
  await call(s.ops.flush, '/touched', fd);
  await call(s.ops.release, '/touched', fd);
  t.ok(await eventually(async () => s.fs.stat('/touched') !== undefined, 500, 2), 'stored well before the open file\'s bound (1 s)');
  t.same(history(s.fs, '/touched'), [[1, '']]);
  // Still open, but another face's call waits for the batch (drain): stored now, not after the bound.
  const [, fd2] = await call<number>(s.ops.create, '/held', 0o100644);
  await call(s.ops.flush, '/held', fd2);
  const started = Date.now();
  await s.backend.drain();
  t.ok(Date.now() - started < 500, `the wait ends at once (${Date.now() - started} ms)`);
  t.same(history(s.fs, '/held'), [[1, '']], 'what the mount showed then: an empty file');
  await call(s.ops.write, '/held', fd2, Buffer.from('y'), 1, 0);
  await call(s.ops.release, '/held', fd2);
  await s.backend.drain();
  t.same(history(s.fs, '/held'), [[2, 'y'], [1, '']], 'the write is the next version');
  // Open and never written, nobody waiting: taken after the bound all the same.
  const [, fd3] = await call<number>(s.ops.create, '/kept-open', 0o100644);
  await call(s.ops.flush, '/kept-open', fd3);
  t.ok(await eventually(async () => s.fs.stat('/kept-open') !== undefined, 5000, 20), 'stored after the bound while still open');
  await call(s.ops.release, '/kept-open', fd3);
});

t.test('after a crash once the close replaced a provisional one: the replay stores one version, with the attributes set between', async (t) => {
  // The replaced record stayed in the journal and was replayed too: an extra empty version first.
  const a = await crashable(t);
  a.store.hold({ transactions: true });
  const [, fd] = await call<number>(a.ops.create, '/once', 0o100600);
  await call(a.ops.flush, '/once', fd);
  t.equal((await call(a.ops.chmod, '/once', 0o640))[0], 0, 'a mode set while the provisional close is queued');
  await call(a.ops.write, '/once', fd, Buffer.from('x'), 1, 0);
  await call(a.ops.flush, '/once', fd);
  await call(a.ops.release, '/once', fd);
  t.equal(parseJournal(readFileSync(join(a.dir, JOURNAL_FILE))).length, 3, 'journaled: the provisional close, the mode, the close');
  void a.backend.drain(); // the batch then waits on the held store for good, as in a crash
  await a.lmdb.close();
  const b = await reopen(t, a.dir);
  t.same(history(b.fs, '/once'), [[1, 'x']], 'one version');
  t.equal(b.fs.stat('/once')?.mode, 0o640, 'with the mode');
});

t.test('a provisional close left for the next batch survives a crash after a batch that held a change folded in after it', async (t) => {
  // Found in review: the batch cut before a young provisional close marked the journal applied up
  // to its newest record, a chmod folded into an older close after the provisional one: the
  // replay then skipped the provisional close's older record (50 tries out of 50 before the fix).
  // The cut needs the provisional close younger than 2 ms when the batch starts: tried until it is.
  for (let attempt = 0; attempt < 50; attempt++) {
    const a = await crashable(t, { gatherMs: 1000 });
    await writeFile(a.ops, '/a', 'a'); // a queued close (seq 1)
    const [, fd] = await call<number>(a.ops.create, '/p', 0o100644);
    await call(a.ops.flush, '/p', fd); // the provisional close, answered (seq 2)
    await call(a.ops.chmod, '/a', 0o600); // folded into /a's queued close (seq 3)
    await a.backend.drain(); // ends the gathering: the batch is cut before the young /p
    a.store.hold({ transactions: true }); // the next batch never commits: a crash
    const cut = a.fs.stat('/p') === undefined;
    const mark = a.fs.mark(JOURNAL_MARK);
    await a.lmdb.close();
    if (!cut) continue;
    t.ok((mark ?? 0) < 2, `the store marks the journal applied below /p's record (${mark})`);
    const b = await reopen(t, a.dir);
    t.ok(b.fs.stat('/p'), 'the replay makes /p, whose close (flush) was answered');
    t.equal(b.fs.stat('/a')?.mode, 0o600, 'and /a has its mode');
    return;
  }
  // Fixed, the batch takes the provisional close along instead (it waits 2 ms for it first).
  t.pass('no batch left the provisional close behind a newer record in 50 tries');
});

t.test('after a crash right after the flush of a file created and not written: the replay makes it', async (t) => {
  const a = await crashable(t);
  a.store.hold({ transactions: true });
  const [, fd] = await call<number>(a.ops.create, '/made', 0o100600);
  await call(a.ops.flush, '/made', fd);
  void a.backend.drain(); // the batch then waits on the held store for good, as in a crash
  await a.lmdb.close();
  const b = await reopen(t, a.dir);
  const made = b.fs.stat('/made');
  t.same([made?.kind, made?.kind === 'file' && made.size, made?.mode], ['file', 0, 0o600], 'there, empty, with its mode');
});
