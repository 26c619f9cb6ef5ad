// Persistence: data survives a clean restart, and every acknowledged write survives kill -9
// (ARCHITECTURE.md "Storage": an acknowledged write is durable).
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { startDaemon, bytes, unbytes, type DaemonHandle } from '../helpers/daemon.js';

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

interface Ack { path: string; content: string; etag: string; version: number }

/** Check every acknowledged write after a restart: the version exists with the right etag and bytes. */
async function verifyAcks(t: Test, d: DaemonHandle, acks: Ack[]): Promise<void> {
  const latest = new Map<string, Ack>();
  for (const a of acks) if ((latest.get(a.path)?.version ?? 0) < a.version) latest.set(a.path, a);
  let bad = 0;
  for (const a of acks) {
    const env = await d.rpc('get_version', { path: a.path, version: a.version });
    if (env.error || unbytes(env.result).toString() !== a.content) {
      bad++;
      t.fail(`acknowledged ${a.path} v${a.version} lost: ${JSON.stringify(env.error ?? 'content differs')}`);
    }
  }
  t.equal(bad, 0, `all ${acks.length} acknowledged versions are there`);
  for (const [path, a] of latest) {
    const meta = await d.call('get_metadata', { path });
    // A write that was in flight at the kill may have committed after the last ack; never fewer.
    if (!meta || meta.version < a.version) t.fail(`${path}: current version ${meta?.version} < acknowledged ${a.version}`);
  }
}

/** Every file present is intact: its bytes hash to its etag (nothing half-written). */
async function verifyIntact(t: Test, d: DaemonHandle, dir: string): Promise<void> {
  const entries = await d.call('list', { path: dir, details: true });
  let broken = 0;
  for (const e of entries) {
    if (e.is_directory) continue;
    const content = unbytes(await d.call('read', { path: e.path }));
    if (sha(content) !== e.etag || content.length !== e.size) broken++;
  }
  t.equal(broken, 0, `every file under ${dir} matches its etag`);
}

t.test('persistence across a clean restart', async (t) => {
  const d = await startDaemon({}, t);
  const big = Buffer.alloc(3 * 1024 * 1024 + 17);
  for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
  const w1 = await d.call('write', { path: '/keep/a.txt', content: bytes('first') });
  const w2 = await d.call('write', { path: '/keep/a.txt', content: bytes('second') });
  const wb = await d.call('write', { path: '/keep/big/blob.bin', content: bytes(big) });
  await d.call('mkdir', { path: '/keep/empty' });
  await d.call('write', { path: '/keep/gone.txt', content: bytes('bye') });
  await d.call('delete', { path: '/keep/gone.txt' });
  await d.call('rename', { old_path: '/keep/big', new_path: '/keep/large' });
  const listBefore = await d.call('list', { path: '/', details: true });
  const oldPort = d.port;

  t.equal(await d.stop(), 0, 'SIGTERM: exit code 0');
  await d.restart();
  t.ok(d.port > 0);
  t.comment(`restarted on port ${d.port} (was ${oldPort})`);

  t.same(await d.call('list', { path: '/', details: true }), listBefore, 'the same tree, metadata included');
  t.equal(unbytes(await d.call('read', { path: '/keep/a.txt' })).toString(), 'second');
  t.same((await d.call('list_versions', { path: '/keep/a.txt' })).map((v: { etag: string }) => v.etag), [w2.etag, w1.etag]);
  t.equal(unbytes(await d.call('get_version', { path: '/keep/a.txt', version: 1 })).toString(), 'first');
  const blob = await d.call('read', { path: '/keep/large/blob.bin', return_metadata: true });
  t.equal(blob.metadata.etag, wb.etag);
  t.ok(Buffer.from(blob.content, 'base64').equals(big), 'the multi-chunk file is intact');
  t.same(await d.call('exists', { path: '/keep/gone.txt' }), { exists: false });
  t.same(await d.call('is_directory', { path: '/keep/empty' }), { is_directory: true });
  const next = await d.call('write', { path: '/keep/a.txt', content: bytes('third') });
  t.equal(next.version, 3, 'version numbering continues');
});

