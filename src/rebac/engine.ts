/**
 * @module rebac/engine
 * Evaluation of namespace configs against stored tuples: check, explain and expand (spec §4.11).
 *
 * A check asks "does subject S hold name N on object O" and walks the config of O's type
 * top-down: a permission is the union of its relations; a union/intersection combines relations
 * of the same object; a tupleToUserset follows `(O, tupleset, X)` edges (and, for a `path_parent`
 * tupleset, the containing directory of a path) and asks the computed relation on X; a concrete
 * relation is one point lookup of S's grants on O, plus, only when O's node records set subjects
 * for that relation, the sets S may be in.
 *
 * Since S is fixed for a whole evaluation, S's grants on an object are one key: a check of a file
 * six directories deep touches each of the seven nodes (root included) with at most two point
 * lookups (the node summary, then S's grants when the node has any tuples).
 *
 * Group grants are decided bottom-up: the groups S belongs to (nested ones included) are read once
 * from the members index, and a set subject of group form (`[group, g]`, `[group, g, member]`) is
 * then a set-membership test, or, when S is in few groups and the object has many group grants, a
 * point lookup per group of S. This holds while group membership is plain data: the `group`
 * namespace's `member` is concrete and the tenant has no membership whose subject is another kind
 * of userset. Otherwise, and when explaining, every set is asked recursively, top-down.
 *
 * Every (name, object) is evaluated at most once per evaluation (memo). Cycles (group A member of
 * B member of A, explicit parent loops) are cut: a name met again while it is being evaluated
 * counts as not granted, and a "not granted" that depended on such a cut is not memoised until
 * the evaluation that was cut finishes (the least fixed point, as with Tarjan's lowlink). All
 * combinators are monotone, so a cut never turns a denial into a grant.
 *
 * Recursion follows the path upwards one level at a time. For a path deeper than
 * {@link PREWARM_LEVELS}, the names inherited through the path hierarchy are first evaluated on
 * the ancestors from the root down, so each level finds its parent's answer memoised and the
 * stack stays shallow whatever the depth (paths may have 2,048 levels).
 */
import { parentOf } from '../core/paths.js';
import type { Table } from '../store/types.js';
import type { CompiledNamespace, RelationDef } from '../namespaces/config.js';
import type { NamespaceService } from '../namespaces/service.js';
import {
  type GrantRecord, type GroupGrantRecord, type IndexEntry, type MemberRecord, type NodeSummary, type TenantSummary,
  SEP, SET_RELATION, groupGrantEntryName, isGroupForm, isSetSubject, live, nodeKey, subjectSuffix, setRange, outRange,
  parseSetKey, parseSubjectKey, prefixRange, tooLong,
} from './records.js';

/** `[type, id]`, or a userset `[type, id, relation]`. */
export type SubjectTuple = readonly [string, string] | readonly [string, string, string];
export type ObjectTuple = readonly [string, string];

/** One step of an explanation: a stored tuple, or a `parent` edge implied by the path hierarchy. */
export interface ExplainEdge {
  subject: SubjectTuple;
  relation: string;
  object: ObjectTuple;
  /** The stored tuple; absent for an implied edge. */
  tuple_id?: string;
  /** True for a `parent` edge that the path hierarchy implies. */
  implied?: true;
}

/** The tables an evaluation reads. */
export interface EngineTables {
  readonly grants: Table<GrantRecord>;
  readonly sets: Table<IndexEntry>;
  readonly subjects: Table<IndexEntry>;
  readonly nodes: Table<NodeSummary>;
  readonly members: Table<MemberRecord>;
  readonly groupGrants: Table<GroupGrantRecord>;
  readonly tenants: Table<TenantSummary>;
}

/** A grant's proof: the edges from the subject to the object (empty when not explaining). */
type Proof = readonly ExplainEdge[];
const GRANTED: Proof = Object.freeze([]);

/**
 * Deepest chain of nested evaluations before giving up (and denying), far below what exhausts
 * the JS stack. Deep paths never come near it (see the module comment); 400 levels of nested
 * groups or explicit parent tuples would.
 */
export const MAX_DEPTH = 400;

/** Paths deeper than this are evaluated from the root down first. */
export const PREWARM_LEVELS = 64;

