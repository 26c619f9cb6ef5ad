/**
 * The engine against a brute-force model of the built-in rules (spec §2.4, WIRE.md): random
 * graphs of users, nested and cyclic groups (both subject forms), grants on a small tree, explicit
 * parent tuples and expired tuples. For every (user, permission, path) the answer of check() (which
 * decides groups bottom-up), of explain() (top-down, and its path must be made of live tuples) and
 * of expand() must equal the model's least fixed point. Each graph lives in its own tenant.
 */
import t from 'tap';
import { parentOf } from '../../src/core/paths.js';
import type { SubjectTuple } from '../../src/rebac/service.js';
import { open, testClock } from './fixture.js';

interface Tuple { subject: SubjectTuple; relation: string; object: [string, string]; live: boolean }

const USERS = ['u0', 'u1', 'u2', 'u3'];
const GROUPS = ['g0', 'g1', 'g2', 'g3', 'g4'];
const DIRS = ['/a', '/a/b', '/a/b/c', '/d', '/d/e', '/f'];
const PATHS = ['/', ...DIRS, '/a/b/c/x.txt', '/d/e/y.txt', '/f/z.txt'];
const PERMS = { read: 'viewer', write: 'editor', delete: 'owner', share: 'owner' } as const;

function rng(seed: number): (n: number) => number {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x % n;
  };
}

/** The model: least fixed point of owner/editor/viewer over every (user, path), groups included. */
function model(tuples: Tuple[]) {
  const live = tuples.filter((x) => x.live);
  const member = new Map(USERS.map((u) => [u, new Set<string>()]));
  for (let changed = true; changed;) {
    changed = false;
    for (const x of live) {
      if (x.relation !== 'member') continue;
      for (const u of USERS) {
        const s = member.get(u)!;
        const inSubject = x.subject[0] === 'user' ? x.subject[1] === u : s.has(x.subject[1]);
        if (inSubject && !s.has(x.object[1])) {
          s.add(x.object[1]);
          changed = true;
        }
      }
    }
  }
  const holds = (u: string, subject: SubjectTuple) => (subject[0] === 'user' ? subject[1] === u : member.get(u)!.has(subject[1]));
  const parents = (p: string) => [
    ...(p === '/' ? [] : [parentOf(p)]),
    ...live.filter((x) => x.relation === 'parent' && x.subject[1] === p).map((x) => x.object[1]),
  ];
  const rank = { owner: 0, editor: 1, viewer: 2 } as const;
  const has = new Map<string, Set<string>>(); // `${u} ${rel}` -> paths
  const key = (u: string, rel: string) => `${u} ${rel}`;
  for (const u of USERS) for (const rel of Object.keys(rank)) has.set(key(u, rel), new Set());
  const universe = new Set([...PATHS, ...live.flatMap((x) => (x.object[0] === 'file' ? [x.object[1]] : []))]);
  for (let changed = true; changed;) {
    changed = false;
    for (const u of USERS) {
      for (const p of universe) {
        for (const rel of ['owner', 'editor', 'viewer'] as const) {
          if (has.get(key(u, rel))!.has(p)) continue;
          const direct = live.some((x) => x.object[1] === p && x.object[0] === 'file' && holds(u, x.subject)
            && rank[x.relation.replace('direct_', '') as keyof typeof rank] <= rank[rel]);
          const weaker = rel !== 'owner' && has.get(key(u, rel === 'viewer' ? 'editor' : 'owner'))!.has(p);
          const inherited = parents(p).some((q) => has.get(key(u, rel))!.has(q));
          if (direct || weaker || inherited) {
            has.get(key(u, rel))!.add(p);
            changed = true;
          }
        }
      }
    }
  }
  return (u: string, perm: keyof typeof PERMS, p: string) => has.get(key(u, PERMS[perm]))!.has(p);
}

