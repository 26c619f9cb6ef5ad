/**
 * @module test/fuse/remote-cache
 * The remote mount's attribute cache (RemoteBackend, in process, against a real daemon): an answer
 * the daemon gave before a change whose event arrived first is not cached, for `stat` and for
 * listings alike, so the next lookup asks again and sees the change; a file's history is listed
 * once while the file stays as it was.
 */
import t, { type Test } from 'tap';
import { RemoteBackend } from '../../src/transports/fuse/remote.js';
import { resolveVersionsPath } from '../../src/transports/fuse/versions.js';
import { createLogger } from '../../src/core/log.js';
import type { ChangeEvent } from '../../src/core/events.js';
import { bytes, startDaemon } from '../helpers/daemon.js';

/**
 * A fetch that answers calls of `method` only when the test says so: the daemon has answered, but
 * the backend does not have the answer yet.
 */
function heldFetch(method: string) {
  let hold: Promise<void> | undefined;
  let release = () => {};
  let asked = () => {};
  const held: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (String(input).endsWith(`/api/nfs/${method}`) && hold) {
      const body = await res.text();
      asked();
      await hold;
      return new Response(body, { status: res.status, headers: res.headers });
    }
    return res;
  };
  return {
    fetch: held,
    /** Hold the next answers; resolves when one is held. */
    holdNext(): Promise<void> {
      hold = new Promise((r) => { release = () => { hold = undefined; r(); }; });
      return new Promise((r) => { asked = r; });
    },
    release: () => release(),
  };
}

async function setup(t: Test, method: string) {
  const daemon = await startDaemon({ inProcess: true }, t);
  t.teardown(() => daemon.cleanup());
  await daemon.call('write', { path: '/dir/f.txt', content: bytes('1') });
  const gate = heldFetch(method);
  const backend = new RemoteBackend({ url: daemon.url, log: createLogger('silent'), fetch: gate.fetch });
  await backend.connect();
  t.teardown(() => backend.close());
  const events: ChangeEvent[] = [];
  backend.onChange((e) => events.push(e));
  /** Change the file through RPC and wait until the backend has its event. */
  const changeAndSeeEvent = async () => {
    const before = events.length;
    await daemon.call('write', { path: '/dir/f.txt', content: bytes('22') });
    for (let i = 0; i < 200 && events.length === before; i++) await new Promise((r) => setTimeout(r, 10));
    t.ok(events.length > before, 'the change event arrived');
  };
  return { backend, gate, changeAndSeeEvent };
}

t.test('a stat answered before a change whose event came first is not cached', async (t) => {
  const { backend, gate, changeAndSeeEvent } = await setup(t, 'stat');
  const asked = gate.holdNext();
  const first = backend.stat('/dir/f.txt');
  await asked; // the daemon answered: one byte
  await changeAndSeeEvent();
  gate.release();
  t.equal((await first)?.size, 1, 'the held answer is the old one');
  t.equal((await backend.stat('/dir/f.txt'))?.size, 2, 'the next stat asks again');
});

t.test('a listing answered before a change whose event came first is not cached', async (t) => {
  const { backend, gate, changeAndSeeEvent } = await setup(t, 'readdir');
  const asked = gate.holdNext();
  const listing = backend.list('/dir');
  await asked;
  await changeAndSeeEvent();
  gate.release();
  t.same((await listing).map(([name, info]) => [name, info.size]), [['f.txt', 1]], 'the held listing is the old one');
  t.equal((await backend.stat('/dir/f.txt'))?.size, 2, 'a stat after it asks the daemon');
});

t.test('answers with no change in between are cached', async (t) => {
  const { backend, gate } = await setup(t, 'stat');
  t.equal((await backend.stat('/dir/f.txt'))?.size, 1);
  // Held from now on: a second stat that went to the daemon would never settle.
  void gate.holdNext();
  t.equal((await backend.stat('/dir/f.txt'))?.size, 1, 'served from the cache');
  gate.release();
});

t.test("a file's history is listed once for all its versions, and again once the file changes", async (t) => {
  // Each lookup and open below /.versions/<file>/ listed the whole history (list_versions): N² entries
  // over the wire to read N versions.
  const daemon = await startDaemon({ inProcess: true }, t);
  t.teardown(() => daemon.cleanup());
  for (let i = 1; i <= 20; i++) await daemon.call('write', { path: '/h.txt', content: bytes(`v${i}`) });
  let listed = 0;
  const counting: typeof fetch = (input, init) => {
    if (String(input).endsWith('/api/nfs/list_versions')) listed++;
    return fetch(input, init);
  };
  const backend = new RemoteBackend({ url: daemon.url, log: createLogger('silent'), fetch: counting });
  await backend.connect();
  t.teardown(() => backend.close());
  const events: ChangeEvent[] = [];
  backend.onChange((e) => events.push(e));
  const read = async (n: number) => {
    const target = await resolveVersionsPath(backend, `/.versions/h.txt/${n}`);
    if (target?.kind !== 'version') return undefined;
    const content = await backend.versionContent('/h.txt', n);
    return (await content.load(0)).toString();
  };
  for (let n = 1; n <= 20; n++) t.equal(await read(n), `v${n}`);
  t.same((await backend.versions('/h.txt')).map((v) => v.version), Array.from({ length: 20 }, (_, i) => i + 1));
  t.equal(listed, 1, 'listed once');
  const changed = async (method: string, params: Record<string, unknown>) => {
    const before = events.length;
    await daemon.call(method, params);
    for (let i = 0; i < 200 && events.length === before; i++) await new Promise((r) => setTimeout(r, 10));
  };
  await changed('write', { path: '/h.txt', content: bytes('v21') });
  t.equal(await read(21), 'v21', 'a version written since is found');
  t.equal(listed, 2, 'listed again once');
  // Deleted and made again: another history, even with the same content as the old newest version.
  await changed('delete', { path: '/h.txt' });
  await changed('write', { path: '/h.txt', content: bytes('v21') });
  t.equal(await read(2), undefined, 'the new file has one version');
  t.equal(await read(1), 'v21');
});
