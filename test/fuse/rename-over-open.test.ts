/**
 * @module test/fuse/rename-over-open
 * A rename over an open file, in process, in the order svc's libfuse 3 binding sends it: the open
 * target hidden first (a rename to `.fuse_hidden…`, hiding 'rename'), then the program's rename.
 * Found in a review of the undo of a hide after a failed rename; each test failed before its fix.
 */
import t from 'tap';
import { journaledMount } from '../helpers/journaled-mount.js';
import { call, writeFile } from '../helpers/fuse-ops.js';
import { eventually } from './harness.js';
import type { FuseOperations, HideFor } from '../../src/native/fuse.js';

const rename = (ops: FuseOperations, from: string, to: string, hiding: HideFor) =>
  new Promise<number>((resolve) => ops.rename(from, to, (code: number) => resolve(code), hiding));

// The mount queues a rename of a file (journaled, committed with the next batch); inside a storage
// mount (`direct`) it is committed before it is answered, and so can fail there.
const variants = [
  { name: 'committed before it is answered (from a storage mount)', opts: { direct: (p: string) => p === '/a' }, queued: false },
  { name: 'queued', opts: {}, queued: true },
];

for (const v of variants) {
  t.test(`${v.name}: a rename the store made before a commit hook failed stands: the replaced open file is not stored over it`, async (t) => {
    // The undo gave the replaced file its path back, and its close stored the old bytes over the
    // renamed file (a storage mount's mirror or ReBAC's rename hook failing after the commit).
    const m = await journaledMount(t, v.opts);
    const { ops, fs, backend } = m;
    await writeFile(ops, '/a', 'renamed-content');
    await writeFile(ops, '/b', 'old');
    await backend.drain();
    const [c, fd] = await call<number>(ops.open, '/b', 2);
    t.equal(c, 0);
    t.equal(await rename(ops, '/b', '/.fuse_hidden0000000100000001', 'rename'), 0, 'the hide');
    let fail = true;
    fs.addCommitHook(async (events) => {
      if (fail && events.some((e) => e.type === 'rename')) throw new Error('hook failed');
    });
    const code = await rename(ops, '/a', '/b', 'none');
    t.equal(code, 0, 'the rename is answered as done: the store made it, or will (the hook\'s failure is logged)');
    await backend.drain();
    fail = false;
    t.equal(fs.stat('/a'), undefined);
    const buf = Buffer.from('OLD');
    await call(ops.write, '/.fuse_hidden0000000100000001', fd, buf, buf.length, 0);
    await call(ops.flush, '/.fuse_hidden0000000100000001', fd);
    await call(ops.release, '/.fuse_hidden0000000100000001', fd);
    await backend.drain();
    t.equal(fs.content(fs.file('/b')).toString(), 'renamed-content', '/b holds what /a held, not the replaced file');
  });

  t.test(`${v.name}: a rename over an open file closed meanwhile, the store failing`, async (t) => {
    // Committed before it is answered: the binding unlinks the hidden name at the file's last
    // release, which may come while the rename is still under way; the undo then found nothing to
    // give back. Queued: the rename is answered at once and committed once the store can.
    const m = await journaledMount(t, { ...v.opts, retryMs: 20 });
    const { ops, fs, backend, store } = m;
    await writeFile(ops, '/a', 'source');
    await writeFile(ops, '/b', 'old');
    await backend.drain();
    const [c, fd] = await call<number>(ops.open, '/b', 2);
    t.equal(c, 0);
    const buf = Buffer.from('NEW');
    t.equal((await call<number>(ops.write, '/b', fd, buf, buf.length, 0))[0], 3);
    const hidden = '/.fuse_hidden0000000200000001';
    t.equal(await rename(ops, '/b', hidden, 'rename'), 0, 'the hide');
    store.hold({ transactions: true });
    const renamed = rename(ops, '/a', '/b', 'none');
    await new Promise((r) => setTimeout(r, 50));
    // close(2) meanwhile: flush, release; the binding then unlinks the hidden name.
    t.equal((await call(ops.flush, hidden, fd))[0], 0);
    t.equal((await call(ops.release, hidden, fd))[0], 0);
    t.equal((await call(ops.unlink, hidden))[0], 0);
    store.failWith(new Error('disk full'));
    store.release();
    if (!v.queued) {
      t.not(await renamed, 0, 'the rename fails');
      store.failWith(undefined);
      await backend.drain();
      t.equal(fs.stat('/a')?.kind, 'file', '/a is still there');
      t.equal(fs.content(fs.file('/b')).toString(), 'NEW', '/b holds what was written through the descriptor before its close');
      return;
    }
    t.equal(await renamed, 0, 'the rename was answered once journaled');
    await new Promise((r) => setTimeout(r, 50));
    t.equal(fs.content(fs.file('/a')).toString(), 'source', 'not committed while the store fails');
    store.failWith(undefined);
    t.ok(await eventually(async () => fs.stat('/a') === undefined, 5000, 5), 'committed once the store can');
    t.equal(fs.content(fs.file('/b')).toString(), 'source', '/b holds what /a held: the replaced file, closed, stored nothing');
  });
}