t.test('SIGTERM during a burst of writes: every answered write is kept', async (t) => {
  const d = await startDaemon({}, t);
  const acks: Ack[] = [];
  let refused = 0;
  let stopping: Promise<number | null> | undefined;
  const TOTAL = 60;
  const writes = Array.from({ length: TOTAL }, async (_, i) => {
    const path = `/term/f${i}.txt`;
    const content = `term ${i} ${'z'.repeat(i * 101)}`;
    try {
      const r = await d.call('write', { path, content: bytes(content) });
      acks.push({ path, content, etag: r.etag, version: r.version });
      if (acks.length === 10) stopping = d.stop(); // SIGTERM with the rest in flight
    } catch {
      refused++; // not accepted before the shutdown: never acknowledged
    }
  });
  await Promise.all(writes);
  const code = await (stopping ?? d.stop());
  t.equal(code, 0, 'exit code 0');
  t.equal(acks.length + refused, TOTAL);
  t.comment(`${acks.length} answered, ${refused} refused at shutdown`);
  await d.restart();
  await verifyAcks(t, d, acks);
  await verifyIntact(t, d, '/');
});

t.test('kill -9 right after the last acknowledged answer loses nothing', async (t) => {
  const d = await startDaemon({}, t);
  const acks: Ack[] = [];
  const total = 120;
  // All at once: different files plus a shared one, so commits are batched together.
  await Promise.all(Array.from({ length: total }, async (_, i) => {
    const path = i % 4 === 0 ? '/crash1/shared.txt' : `/crash1/f${i}.txt`;
    const content = `burst write ${i} ${'x'.repeat(i * 13)}`;
    const r = await d.call('write', { path, content: bytes(content) });
    acks.push({ path, content, etag: r.etag, version: r.version });
  }));
  await d.kill9();
  t.equal(acks.length, total);
  t.equal(acks.filter((a) => a.etag !== sha(a.content)).length, 0, 'every answer carried the content\'s etag');

  await d.restart();
  await verifyAcks(t, d, acks);
  await verifyIntact(t, d, '/crash1');
});

t.test('kill -9 in the middle of a stream of writes loses no acknowledged one', async (t) => {
  const d = await startDaemon({}, t);
  const acks: Ack[] = [];
  const WORKERS = 12;
  const PER_WORKER = 60;
  const KILL_AFTER = 250;
  let killed = false;
  let sent = 0;
  const worker = async (w: number) => {
    for (let i = 0; i < PER_WORKER && !killed; i++) {
      const path = i % 3 === 0 ? `/crash2/shared-${w % 3}.txt` : `/crash2/w${w}/f${i}.txt`;
      const content = `worker ${w} write ${i} ${'y'.repeat((w * 7 + i * 11) % 3000)}`;
      sent++;
      let r;
      try {
        r = await d.call('write', { path, content: bytes(content) });
      } catch {
        return; // the daemon is gone: this write was never acknowledged
      }
      if (killed) return; // answered after the kill was decided: count only what came before
      acks.push({ path, content, etag: r.etag, version: r.version });
      if (acks.length === KILL_AFTER) {
        killed = true;
        void d.kill9(); // immediately, with other writes still in flight
      }
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
  await d.kill9();
  t.ok(killed, 'killed mid-stream');
  t.equal(acks.length, KILL_AFTER);
  t.ok(sent > KILL_AFTER, `${sent - KILL_AFTER} writes were in flight or unsent at the kill`);

  await d.restart();
  await verifyAcks(t, d, acks);
  await verifyIntact(t, d, '/crash2');
  const w = await d.call('write', { path: '/crash2/after.txt', content: bytes('alive') });
  t.equal(w.version, 1, 'the restarted daemon writes normally');
});
