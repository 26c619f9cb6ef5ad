/**
 * @module test/fuse/tree-integrity
 * Data integrity of a directory tree under a seeded random sequence of mkdir / rmdir / rename
 * (files and directories, onto files, directories and nothing) / writeFile / append / truncate /
 * unlink / rm -r / chmod / utimes / symlink / copyFile (copy_file_range), with a few files held
 * open, written, truncated and read while their names and directories move or go, applied to the
 * mount and to a plain directory side by side. Many of these are answered by the mount from its journal before the
 * store commits them (closes, unlinks, mkdir, rmdir, attribute changes and renames of what is
 * still queued), so after every step the whole tree is compared: names, types, modes, sizes,
 * contents, link targets, and the times set by utimes. Every few hundred steps the daemon is killed with SIGKILL and started again: the tree
 * it serves then must be the plain directory's, every acknowledged change replayed. A third
 * variant runs four such walkers at once, each in a directory of its own, so their requests,
 * batches and journal records interleave.
 *
 * SVC_FUSE_SEED and SVC_FUSE_STEPS override the seed and the number of steps; SVC_FUSE_VARIANT (a part
 * of a variant's name: "RPC", "remote", "four") runs only that variant.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import {
  appendFile, chmod, copyFile, lstat, mkdir, open, readdir, readFile, readlink, rename, rm, rmdir, symlink, truncate, unlink, utimes, writeFile,
  type FileHandle,
} from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fuseSkipReason, startMountedDaemon, startRemoteMount, tempDir, sh } from './harness.js';
import { fuseBinding } from '../../src/native/fuse.js';
import { seededRandom } from '../helpers/random.js';

const skip = fuseSkipReason();
// Five variants of thousands of steps with kill -9 cycles: about two and a half minutes on a quiet
// two-core machine, past the suite's 240 s per file when the machine is busy (a CI run under load
// cut the last variant short). Not a timing assertion: room for the runner not to kill the file.
t.setTimeout(600_000);
if (skip) console.log(`# ${skip}`);
/** The binding mounts use unless a variant names one (SVC_FUSE_BINDING=fuse-native runs them all on fuse-native). */
const BINDING = skip ? undefined : fuseBinding();

const SEED = Number(process.env.SVC_FUSE_SEED ?? 20261125);
const STEPS = Number(process.env.SVC_FUSE_STEPS ?? 1500);
const KILL_EVERY = 300;
const NAMES = ['a', 'b', 'c'];
const MAX_OPEN = 3;
type Side = 'mount' | 'plain';

/** One line per entry, sorted: what a person would see with `ls -lR` and `sha256sum`, less the times nobody set. */
async function snapshot(root: string, pinned: Map<string, number>): Promise<string[]> {
  const lines: string[] = [];
  const walk = async (rel: string) => {
    const entries = await readdir(join(root, rel));
    for (const name of entries.sort()) {
      const path = rel ? `${rel}/${name}` : name;
      const full = join(root, path);
      const st = await lstat(full);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isDirectory()) {
        lines.push(`d ${path} ${mode}`);
        await walk(path);
      } else if (st.isSymbolicLink()) {
        lines.push(`l ${path} -> ${await readlink(full)}`);
      } else {
        const hash = createHash('sha256').update(await readFile(full)).digest('hex').slice(0, 16);
        const time = pinned.has(path) ? ` mtime ${Math.floor(st.mtimeMs / 1000)}` : '';
        lines.push(`f ${path} ${mode} ${st.size} ${hash}${time}`);
      }
    }
  };
  await walk('');
  return lines;
}

/**
 * What one walker's step did: its outcome on both sides. `later`: another face made the change,
 * at these paths; the mount must show it within a second.
 */
type Outcome = { code?: string; mismatch?: string; later?: string[] };

/** The daemon's RPC face, for steps another face takes: `root` is the store's path of the walker's mount directory. */
interface RpcFace {
  call: (method: string, params: Record<string, unknown>) => Promise<unknown>;
  root: string;
}

/** Run `fn` on both sides: both must succeed, or fail with the same code. */
async function both(fn: (side: Side) => Promise<unknown>): Promise<Outcome> {
  const settle = async (side: Side) => {
    try {
      await fn(side);
      return undefined;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code ?? String(err);
    }
  };
  const p = await settle('plain');
  const m = await settle('mount');
  return p === m ? { code: p } : { mismatch: `plain ${p ?? 'ok'} vs mount ${m ?? 'ok'}` };
}