/** Names a type inherits through its path hierarchy (the computed names of tupleToUsersets over a path_parent relation). */
const inheritedNames = new WeakMap<CompiledNamespace, readonly string[]>();
function namesInheritedByPath(ns: CompiledNamespace): readonly string[] {
  let names = inheritedNames.get(ns);
  if (!names) {
    const set = new Set<string>();
    for (const def of ns.relations.values()) {
      if (def.kind !== 'ttu') continue;
      const ts = ns.relations.get(def.tupleset);
      if (ts?.kind === 'direct' && ts.pathParent) set.add(def.computed);
    }
    names = [...set];
    inheritedNames.set(ns, names);
  }
  return names;
}

/** Ancestors of a path below the root, outermost first, when it is deeper than {@link PREWARM_LEVELS}. */
function deepAncestors(id: string): string[] | undefined {
  if (!isPath(id) || id.length <= PREWARM_LEVELS * 2) return undefined;
  const out: string[] = ['/'];
  for (let i = id.indexOf('/', 1); i !== -1; i = id.indexOf('/', i + 1)) out.push(id.slice(0, i));
  return out.length > PREWARM_LEVELS ? out : undefined;
}

/** `table.get`, except that a key too long to store finds nothing (instead of an LMDB error). */
function get<V>(table: Table<V>, key: string): V | undefined {
  return tooLong(key) ? undefined : table.get(key);
}

/** `table.range` over a prefix range, empty when the prefix is too long to store. */
function range<V>(table: Table<V>, r: { start: string; end: string }): Iterable<{ key: string; value: V }> {
  return tooLong(r.start) ? [] : table.range(r);
}

const isPath = (id: string) => id.charCodeAt(0) === 47; // '/'


/** One object (or group) an evaluation has visited, with what it learnt about it. */
class Visited {
  readonly type: string;
  readonly id: string;
  readonly key: string;
  summary: NodeSummary | undefined | null = null; // null = not read yet
  /** S's grants on the node: undefined = not looked up yet, null = none. */
  grants: GrantRecord | null | undefined;
  /** Grants of S's groups on the node, by group. */
  groupGrants: Map<string, GroupGrantRecord | null> | undefined;
  /** Answers by name; on-stack depth while being evaluated. */
  readonly memo = new Map<string, Proof | null>();
  readonly stack = new Map<string, number>();
  /** The containing directory, once asked. */
  parent: Visited | undefined;

  constructor(type: string, id: string, key: string) {
    this.type = type;
    this.id = id;
    this.key = key;
  }
}

/**
 * Evaluates names for one subject in one tenant. Reuse one instance for many objects within a
 * request (a directory listing shares its ancestors' answers); never across writes.
 */
export class Evaluation {
  readonly #tables: EngineTables;
  readonly #ns: NamespaceService;
  readonly #tenant: string;
  readonly #subject: SubjectTuple;
  readonly #subjectSuffix: string;
  readonly #explain: boolean;
  /** The time tuple expiry is judged against, fixed for the whole evaluation. */
  readonly #now: number;
  readonly #nodes = new Map<string, Visited>();
  #depth = 0;
  #low = Infinity;
  /** `type SEP id` of the groups S is in; undefined until needed, null when not decidable bottom-up. */
  #groups: Set<string> | null | undefined;

  constructor(tables: EngineTables, ns: NamespaceService, tenant: string, subject: SubjectTuple, explain = false, now = Date.now()) {
    this.#now = now;
    this.#tables = tables;
    this.#ns = ns;
    this.#tenant = tenant;
    this.#subject = subject;
    this.#subjectSuffix = subjectSuffix(subject[0], subject[1], subject[2] ?? '');
    this.#explain = explain;
  }

  /** Whether the subject holds `name` (permission or relation) on the object. */
  check(name: string, type: string, id: string): boolean {
    this.#prewarm(type, id);
    return this.#evaluate(name, this.#node(type, id)) !== null;
  }

  /** The edges that grant `name`, subject first; null when not granted. */
  explain(name: string, type: string, id: string): ExplainEdge[] | null {
    this.#prewarm(type, id);
    const proof = this.#evaluate(name, this.#node(type, id));
    return proof === null ? null : [...proof];
  }

