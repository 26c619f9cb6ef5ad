/**
 * @module bench/rebac
 * ReBAC check latency (issue 3): p50/p99 of an in-process permission check on a 6-level directory
 * tree holding 100,000 tuples (target p50 ≤ 50 µs). Tuples: direct grants to 2,000 users on
 * directories and files at every level, group grants (usersets and plain groups), memberships in
 * 100 groups of which some are nested. Checks ask read/write/delete/share of a file six levels
 * deep. Prints figures only, never asserts; every loop is bounded. Run: `npx tsx bench/rebac.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildServices } from '../src/daemon.js';
import type { SubjectTuple } from '../src/rebac/service.js';

const TUPLES = 100_000;
const FANOUT = 6; // 6 children per directory, 5 directory levels + the file = 6 levels
const FILES_PER_DIR = 13;
const USERS = 2_000;
const GROUPS = 100;
const CHECKS = 20_000;
const WARMUP = 2_000;
const PERMISSIONS = ['read', 'write', 'delete', 'share'] as const;
const RELATIONS = ['direct_viewer', 'direct_viewer', 'direct_editor', 'direct_owner'] as const;

/** Deterministic pseudo-random integers (xorshift32), so runs are comparable. */
function rng(seed: number): (n: number) => number {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x % n;
  };
}

function dirAt(rand: (n: number) => number, depth: number): string {
  let p = '';
  for (let d = 1; d <= depth; d++) p += `/d${d}_${rand(FANOUT)}`;
  return p;
}

const fileAt = (rand: (n: number) => number) => `${dirAt(rand, 5)}/f${rand(FILES_PER_DIR)}.txt`;

function percentile(sorted: Float64Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function measure(label: string, n: number, once: (i: number) => boolean): void {
  for (let i = 0; i < WARMUP; i++) once(i);
  const times = new Float64Array(n);
  let granted = 0;
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    if (once(i)) granted++;
    times[i] = Number(process.hrtime.bigint() - t) / 1000;
  }
  times.sort();
  const mean = times.reduce((a, b) => a + b, 0) / n;
  console.log(
    `${label.padEnd(44)} p50 ${percentile(times, 0.5).toFixed(1).padStart(6)} µs   p99 ${percentile(times, 0.99).toFixed(1).padStart(6)} µs   `
      + `mean ${mean.toFixed(1).padStart(6)} µs   granted ${((100 * granted) / n).toFixed(0)}%   (n=${n})`,
  );
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-rebac-'));
  const services = buildServices(dir, pino({ level: 'silent' }));
  const { rebac } = services;
  try {
    const rand = rng(42);
    const user = (i: number): SubjectTuple => ['user', `u${i}`];
    const started = process.hrtime.bigint();
    const batch: Promise<string>[] = [];
    const seen = new Set<string>();
    let created = 0;
    const add = (subject: SubjectTuple, relation: string, object: readonly [string, string]) => {
      const key = JSON.stringify([subject, relation, object]);
      if (seen.has(key)) return;
      seen.add(key);
      created++;
      batch.push(rebac.create({ subject, relation, object }));
    };
    const flush = async () => {
      await Promise.all(batch);
      batch.length = 0;
    };
    // Group structure: every user in one group; groups 0-9 nested in groups 10-19.
    for (let u = 0; u < USERS; u++) add(user(u), 'member', ['group', `g${u % GROUPS}`]);
    for (let g = 0; g < 10; g++) add(['group', `g${g}`, 'member'], 'member', ['group', `g${g + 10}`]);
    await flush();
    // The rest: grants spread over every level (more on deeper levels, as in real trees).
    while (created < TUPLES) {
      const kind = rand(100);
      const depth = 1 + rand(6);
      const object = depth === 6 ? fileAt(rand) : dirAt(rand, depth);
      const relation = RELATIONS[rand(RELATIONS.length)]!;
      const subject: SubjectTuple = kind < 3 ? ['group', `g${rand(GROUPS)}`, 'member'] : kind < 5 ? ['group', `g${rand(GROUPS)}`] : user(rand(USERS));
      add(subject, relation, ['file', object]);
      if (batch.length >= 2_000) await flush();
    }
    await flush();
    const loadMs = Number(process.hrtime.bigint() - started) / 1e6;
    const stored = rebac.list({}).length;
    console.log(`svc rebac bench: ${stored} tuples on a 6-level tree (${FANOUT} subdirectories per directory, ${FILES_PER_DIR} files in each `
      + `of the deepest), loaded in ${(loadMs / 1000).toFixed(1)} s`);
    console.log(`node ${process.version}, ${process.platform}/${process.arch}, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), `
      + `load ${loadavg()[0]!.toFixed(2)}; check = RebacService.check (in-process, LMDB reads)\n`);

    const q = rng(7);
    const files = Array.from({ length: CHECKS + WARMUP }, () => fileAt(q));
    const users = Array.from({ length: CHECKS + WARMUP }, () => q(USERS));
    const perms = Array.from({ length: CHECKS + WARMUP }, () => PERMISSIONS[q(PERMISSIONS.length)]!);
    measure('random user, permission, file (6 levels)', CHECKS, (i) => rebac.check(user(users[i]!), perms[i]!, ['file', files[i]!]));
    measure('unknown user (full walk, always denied)', CHECKS, (i) => rebac.check(['user', 'nobody'], 'read', ['file', files[i]!]));
    const owner = files[0]!.split('/').slice(0, 2).join('/');
    await rebac.create({ subject: ['user', 'root-owner'], relation: 'direct_owner', object: ['file', owner] });
    measure('owner of the top directory, read', CHECKS, () => rebac.check(['user', 'root-owner'], 'read', ['file', files[0]!]));
    measure('nested-group member (g0 in g10), read', CHECKS, (i) => rebac.check(user(0), 'read', ['file', files[i]!]));
    const ctx = { authenticated: true, subjectType: 'user', subjectId: 'u1', tenantId: 'default', isAdmin: false, source: 'bench' };
    measure('canAccessPath(ctx, read, path)', CHECKS, (i) => rebac.canAccessPath(ctx, 'read', files[i]!));
    const filter = rebac.pathFilter(ctx, 'read');
    measure('pathFilter (one listing, shared ancestors)', CHECKS, (i) => filter(files[i]!));
  } finally {
    await services.mounts.close();
    await services.store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