/**
 * Random operations in one directory of the mount and its twin in a plain directory, one at a
 * time (a walker); several walkers may run at once in directories of their own.
 */
class Walker {
  readonly log: string[] = [];
  /** How often each operation succeeded or failed with each code: printed, to see what a seed covers. */
  readonly tally = new Map<string, number>();
  /** Files whose modification time was set by utimes and not changed since: their times are compared. */
  readonly #pinned = new Map<string, number>();
  readonly #handles: { path: string; mount: FileHandle; plain: FileHandle }[] = [];
  readonly #random: () => number;

  readonly #rpc: RpcFace | undefined;
  /**
   * On fuse-native (libfuse 2): lookups do not rename a path onto itself (libfuse 2 never answers
   * one that reaches it: its path locks wait for themselves), and no directory holding a file still
   * open is removed or renamed over (libfuse 2 loses the hidden name of such a file unlinked while
   * open: its descriptor answers ENOENT). Both are fuse-native's documented limits (docs/fuse.md).
   */
  readonly #libfuse2: boolean;

  /** `rpc`: a share of the steps go through RPC instead, and files are not held open. */
  constructor(readonly roots: Record<Side, string>, seed: number, readonly name = '', rpc?: RpcFace, libfuse2 = false) {
    this.#random = seededRandom(seed);
    this.#rpc = rpc;
    this.#libfuse2 = libfuse2;
  }

