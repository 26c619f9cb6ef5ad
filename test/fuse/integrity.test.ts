/**
 * @module test/fuse/integrity
 * Data integrity under a seeded random sequence of open / write / read / truncate / ftruncate /
 * fsync / close / rename / unlink / copyFile (copy_file_range) at random offsets (across the 1 MiB chunk boundaries, with several
 * handles open on the same file, files renamed or unlinked while open), applied to the mount and to
 * a plain directory side by side. After every step the touched files are compared byte for byte
 * (and every file every 100 steps); at the end every file is also compared with what RPC reads.
 *
 * The test process only uses async fs on the mount (the daemon serving it is a child process).
 * SVC_FUSE_SEED and SVC_FUSE_STEPS override the seed and the number of steps.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { copyFile, open, readFile, rename, rm, truncate, writeFile, mkdir, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { fuseSkipReason, startMountedDaemon, tempDir, sh } from './harness.js';
import { seededRandom } from '../helpers/random.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

const SEED = Number(process.env.SVC_FUSE_SEED ?? 20260514);
const STEPS = Number(process.env.SVC_FUSE_STEPS ?? 3000);
const MiB = 1024 * 1024;
const NAMES = ['a', 'b', 'c', 'd', 'e'];
const MAX_OPEN = 5;

interface Pair {
  name: string;
  mount: FileHandle;
  plain: FileHandle;
}

/** Run `fn` on both sides; both must succeed or fail with the same code. Returns both results. */
async function both<T>(fn: (side: 'mount' | 'plain') => Promise<T>): Promise<{ m?: T; p?: T; code?: string; mismatch?: string }> {
  const settle = async (side: 'mount' | 'plain') => {
    try {
      return { value: await fn(side) };
    } catch (err) {
      return { code: (err as NodeJS.ErrnoException).code ?? String(err) };
    }
  };
  const p = await settle('plain');
  const m = await settle('mount');
  if (p.code !== m.code) return { mismatch: `plain ${p.code ?? 'ok'} vs mount ${m.code ?? 'ok'}` };
  return { m: m.value, p: p.value, code: p.code };
}