  /** For a deep path: evaluate the inherited names on its ancestors from the root down. */
  #prewarm(type: string, id: string): void {
    const ancestors = deepAncestors(id);
    const ns = ancestors && this.#ns.compiled(type);
    if (!ns) return;
    const names = namesInheritedByPath(ns);
    for (const a of ancestors!) for (const name of names) this.#evaluate(name, this.#node(type, a));
  }

  #evaluate(name: string, node: Visited): Proof | null {
    const memo = node.memo.get(name);
    if (memo !== undefined) return memo;
    const onStack = node.stack.get(name);
    if (onStack !== undefined) {
      if (onStack < this.#low) this.#low = onStack;
      return null;
    }
    const depth = this.#depth;
    if (depth >= MAX_DEPTH) {
      this.#low = -1; // nothing above may memoise a denial that this cut caused
      return null;
    }
    node.stack.set(name, depth);
    this.#depth = depth + 1;
    const outerLow = this.#low;
    this.#low = Infinity;
    const result = this.#compute(name, node);
    this.#depth = depth;
    node.stack.delete(name);
    const low = this.#low;
    if (result !== null || low >= depth) node.memo.set(name, result);
    this.#low = low < depth && low < outerLow ? low : outerLow;
    return result;
  }

  #compute(name: string, node: Visited): Proof | null {
    const ns = this.#ns.compiled(node.type);
    // A type without a config knows only direct tuples, under whatever relation name.
    if (!ns) return this.#direct(name, node, false);
    const permission = ns.permissions.get(name);
    if (permission) {
      for (const rel of permission) {
        const p = this.#relation(ns, rel, node);
        if (p) return p;
      }
      return null;
    }
    const def = ns.relations.get(name);
    return def ? this.#apply(ns, name, def, node) : null;
  }

  /** A relation of the same object: concrete ones are cheap lookups and skip the memo. */
  #relation(ns: CompiledNamespace, rel: string, node: Visited): Proof | null {
    const def = ns.relations.get(rel);
    if (!def) return null;
    return def.kind === 'direct' ? this.#direct(rel, node, def.pathParent) : this.#evaluate(rel, node);
  }

  #apply(ns: CompiledNamespace, name: string, def: RelationDef, node: Visited): Proof | null {
    switch (def.kind) {
      case 'direct':
        return this.#direct(name, node, def.pathParent);
      case 'union':
        for (const rel of def.of) {
          const p = this.#relation(ns, rel, node);
          if (p) return p;
        }
        return null;
      case 'intersection': {
        let all: ExplainEdge[] | undefined = this.#explain ? [] : undefined;
        for (const rel of def.of) {
          const p = this.#relation(ns, rel, node);
          if (!p) return null;
          if (all) all = all.concat(p);
        }
        return all ?? GRANTED;
      }
      case 'ttu':
        return this.#tupleToUserset(ns, def.tupleset, def.computed, node);
    }
  }

  #tupleToUserset(ns: CompiledNamespace, tupleset: string, computed: string, node: Visited): Proof | null {
    const tsDef = ns.relations.get(tupleset);
    if (tsDef?.kind === 'direct' && tsDef.pathParent && isPath(node.id) && node.id !== '/') {
      const parent = (node.parent ??= this.#node(node.type, parentOf(node.id)));
      const p = this.#evaluate(computed, parent);
      if (p) {
        return this.#explain
          ? [...p, { subject: [node.type, node.id], relation: tupleset, object: [node.type, parent.id], implied: true }]
          : GRANTED;
      }
    }
    if (!this.#summary(node)?.o?.[tupleset]) return null;
    for (const { key, value } of range(this.#tables.subjects, outRange(this.#tenant, node.type, node.id, tupleset))) {
      if (!live(value[1], this.#now)) continue;
      const { ot, oi } = parseSubjectKey(key);
      const p = this.#evaluate(computed, this.#node(ot, oi));
      if (p) {
        return this.#explain
          ? [...p, { subject: [node.type, node.id], relation: tupleset, object: [ot, oi], tuple_id: value[0] }]
          : GRANTED;
      }
    }
    return null;
  }

  /** A concrete relation on one object: S's own tuple, an implied path parent, or a set S is in. */
  #direct(rel: string, node: Visited, pathParent: boolean): Proof | null {
    const s = this.#subject;
    if (pathParent && s.length === 2 && s[0] === node.type && isPath(s[1]) && s[1] !== '/' && parentOf(s[1]) === node.id) {
      return this.#explain ? [{ subject: s, relation: rel, object: [node.type, node.id], implied: true }] : GRANTED;
    }
    const summary = this.#summary(node);
    if (!summary) return null;
    if (summary.g > 0) {
      if (node.grants === undefined) node.grants = get(this.#tables.grants, node.key + this.#subjectSuffix) ?? null;
      const entry = node.grants?.[rel];
      if (entry && live(entry[1], this.#now)) {
        return this.#explain ? [{ subject: s, relation: rel, object: [node.type, node.id], tuple_id: entry[0] }] : GRANTED;
      }
    }
    const sets = summary.s?.[rel];
    if (!sets) return null;
    const groups = this.#groupsOfSubject();
    if (groups !== null && !summary.x?.[rel] && groups.size < sets) return this.#groupLookups(node, rel, groups);
    for (const { key, value } of range(this.#tables.sets, setRange(this.#tenant, node.type, node.id, rel))) {
      if (!live(value[1], this.#now)) continue;
      const { st, si, sr } = parseSetKey(key);
      if (groups !== null && isGroupForm(st, sr)) {
        if (groups.has(st + SEP + si)) return GRANTED;
        continue;
      }
      const p = this.#evaluate(sr || SET_RELATION, this.#node(st, si));
      if (p) {
        if (!this.#explain) return GRANTED;
        const subject: SubjectTuple = sr ? [st, si, sr] : [st, si];
        return [...p, { subject, relation: rel, object: [node.type, node.id], tuple_id: value[0] }];
      }
    }
    return null;
  }

  /** Whether one of S's groups holds `rel` on the node: a point lookup per group. */
  #groupLookups(node: Visited, rel: string, groups: ReadonlySet<string>): Proof | null {
    node.groupGrants ??= new Map();
    const asUserset = groupGrantEntryName(rel, SET_RELATION);
    const asPlain = groupGrantEntryName(rel, '');
    for (const g of groups) {
      let grants = node.groupGrants.get(g);
      if (grants === undefined) {
        grants = get(this.#tables.groupGrants, node.key + SEP + g) ?? null;
        node.groupGrants.set(g, grants);
      }
      if (!grants) continue;
      const userset = grants[asUserset];
      if (userset && live(userset[1], this.#now)) return GRANTED;
      const plain = grants[asPlain];
      if (plain && live(plain[1], this.#now)) return GRANTED;
    }
    return null;
  }

  /**
   * The groups S is in, nested ones included, read bottom-up from the members index (one lookup
   * per group); null when membership cannot be decided that way (see the module comment) or when
   * explaining.
   */
  #groupsOfSubject(): Set<string> | null {
    if (this.#groups !== undefined) return this.#groups;
    const s = this.#subject;
    const groupNs = this.#ns.compiled('group');
    const plainMembership = !groupNs || groupNs.relations.get(SET_RELATION)?.kind === 'direct';
    if (this.#explain || s.length === 3 || !plainMembership || (get(this.#tables.tenants, this.#tenant)?.xm ?? 0) > 0) {
      return (this.#groups = null);
    }
    const groups = new Set<string>();
    // S itself counts through its plain memberships; a group S is in, through both of its forms.
    const frontier: { key: string; plainOnly: boolean }[] = [{ key: nodeKey(this.#tenant, s[0], s[1]), plainOnly: true }];
    while (frontier.length > 0) {
      const { key, plainOnly } = frontier.pop()!;
      const record = get(this.#tables.members, key);
      if (!record) continue;
      for (const [name, entry] of Object.entries(record)) {
        if (!live(entry[1], this.#now)) continue;
        const i = name.lastIndexOf(SEP);
        if (plainOnly && i !== name.length - 1) continue;
        const g = name.slice(0, i);
        if (groups.has(g)) continue;
        groups.add(g);
        frontier.push({ key: this.#tenant + SEP + g, plainOnly: false });
      }
    }
    return (this.#groups = groups);
  }

  #summary(node: Visited): NodeSummary | undefined {
    if (node.summary === null) node.summary = get(this.#tables.nodes, node.key);
    return node.summary;
  }

  #node(type: string, id: string): Visited {
    const key = nodeKey(this.#tenant, type, id);
    let node = this.#nodes.get(key);
    if (!node) {
      node = new Visited(type, id, key);
      this.#nodes.set(key, node);
    }
    return node;
  }
}

/**
 * The concrete subjects holding a name on an object (rebac_expand): sets are replaced by their
 * members, recursively. Implied path parents are followed upwards (a directory's owners own its
 * files); `parent` itself expands to explicit parent tuples only, since the children of a path
 * are the file tree's business.
 */
export class Expansion {
  readonly #tables: EngineTables;
  readonly #ns: NamespaceService;
  readonly #tenant: string;
  readonly #now: number;
  readonly #memo = new Map<string, ReadonlySet<string>>();
  readonly #stack = new Map<string, number>();
  #low = Infinity;

  constructor(tables: EngineTables, ns: NamespaceService, tenant: string, now = Date.now()) {
    this.#tables = tables;
    this.#ns = ns;
    this.#tenant = tenant;
    this.#now = now;
  }

  /** Subjects as `[type, id]`, sorted by type then id. */
  subjects(name: string, type: string, id: string): [string, string][] {
    const ancestors = deepAncestors(id);
    const ns = ancestors && this.#ns.compiled(type);
    if (ns) for (const a of ancestors!) for (const n of namesInheritedByPath(ns)) this.#expand(n, type, a);
    return [...this.#expand(name, type, id)].sort().map((k) => {
      const i = k.indexOf(SEP);
      return [k.slice(0, i), k.slice(i + 1)];
    });
  }

  #expand(name: string, type: string, id: string): ReadonlySet<string> {
    const key = name + SEP + type + SEP + id;
    const memo = this.#memo.get(key);
    if (memo) return memo;
    const onStack = this.#stack.get(key);
    if (onStack !== undefined) {
      if (onStack < this.#low) this.#low = onStack;
      return EMPTY;
    }
    const depth = this.#stack.size;
    if (depth >= MAX_DEPTH) {
      this.#low = -1;
      return EMPTY;
    }
    this.#stack.set(key, depth);
    const outerLow = this.#low;
    this.#low = Infinity;
    const result = this.#compute(name, type, id);
    this.#stack.delete(key);
    const low = this.#low;
    // Unlike a grant, a partial set is never final while a cut above it is open.
    if (low >= depth) this.#memo.set(key, result);
    this.#low = low < depth && low < outerLow ? low : outerLow;
    return result;
  }

  #compute(name: string, type: string, id: string): ReadonlySet<string> {
    const ns = this.#ns.compiled(type);
    if (!ns) return this.#direct(name, type, id);
    const permission = ns.permissions.get(name);
    if (permission) return union(permission.map((rel) => this.#expand(rel, type, id)));
    const def = ns.relations.get(name);
    if (!def) return EMPTY;
    switch (def.kind) {
      case 'direct':
        return this.#direct(name, type, id);
      case 'union':
        return union(def.of.map((rel) => this.#expand(rel, type, id)));
      case 'intersection': {
        const [first, ...rest] = def.of.map((rel) => this.#expand(rel, type, id));
        return new Set([...first!].filter((k) => rest.every((s) => s.has(k))));
      }
      case 'ttu': {
        const parts: ReadonlySet<string>[] = [];
        const tsDef = ns.relations.get(def.tupleset);
        if (tsDef?.kind === 'direct' && tsDef.pathParent && isPath(id) && id !== '/') {
          parts.push(this.#expand(def.computed, type, parentOf(id)));
        }
        for (const { key, value } of range(this.#tables.subjects, outRange(this.#tenant, type, id, def.tupleset))) {
          if (!live(value[1], this.#now)) continue;
          const { ot, oi } = parseSubjectKey(key);
          parts.push(this.#expand(def.computed, ot, oi));
        }
        return union(parts);
      }
    }
  }

  #direct(rel: string, type: string, id: string): ReadonlySet<string> {
    const out = new Set<string>();
    const prefix = nodeKey(this.#tenant, type, id);
    for (const { key, value } of range(this.#tables.grants, prefixRange(prefix))) {
      const entry = value[rel];
      if (!entry || !live(entry[1], this.#now)) continue;
      const [st, si, sr] = key.slice(prefix.length + 1).split(SEP) as [string, string, string];
      if (isSetSubject(st, sr)) for (const k of this.#expand(sr || SET_RELATION, st, si)) out.add(k);
      else out.add(st + SEP + si);
    }
    return out;
  }
}

const EMPTY: ReadonlySet<string> = new Set();

function union(sets: readonly ReadonlySet<string>[]): ReadonlySet<string> {
  if (sets.length === 1) return sets[0]!;
  const out = new Set<string>();
  for (const s of sets) for (const k of s) out.add(k);
  return out;
}