  /** On fuse-native, whether `dir` holds a file this walker holds open (see {@link #libfuse2}). */
  #holdsOpen(dir: string): boolean {
    return this.#libfuse2 && this.#handles.some((h) => h.path.startsWith(`${dir}/`));
  }

  /** The last steps, for a failure's report (SVC_FUSE_LOG_LINES of them, 30 unless set). */
  recent(): string[] {
    return this.log.slice(-(Number(process.env.SVC_FUSE_LOG_LINES) || 30));
  }

  /**
   * Both trees, as {@link snapshot} lines, and what a lookup of each of `paths` and of the
   * directories above them finds (a listing does not show a name the kernel still caches).
   */
  async snapshots(paths: string[] = []): Promise<[string[], string[]]> {
    const lookups = (side: Side) => Promise.all(paths.flatMap((p) => p.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'))).map(async (p) => {
      const full = join(this.roots[side], p);
      const st = await lstat(full).catch((err: NodeJS.ErrnoException) => err.code ?? String(err));
      // A rename onto itself is answered from the name the kernel holds, without asking the mount
      // (lstat asks it for the attributes): it shows a name the kernel still holds for something gone.
      const held = this.#libfuse2 ? 'not asked' : await rename(full, full).then(() => 'held', (err: NodeJS.ErrnoException) => err.code ?? String(err));
      return `lookup ${p}: ${typeof st === 'string' ? st : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : 'file'}, ${held}`;
    }));
    const [m, p, ml, pl] = await Promise.all([
      snapshot(this.roots.mount, this.#pinned), snapshot(this.roots.plain, this.#pinned), lookups('mount'), lookups('plain'),
    ]);
    return [[...m, ...ml], [...p, ...pl]];
  }

  /** Close the files held open (their writes are acknowledged by the close). */
  async closeAll(): Promise<void> {
    for (const h of this.#handles.splice(0)) await Promise.all([h.mount.close(), h.plain.close()]);
  }

  /** One random operation on both sides; its outcome, logged and tallied (undefined: nothing to do). */
  async step(step: number): Promise<Outcome | undefined> {
    const random = this.#random;
    const int = (n: number) => Math.floor(random() * n);
    const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
    /** A path of depth 1–3 over three names: 39 paths, so operations meet each other often. */
    const path = () => {
      const r = random();
      return Array.from({ length: r < 0.35 ? 1 : r < 0.75 ? 2 : 3 }, () => pick(NAMES)).join('/');
    };
    const bytes = (n: number) => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = int(256);
      return b;
    };
    const size = () => (random() < 0.85 ? int(3000) : int(1.3 * 1024 * 1024));
    const at = (side: Side, p: string) => join(this.roots[side], p);
    const pinned = this.#pinned;
    const unpin = (p: string) => this.#unpin(p);
    const handles = this.#handles;
    if (this.#rpc && random() < 0.3) return this.#log(step, await this.#rpcStep(this.#rpc, path, () => bytes(int(3000))));

    const r = random();
    let what: string;
    let outcome: Outcome;
    if (r < 0.10) {
      const p = path();
      what = `mkdir ${p}`;
      outcome = await both((s) => mkdir(at(s, p)));
    } else if (r < 0.16) {
      const p = path();
      if (this.#holdsOpen(p)) return undefined;
      what = `rmdir ${p}`;
      outcome = await both((s) => rmdir(at(s, p)));
      if (!outcome.code && !outcome.mismatch) unpin(p);
    } else if (r < 0.20) {
      // rm -r: unlinks and rmdirs bottom up, of things that may still be queued.
      const p = path();
      if (this.#holdsOpen(p)) return undefined;
      what = `rm -r ${p}`;
      outcome = await both((s) => rm(at(s, p), { recursive: true }));
      if (!outcome.code && !outcome.mismatch) unpin(p);
    } else if (r < 0.36) {
      const p = path();
      const data = bytes(size());
      what = `writeFile ${p} ${data.length}`;
      outcome = await both((s) => writeFile(at(s, p), data));
      pinned.delete(p);
    } else if (r < 0.41) {
      const p = path();
      const data = bytes(1 + int(500));
      what = `append ${p} ${data.length}`;
      outcome = await both((s) => appendFile(at(s, p), data));
      pinned.delete(p);
    } else if (r < 0.45) {
      const p = path();
      const n = int(4000);
      what = `truncate ${p} ${n}`;
      outcome = await both((s) => truncate(at(s, p), n));
      pinned.delete(p);
    } else if (r < 0.52) {
      const p = path();
      what = `unlink ${p}`;
      outcome = await both((s) => unlink(at(s, p)));
      if (!outcome.code && !outcome.mismatch) pinned.delete(p);
    } else if (r < 0.69) {
      const from = path();
      // Half the renames go to a sibling: the common case (a temporary name onto the real one).
      const to = random() < 0.5 ? from.replace(/[^/]+$/, pick(NAMES)) : path();
      if (this.#holdsOpen(to)) return undefined;
      what = `rename ${from} ${to}`;
      outcome = await both((s) => rename(at(s, from), at(s, to)));
      if (!outcome.code && !outcome.mismatch && from !== to) {
        unpin(to);
        for (const [k, v] of [...pinned]) {
          if (k === from || k.startsWith(`${from}/`)) {
            pinned.delete(k);
            pinned.set(to + k.slice(from.length), v);
          }
        }
        for (const h of handles) if (h.path === from || h.path.startsWith(`${from}/`)) h.path = to + h.path.slice(from.length);
      }
    } else if (r < 0.75) {
      const p = path();
      const mode = pick([0o600, 0o640, 0o644, 0o700, 0o750, 0o755]);
      what = `chmod ${p} ${mode.toString(8)}`;
      outcome = await both((s) => chmod(at(s, p), mode));
    } else if (r < 0.81) {
      const p = path();
      const when = 1_000_000_000 + int(500_000_000);
      what = `utimes ${p} ${when}`;
      outcome = await both((s) => utimes(at(s, p), when, when));
      if (!outcome.code && !outcome.mismatch) pinned.set(p, when);
    } else if (r < 0.84) {
      // copy_file_range through libuv (the mount shares the stored chunks, or copies them).
      const from = path();
      const to = path();
      what = `copyFile ${from} ${to}`;
      outcome = await both((s) => copyFile(at(s, from), at(s, to)));
      if (!outcome.code && !outcome.mismatch) pinned.delete(to);
    } else if (r < 0.87) {
      const p = path();
      const target = pick(['../x', 'a/b', 'somewhere/else', 'c']);
      what = `symlink ${target} ${p}`;
      outcome = await both((s) => symlink(target, at(s, p)));
    } else if (r < 0.91 && handles.length < MAX_OPEN && !this.#rpc) {
      const p = path();
      what = `open ${p} a+`;
      const opened: Partial<Record<Side, FileHandle>> = {};
      outcome = await both(async (s) => {
        opened[s] = await open(at(s, p), 'a+');
      });
      if (!outcome.code && !outcome.mismatch) handles.push({ path: p, mount: opened.mount!, plain: opened.plain! });
      else await Promise.all([opened.mount?.close(), opened.plain?.close()]);
      pinned.delete(p);
    } else if (r < 0.93 && handles.length) {
      // Through the descriptor, whatever became of its name (renamed, unlinked, its directory
      // removed or renamed over): truncate, then the size and bytes fstat and pread see.
      const h = pick(handles);
      const n = int(3000);
      what = `ftruncate ${h.path} (open) ${n}, fstat, pread`;
      const seen: Partial<Record<Side, string>> = {};
      outcome = await both(async (s) => {
        await h[s].truncate(n);
        const { size } = await h[s].stat();
        const { buffer, bytesRead } = await h[s].read(Buffer.alloc(size + 1), 0, size + 1, 0);
        seen[s] = `size ${size}, ${bytesRead} bytes read, sha1 ${createHash('sha1').update(buffer.subarray(0, bytesRead)).digest('hex')}`;
      });
      if (!outcome.code && !outcome.mismatch && seen.plain !== seen.mount) outcome = { mismatch: `plain ${seen.plain} vs mount ${seen.mount}` };
      pinned.delete(h.path);
    } else if (r < 0.975 && handles.length) {
      const h = pick(handles);
      const data = bytes(1 + int(2000));
      what = `write ${h.path} (open) ${data.length}`;
      outcome = await both((s) => h[s].write(data));
      pinned.delete(h.path);
    } else if (handles.length) {
      const h = handles.splice(int(handles.length), 1)[0]!;
      what = `close ${h.path}`;
      outcome = await both((s) => h[s].close());
      pinned.delete(h.path);
    } else {
      return undefined;
    }
    return this.#log(step, { what, ...outcome });
  }

  #unpin(p: string): void {
    for (const k of [...this.#pinned.keys()]) if (k === p || k.startsWith(`${p}/`)) this.#pinned.delete(k);
  }

  #log(step: number, outcome: Outcome & { what: string }): Outcome {
    const { what } = outcome;
    const kind = `${what.split(' ').slice(0, what.startsWith('rpc ') ? 2 : 1).join(' ')} ${outcome.code ?? 'ok'}`;
    this.tally.set(kind, (this.tally.get(kind) ?? 0) + 1);
    this.log.push(`${this.name}${step}: ${what}${outcome.code ? ` (${outcome.code})` : ''}${outcome.mismatch ? ` -> ${outcome.mismatch}` : ''}`);
    return outcome;
  }

  /**
   * A change through RPC, mirrored on the plain side where RPC made it (RPC's rules: a write
   * makes missing parents and replaces a link, a rename makes missing parents). A path through a
   * link on the plain side is left alone (RPC does not follow links, the plain side would).
   */
  async #rpcStep(rpc: RpcFace, path: () => string, data: () => Buffer): Promise<Outcome & { what: string }> {
    const r = this.#random();
    const plain = (p: string) => join(this.roots.plain, p);
    const stored = (p: string) => `${rpc.root}/${p}`;
    const parents = (p: string) => mkdir(dirname(plain(p)), { recursive: true });
    let what: string;
    let paths: string[];
    let act: () => Promise<unknown>;
    let mirror: () => Promise<unknown>;
    if (r < 0.4) {
      const p = path();
      const bytes = data();
      [what, paths] = [`rpc write ${p} ${bytes.length}`, [p]];
      act = () => rpc.call('write', { path: stored(p), content: { __type__: 'bytes', data: bytes.toString('base64') } });
      mirror = async () => {
        await parents(p);
        if ((await lstat(plain(p)).catch(() => undefined))?.isSymbolicLink()) await unlink(plain(p));
        await writeFile(plain(p), bytes);
      };
    } else if (r < 0.6) {
      const p = path();
      [what, paths] = [`rpc delete ${p}`, [p]];
      act = () => rpc.call('delete', { path: stored(p) });
      mirror = () => unlink(plain(p));
    } else if (r < 0.8) {
      const from = path();
      const to = path();
      [what, paths] = [`rpc rename ${from} ${to}`, [from, to]];
      act = () => rpc.call('rename', { old_path: stored(from), new_path: stored(to), overwrite: true });
      mirror = async () => {
        await parents(to);
        await rename(plain(from), plain(to));
      };
    } else if (r < 0.9) {
      const p = path();
      [what, paths] = [`rpc mkdir ${p}`, [p]];
      act = () => rpc.call('mkdir', { path: stored(p) });
      mirror = () => mkdir(plain(p));
    } else {
      const p = path();
      [what, paths] = [`rpc rmdir -r ${p}`, [p]];
      act = () => rpc.call('rmdir', { path: stored(p), recursive: true });
      mirror = () => rm(plain(p), { recursive: true });
    }
    for (const p of paths) {
      const parts = p.split('/');
      for (let i = 1; i < parts.length; i++) {
        if ((await lstat(plain(parts.slice(0, i).join('/'))).catch(() => undefined))?.isSymbolicLink()) return { what, code: 'skipped: a link on the way' };
      }
    }
    for (const p of paths) this.#unpin(p);
    try {
      await act();
    } catch (err) {
      const e = err as { code?: number; data?: { errno?: string } };
      return { what, code: `rpc ${e.data?.errno ?? e.code ?? String(err)}` };
    }
    try {
      await mirror();
    } catch (err) {
      return { what, mismatch: `RPC did it, the plain side refused: ${(err as NodeJS.ErrnoException).code}` };
    }
    return { what, later: paths };
  }
}

/**
 * The daemon's own mount, killed and started again every {@link KILL_EVERY} steps; a remote mount
 * of it (`svc mount --remote-url`: every change through RPC), for half the steps, unkilled; and
 * four walkers at once on the daemon's mount, each in a directory of its own (their requests,
 * batches and journal records interleave), killed and started again every {@link KILL_EVERY} steps
 * of each; the daemon's mount with three steps in ten taken through RPC instead (the mount
 * must show each within a second), killed like the first; and the daemon's mount on fuse-native
 * (the fallback binding), for a third of the steps, killed like the first.
 */
const VARIANTS = [
  { name: 'the daemon\'s mount', remote: false, walkers: 1, steps: STEPS, killEvery: KILL_EVERY },
  { name: 'a remote mount', remote: true, walkers: 1, steps: Math.ceil(STEPS / 2), killEvery: 0 },
  { name: 'the daemon\'s mount, four walkers at once', remote: false, walkers: 4, steps: Math.ceil(STEPS / 2), killEvery: KILL_EVERY },
  { name: 'the daemon\'s mount, with changes through RPC between', remote: false, walkers: 1, steps: STEPS, killEvery: KILL_EVERY, rpc: true },
  // The fallback binding, within its documented limits (Walker's libfuse2).
  { name: 'the daemon\'s mount on fuse-native', remote: false, walkers: 1, steps: Math.ceil(STEPS / 3), killEvery: KILL_EVERY, binding: 'fuse-native' as const },
];

/** `SVC_FUSE_VARIANT=rpc` (a part of a variant's name) runs only the variants it names (hunting a seed). */
const ONLY = process.env.SVC_FUSE_VARIANT;

for (const variant of VARIANTS.filter((v) => !ONLY || v.name.includes(ONLY))) t.test(`random tree operations on ${variant.name} match a plain directory${variant.killEvery ? ', across kill -9' : ''} (seed ${SEED}, ${variant.steps} steps${variant.walkers > 1 ? ' each' : ''})`, { skip }, async (t) => {
  const { steps, killEvery } = variant;
  const binding = 'binding' in variant ? variant.binding : undefined;
  const d = await startMountedDaemon(t, { binding });
  const libfuse2 = (binding ?? BINDING) === 'fuse-native';
  const served = variant.remote ? await startRemoteMount(t, d.url) : d;
  const plainBase = tempDir('svc-fuse-plain-tree-');
  t.teardown(() => sh(`rm -rf '${plainBase}'`));
  const base = { mount: join(served.mnt, 't'), plain: join(plainBase, 't') };
  await mkdir(base.mount);
  await mkdir(base.plain);
  const walkers: Walker[] = [];
  for (let i = 0; i < variant.walkers; i++) {
    // Two levels down: a link to ../x at a walker's top still points into its own directory.
    const sub = variant.walkers > 1 ? `w${i}/r` : '';
    const roots = { mount: join(base.mount, sub), plain: join(base.plain, sub) };
    if (sub) await Promise.all([mkdir(roots.mount, { recursive: true }), mkdir(roots.plain, { recursive: true })]);
    const rpc = variant.rpc ? { call: (method: string, params: Record<string, unknown>) => d.rpc(method, params), root: `/t${sub ? `/${sub}` : ''}` } : undefined;
    walkers.push(new Walker(roots, SEED + i, variant.walkers > 1 ? `w${i} ` : '', rpc, libfuse2));
  }
  let failures = 0;
  let kills = 0;
  const fail = (w: Walker, message: string, extra: Record<string, unknown> = {}) => {
    failures++;
    t.fail(message, { ...extra, last: w.recent(), daemon: served.output().slice(-3000) });
  };
  /**
   * The trees agree, and lookups of `later`'s paths, within a second when another face changed
   * them (the change reaches the mount through its kernel cache notifications).
   */
  const check = async (w: Walker, when: string, later?: string[]) => {
    for (const deadline = Date.now() + (later ? 1000 : 0); ;) {
      // Within the second, a walk may also meet a name listed and gone when looked up (or the
      // reverse) while the change reaches the kernel: that is tried again like a difference.
      const snapshots = await w.snapshots(later).catch((err: Error) => {
        if (Date.now() < deadline) return undefined;
        throw err;
      });
      if (!snapshots) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      const [m, p] = snapshots;
      if (m.join('\n') === p.join('\n')) return true;
      if (Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      failures++;
      t.same(m, p, `${w.name}${when}: the mount's tree is the plain directory's`, { last: w.recent(), daemon: served.output().slice(-3000) });
      return false;
    }
  };
  /** Steps `from`..`to` of one walker, each checked; false once the trees disagreed. */
  const walk = async (w: Walker, from: number, to: number) => {
    for (let step = from; step <= to && failures === 0; step++) {
      const outcome = await w.step(step);
      if (!outcome) continue;
      if (outcome.mismatch) {
        fail(w, `${w.name}step ${step}: ${w.log.at(-1)}`);
        return;
      }
      if (!(await check(w, `step ${step}`, outcome.later))) return;
    }
  };

  const round = killEvery || steps;
  for (let from = 1; from <= steps && failures === 0; from += round) {
    const to = Math.min(steps, from + round - 1);
    await Promise.all(walkers.map((w) => walk(w, from, to)));
    if (failures || !killEvery || to % killEvery !== 0) continue;
    // What the writers were told is done must survive a crash: close the open files (their writes
    // are acknowledged by the close), kill the daemon before its queue can drain, start it again.
    // No pause between the last close and the kill: a file created or truncated and closed
    // without a write is stored at its flush too, within close(2), not only at its release.
    for (const w of walkers) await w.closeAll();
    await d.kill9();
    await d.start();
    kills++;
    for (const w of walkers) {
      w.log.push(`${to}: kill -9 and start again`);
      if (!(await check(w, `after kill -9 at step ${to}`))) break;
    }
  }
  for (const w of walkers) {
    await w.closeAll();
    t.comment(`${w.name}${[...w.tally].sort().map(([k, n]) => `${k}: ${n}`).join(', ')}`);
  }
  if (failures === 0) t.pass(`${steps} steps${walkers.length > 1 ? ` of ${walkers.length} walkers at once` : ''} and ${kills} kills: the trees agreed after every step and every restart`);

  // Everything is closed: after the queue drains, RPC lists exactly the plain tree, with its bytes.
  const dir = await open(base.mount, 'r');
  await dir.sync();
  await dir.close();
  const plain = await snapshot(base.plain, new Map());
  const files = plain.filter((l) => l.startsWith('f ')).map((l) => l.split(' ')[1]!);
  const listed = ((await d.rpc('list', { path: '/t', recursive: true })) as string[])
    .map((p) => p.replace(/^\/t\//, ''))
    .filter((p) => !p.endsWith('/'));
  const links = plain.filter((l) => l.startsWith('l ')).map((l) => l.split(' ')[1]!);
  t.same(listed.filter((p) => !links.includes(p)).sort(), files.sort(), 'RPC lists the plain tree\'s files');
  for (const f of files) {
    const content = await readFile(join(base.plain, f));
    const meta = await d.rpc('get_metadata', { path: `/t/${f}` });
    t.equal(meta?.etag, createHash('sha256').update(content).digest('hex'), `${f}: the store's etag is the plain file's SHA-256`);
  }
});