t.test('check, explain and expand agree with the model on 30 random graphs', async (t) => {
  const clock = testClock();
  const { s } = open(t, { clock: clock.now });
  const graphs: { tenant: string; tuples: Tuple[] }[] = [];
  for (let seed = 1; seed <= 30; seed++) {
    const r = rng(seed * 7919);
    const tenant = `t${seed}`;
    const tuples: Tuple[] = [];
    const groupSubject = (): SubjectTuple => (r(2) ? ['group', GROUPS[r(GROUPS.length)]!, 'member'] : ['group', GROUPS[r(GROUPS.length)]!]);
    const subject = (): SubjectTuple => (r(3) ? ['user', USERS[r(USERS.length)]!] : groupSubject());
    const add = async (x: Omit<Tuple, 'live'>, expiring: boolean) => {
      try {
        await s.rebac.create({ ...x, tenantId: tenant, expiresAt: expiring ? new Date(clock.now() + 3_600_000) : undefined });
      } catch {
        return; // a refused parent cycle
      }
      const same = tuples.find((y) => JSON.stringify([y.subject, y.relation, y.object]) === JSON.stringify([x.subject, x.relation, x.object]));
      if (same) same.live = !expiring; // re-creating replaces the expiry
      else tuples.push({ ...x, live: !expiring });
    };
    for (let i = 0; i < 6; i++) {
      await add({ subject: r(2) ? ['user', USERS[r(USERS.length)]!] : groupSubject(), relation: 'member', object: ['group', GROUPS[r(GROUPS.length)]!] }, r(6) === 0);
    }
    for (let i = 0; i < 6; i++) {
      const relation = ['direct_owner', 'direct_editor', 'direct_viewer'][r(3)]!;
      await add({ subject: subject(), relation, object: ['file', PATHS[r(PATHS.length)]!] }, r(6) === 0);
    }
    for (let i = 0; i < 2; i++) {
      await add({ subject: ['file', PATHS[r(PATHS.length)]!], relation: 'parent', object: ['file', DIRS[r(DIRS.length)]!] }, false);
    }
    // Half the graphs: grants to groups nobody is in, so that objects hold more group grants than
    // a user has groups and the engine looks S's groups up instead of scanning.
    if (seed % 2 === 0) {
      for (const p of PATHS) {
        for (let n = 0; n < 6; n++) await add({ subject: ['group', `noise${n}`, 'member'], relation: 'direct_viewer', object: ['file', p] }, false);
      }
    }
    graphs.push({ tenant, tuples });
  }
  clock.advance(3_600_001); // the expiring tuples are gone now
  let cells = 0;
  let granted = 0;
  for (const { tenant, tuples } of graphs) {
    const expected = model(tuples);
    const liveIds = new Set(s.rebac.list({}, tenant).map((x) => x.tuple_id));
    for (const p of PATHS) {
      for (const perm of Object.keys(PERMS) as (keyof typeof PERMS)[]) {
        const expectedSubjects = USERS.filter((u) => expected(u, perm, p));
        const expanded = s.rebac.expand(perm, ['file', p], tenant).subjects.filter(([type]) => type === 'user').map(([, id]) => id);
        if (JSON.stringify(expanded) !== JSON.stringify(expectedSubjects)) {
          t.fail(`${tenant} expand ${perm} ${p}: ${JSON.stringify(expanded)} != ${JSON.stringify(expectedSubjects)}`, { tuples });
        }
        for (const u of USERS) {
          cells++;
          const want = expected(u, perm, p);
          if (want) granted++;
          const got = s.rebac.check(['user', u], perm, ['file', p], tenant);
          const why = s.rebac.explain(['user', u], perm, ['file', p], tenant);
          if (got !== want || why.allowed !== want) {
            t.fail(`${tenant} ${u} ${perm} ${p}: check ${got}, explain ${why.allowed}, model ${want}`, { tuples });
          }
          if (why.allowed) {
            const stale = why.path.filter((e) => e.tuple_id !== undefined && !liveIds.has(e.tuple_id));
            if (stale.length > 0 || why.path[0]?.subject.join() !== `user,${u}`) t.fail(`${tenant} ${u} ${perm} ${p}: bad path`, { path: why.path });
          }
        }
      }
    }
  }
  t.ok(granted > cells / 10 && granted < cells, `a mix of answers (${granted} of ${cells} granted)`);
  t.pass(`${cells} cells checked`);
});