t.test(`random operations on the mount match a plain directory (seed ${SEED}, ${STEPS} steps)`, { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const plainBase = tempDir('svc-fuse-plain-');
  t.teardown(() => sh(`rm -rf '${plainBase}'`));
  const dirs = { mount: join(d.mnt, 'r'), plain: join(plainBase, 'r') };
  await mkdir(dirs.mount);
  await mkdir(dirs.plain);
  const at = (side: 'mount' | 'plain', name: string) => join(dirs[side], name);
  const random = seededRandom(SEED);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(xs: T[]): T => xs[int(xs.length)]!;
  // Offsets cluster where bugs live: the start, around the 1 MiB and 2 MiB chunk boundaries, anywhere.
  const offset = () => {
    const r = random();
    if (r < 0.4) return int(64 * 1024);
    if (r < 0.6) return MiB - 64 * 1024 + int(128 * 1024);
    if (r < 0.7) return 2 * MiB - 32 * 1024 + int(64 * 1024);
    return int(2.3 * MiB);
  };
  const length = () => (random() < 0.8 ? 1 + int(8 * 1024) : 1 + int(300 * 1024));
  const bytes = (n: number) => {
    const b = Buffer.alloc(n);
    for (let i = 0; i + 4 <= n; i += 4) b.writeUInt32LE((random() * 2 ** 32) >>> 0, i);
    for (let i = n - (n % 4); i < n; i++) b[i] = int(256);
    return b;
  };

  const handles: Pair[] = [];
  const log: string[] = [];
  let failures = 0;

  const compare = async (name: string, step: number) => {
    const r = await both((side) => readFile(at(side, name)));
    if (r.mismatch) return `${name}: existence differs (${r.mismatch})`;
    if (r.code) return undefined;
    if (!r.m!.equals(r.p!)) {
      let i = 0;
      while (i < Math.min(r.m!.length, r.p!.length) && r.m![i] === r.p![i]) i++;
      return `${name} differs at step ${step}: sizes mount ${r.m!.length} plain ${r.p!.length}, first difference at byte ${i}`;
    }
    return undefined;
  };

  for (let step = 1; step <= STEPS && failures === 0; step++) {
    const r = random();
    const touched = new Set<string>();
    let what = '';
    let outcome: { mismatch?: string } = {};
    if (r < 0.12 && handles.length < MAX_OPEN) {
      const name = pick(NAMES);
      const flags = random() < 0.5 ? 'r+' : random() < 0.5 ? 'w+' : 'a+';
      what = `open ${name} ${flags}`;
      const res = await both((side) => open(at(side, name), flags === 'r+' ? 'r+' : flags));
      outcome = res;
      if (!res.code && !res.mismatch) handles.push({ name, mount: res.m!, plain: res.p! });
      else if (res.mismatch) { await res.m?.close(); await res.p?.close(); }
      touched.add(name);
    } else if (r < 0.40 && handles.length) {
      const h = pick(handles);
      const pos = offset();
      const data = bytes(length());
      what = `write ${h.name} @${pos} +${data.length}`;
      outcome = await both((side) => h[side].write(data, 0, data.length, pos).then((w) => w.bytesWritten));
      touched.add(h.name);
    } else if (r < 0.55 && handles.length) {
      const h = pick(handles);
      const pos = offset();
      const len = length();
      what = `read ${h.name} @${pos} +${len}`;
      const res = await both(async (side) => {
        const buf = Buffer.alloc(len);
        const { bytesRead } = await h[side].read(buf, 0, len, pos);
        return buf.subarray(0, bytesRead);
      });
      outcome = res;
      if (!res.mismatch && !res.code && !res.m!.equals(res.p!)) outcome = { mismatch: `read through the handle: ${res.m!.length} vs ${res.p!.length} bytes, contents differ` };
    } else if (r < 0.62 && handles.length) {
      const h = pick(handles);
      const size = random() < 0.3 ? 0 : offset();
      what = `ftruncate ${h.name} ${size}`;
      outcome = await both((side) => h[side].truncate(size));
      touched.add(h.name);
    } else if (r < 0.67) {
      const name = pick(NAMES);
      const size = offset();
      what = `truncate ${name} ${size}`;
      outcome = await both((side) => truncate(at(side, name), size));
      touched.add(name);
    } else if (r < 0.72 && handles.length) {
      const h = pick(handles);
      what = `fsync ${h.name}`;
      outcome = await both((side) => h[side].sync());
    } else if (r < 0.84 && handles.length) {
      const i = int(handles.length);
      const h = handles[i]!;
      handles.splice(i, 1);
      what = `close ${h.name}`;
      outcome = await both((side) => h[side].close());
      touched.add(h.name);
    } else if (r < 0.90) {
      const from = pick(NAMES);
      const to = pick(NAMES);
      what = `rename ${from} ${to}`;
      outcome = await both((side) => rename(at(side, from), at(side, to)));
      for (const h of handles) if (h.name === from && from !== to && !outcome.mismatch) h.name = to;
      touched.add(from).add(to);
    } else if (r < 0.95) {
      const name = pick(NAMES);
      what = `unlink ${name}`;
      outcome = await both((side) => rm(at(side, name)));
      for (const h of handles) if (h.name === name) h.name = `(unlinked ${name})`;
      touched.add(name);
    } else if (r < 0.97) {
      // copyFile uses copy_file_range: the daemon shares a clean source's chunks, or copies bytes.
      const from = pick(NAMES);
      const to = pick(NAMES.filter((n) => n !== from));
      what = `copyFile ${from} ${to}`;
      outcome = await both((side) => copyFile(at(side, from), at(side, to)));
      touched.add(to);
    } else {
      const name = pick(NAMES);
      const data = bytes(random() < 0.5 ? int(2000) : int(2.2 * MiB));
      what = `writeFile ${name} ${data.length}`;
      outcome = await both((side) => writeFile(at(side, name), data));
      touched.add(name);
    }
    log.push(`${step}: ${what}${outcome.mismatch ? ` -> ${outcome.mismatch}` : ''}`);
    const problems: string[] = [];
    if (outcome.mismatch) problems.push(`${what}: ${outcome.mismatch}`);
    for (const name of step % 100 === 0 ? NAMES : [...touched]) {
      const p = await compare(name, step);
      if (p) problems.push(p);
    }
    if (problems.length) {
      failures++;
      t.fail(`step ${step}: ${problems.join('; ')}`, { last: log.slice(-25), daemon: d.output().slice(-3000) });
    }
  }
  for (const h of handles) await Promise.all([h.mount.close(), h.plain.close()]);
  // fsync of the directory: the mount's last closes (answered once journaled) are committed and flushed.
  const dirHandle = await open(dirs.mount, 'r');
  await dirHandle.sync();
  await dirHandle.close();
  if (failures === 0) t.pass(`${STEPS} steps: mount and plain directory agreed after every step`);

  // Every handle is closed: what the store holds is what the plain directory holds.
  for (const name of NAMES) {
    const plain = await readFile(at('plain', name)).catch(() => undefined);
    const meta = await d.rpc('get_metadata', { path: `/r/${name}` });
    if (!plain) {
      t.equal(meta, null, `${name}: absent from the store too`);
      continue;
    }
    const stored = Buffer.from((await d.rpc('read', { path: `/r/${name}` })).data, 'base64');
    t.ok(stored.equals(plain), `${name}: RPC reads what the plain directory holds (${plain.length} bytes)`);
    t.equal(meta.etag, createHash('sha256').update(plain).digest('hex'), `${name}: etag is the SHA-256 of the content`);
  }
  const names = (await d.rpc('list', { path: '/r', recursive: true })) as string[];
  t.same(names.filter((n) => n.includes('.fuse_hidden')), [], 'no hidden files reached the store');
});
