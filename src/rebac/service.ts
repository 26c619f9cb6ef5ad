/**
 * @module rebac/service
 * Relationship-based access control (spec §4.11, §2.4): tuples, their indexes, and the one
 * permission check every face calls ({@link RebacService.check}, {@link RebacService.canAccessPath}).
 *
 * Rules kept here:
 * - tuples carry concrete relations only (computed ones are -32005); legacy names
 *   (`member-of`, `owner-of`, `viewer-of`, `editor-of`) are mapped to their replacements;
 * - `workspace` is stored as `file`, and `file` ids are normalised paths;
 * - the same tuple again returns the same tuple_id (its expiry becomes the new one);
 * - an expired tuple grants nothing and is not listed;
 * - everything is scoped to a tenant: keys start with it;
 * - tuples on a renamed file or directory (and below it) follow it to the new path
 *   ({@link RebacService.followRenames}, a commit hook of the fs service, so a rename is answered
 *   only once its tuples have moved). Deleting a file keeps its tuples: grants are on paths.
 */
import type { MetadataStore, Table } from '../store/types.js';
import type { ChangeEvent } from '../core/events.js';
import type { OperationContext } from '../core/context.js';
import { DEFAULT_TENANT } from '../core/context.js';
import { normalizePath, parentOf } from '../core/paths.js';
import { InvalidParamsError, PermissionDeniedError, ValidationError } from '../core/errors.js';
import type { NamespaceService } from '../namespaces/service.js';
import { canonicalType } from '../namespaces/builtin.js';
import {
  type GrantRecord, type GroupGrantRecord, type IndexEntry, type MemberRecord, type NodeSummary, type StoredTuple, type TenantSummary,
  NEVER, END, SEP, isGroupForm, isGroupSet, isMembership, groupGrantKey, groupGrantEntryName, isSetSubject, live, nodeKey, grantKey, setKey, subjectKey, memberKey,
  memberEntryName, newTupleId, isValidComponent, tooLong, MAX_KEY_BYTES, prefixRange, subtreeNodeRanges, outRange, parseSubjectKey,
} from './records.js';
import { Evaluation, Expansion, type EngineTables, type ExplainEdge, type ObjectTuple, type SubjectTuple } from './engine.js';

export type { SubjectTuple, ObjectTuple, ExplainEdge } from './engine.js';

/** Deprecated relation names (spec §2.4) and what they mean now. */
export const LEGACY_RELATIONS: Readonly<Record<string, string>> = Object.freeze({
  'member-of': 'member',
  'owner-of': 'direct_owner',
  'viewer-of': 'direct_viewer',
  'editor-of': 'direct_editor',
});

/** The permissions every built-in type defines (WIRE.md "Settled details"). */
export type Permission = 'read' | 'write' | 'delete' | 'share';

/** A tuple as the methods return it. */
export interface TupleRecord {
  tuple_id: string;
  subject: SubjectTuple;
  relation: string;
  object: ObjectTuple;
  tenant_id: string;
  created_at: Date;
  expires_at: Date | null;
}

export interface CreateTupleInput {
  subject: SubjectTuple;
  relation: string;
  object: ObjectTuple;
  tenantId?: string | undefined;
  expiresAt?: Date | null | undefined;
}

export interface TupleFilter {
  /** `[type, id]` matches plain and userset subjects of that type and id; `[type, id, rel]` only that userset. */
  subject?: SubjectTuple | undefined;
  relation?: string | undefined;
  object?: ObjectTuple | undefined;
}

/** {allowed, path}: the edges that grant the permission, from the subject to the object. */
export interface Explanation {
  allowed: boolean;
  path: ExplainEdge[];
}

export class RebacService {
  readonly #store: MetadataStore;
  readonly #ns: NamespaceService;
  readonly #tuples: Table<StoredTuple>;
  readonly #tenants: Table<TenantSummary>;
  readonly #t: EngineTables;
  /** Milliseconds since the epoch; tuple expiry is judged against it (injected by tests). */
  readonly #clock: () => number;

  constructor(deps: { store: MetadataStore; namespaces: NamespaceService; clock?: (() => number) | undefined }) {
    this.#store = deps.store;
    this.#clock = deps.clock ?? Date.now;
    this.#ns = deps.namespaces;
    this.#tuples = deps.store.table('rebac_tuples');
    this.#tenants = deps.store.table('rebac_tenants');
    this.#t = Object.freeze({
      grants: deps.store.table<GrantRecord>('rebac_grants'),
      sets: deps.store.table<IndexEntry>('rebac_sets'),
      subjects: deps.store.table<IndexEntry>('rebac_subjects'),
      nodes: deps.store.table<NodeSummary>('rebac_nodes'),
      members: deps.store.table<MemberRecord>('rebac_members'),
      groupGrants: deps.store.table<GroupGrantRecord>('rebac_group_grants'),
      tenants: this.#tenants,
    });
  }

  // ---------------------------------------------------------------- checks

  /**
   * The permission check: whether `subject` holds `permission` (or relation) on `object` in
   * `tenant`. Synchronous, a handful of point lookups. Names the object's type does not define
   * are simply not granted (the methods validate names; faces pass known permissions).
   */
  check(subject: SubjectTuple, permission: string, object: ObjectTuple, tenant: string = DEFAULT_TENANT): boolean {
    const [type, id] = this.#object(object);
    return new Evaluation(this.#t, this.#ns, tenant, this.#subject(subject), false, this.#clock()).check(mapLegacy(permission), type, id);
  }

  /**
   * Whether the caller may do `permission` on a path (file or directory). Admins may do
   * anything (WIRE.md "Identity": an admin may act for anyone).
   */
  canAccessPath(ctx: OperationContext, permission: Permission, path: string): boolean {
    if (ctx.isAdmin) return true;
    return this.check([ctx.subjectType, ctx.subjectId], permission, ['file', path], ctx.tenantId);
  }

  /** {@link canAccessPath} or -32004 naming the path and the permission. */
  requirePath(ctx: OperationContext, permission: Permission, path: string): void {
    if (!this.canAccessPath(ctx, permission, path)) {
      const p = normalizePath(path);
      throw new PermissionDeniedError(`Permission denied: ${ctx.subjectType}:${ctx.subjectId} may not ${permission} ${p}`, {
        path: p, permission,
      });
    }
  }

  /**
   * A path filter for one request (list, glob, grep): answers for many paths share their
   * ancestors' evaluations. Use it within one request only; it does not see later writes.
   */
  pathFilter(ctx: OperationContext, permission: Permission): (path: string) => boolean {
    if (ctx.isAdmin) return () => true;
    const ev = new Evaluation(this.#t, this.#ns, ctx.tenantId, [ctx.subjectType, ctx.subjectId], false, this.#clock());
    return (path) => ev.check(permission, 'file', normalizePath(path));
  }

  /** rebac_check: like {@link check}, but a name the object's type does not define is -32005. */
  checkName(subject: SubjectTuple, name: string, object: ObjectTuple, tenant: string = DEFAULT_TENANT): boolean {
    const [type, id] = this.#object(object);
    const n = this.#knownName(type, name);
    return new Evaluation(this.#t, this.#ns, tenant, this.#subject(subject), false, this.#clock()).check(n, type, id);
  }

  /** rebac_explain: whether it is granted and by which tuples (stored or implied). */
  explain(subject: SubjectTuple, name: string, object: ObjectTuple, tenant: string = DEFAULT_TENANT): Explanation {
    const [type, id] = this.#object(object);
    const n = this.#knownName(type, name);
    const path = new Evaluation(this.#t, this.#ns, tenant, this.#subject(subject), true, this.#clock()).explain(n, type, id);
    return { allowed: path !== null, path: path ?? [] };
  }

  /** rebac_expand: every concrete subject holding `name` on `object`, groups replaced by members. */
  expand(name: string, object: ObjectTuple, tenant: string = DEFAULT_TENANT): { subjects: [string, string][] } {
    const [type, id] = this.#object(object);
    const n = this.#knownName(type, name);
    return { subjects: new Expansion(this.#t, this.#ns, tenant, this.#clock()).subjects(n, type, id) };
  }

  // ---------------------------------------------------------------- tuples

  /** rebac_create: store a tuple, or find the same one; resolves with its tuple_id. */
  async create(input: CreateTupleInput): Promise<string> {
    const tenant = input.tenantId ?? DEFAULT_TENANT;
    const [st, si, sr] = this.#subject(input.subject);
    const [ot, oi] = this.#object(input.object);
    const r = this.#concreteRelation(ot, input.relation);
    const userset = sr ?? '';
    if (userset) this.#userset(st, userset);
    const expires = input.expiresAt ? input.expiresAt.getTime() : NEVER;
    const now = this.#clock();
    if (expires !== NEVER && expires <= now) {
      throw new ValidationError(`expires_at is in the past: ${input.expiresAt!.toISOString()}`, { expires_at: input.expiresAt });
    }
    const tuple: StoredTuple = { id: newTupleId(), tenant, st, si, sr: userset, r, ot, oi, created: now, expires };
    checkComponents(tuple);
    const tupleset = this.#isTupleset(ot, r);
    return this.#store.transact(() => {
      const existing = this.#t.grants.get(grantKey(tuple))?.[r];
      if (existing && live(existing[1], now)) {
        if (existing[1] !== expires) this.#setExpiry(existing[0], expires);
        return existing[0];
      }
      // Checks first, writes after: an edge that closes a loop of parents is refused.
      if (tupleset && userset === '') this.#refuseCycle(tuple);
      if (existing) this.#unindex(this.#tuples.get(existing[0])!);
      this.#index(tuple);
      return tuple.id;
    });
  }

  /** rebac_delete: remove a tuple of this tenant; true if it existed (and had not expired). */
  async delete(tupleId: string, tenant: string = DEFAULT_TENANT): Promise<boolean> {
    return this.#store.transact(() => {
      const tuple = this.#tuples.get(tupleId);
      if (!tuple || tuple.tenant !== tenant) return false;
      this.#unindex(tuple);
      return live(tuple.expires, this.#clock());
    });
  }

  /** A tuple of this tenant by id (expired ones excluded), or undefined. */
  get(tupleId: string, tenant: string = DEFAULT_TENANT): TupleRecord | undefined {
    const tuple = this.#tuples.get(tupleId);
    return tuple && tuple.tenant === tenant && live(tuple.expires, this.#clock()) ? toRecord(tuple) : undefined;
  }

  /** rebac_list_tuples: the tenant's live tuples matching every given filter, oldest first. */
  list(filter: TupleFilter = {}, tenant: string = DEFAULT_TENANT): TupleRecord[] {
    const subject = filter.subject ? this.#subject(filter.subject) : undefined;
    const object = filter.object ? this.#object(filter.object) : undefined;
    const relation = filter.relation === undefined ? undefined : mapLegacy(filter.relation);
    const ids = new Set<string>();
    if (subject) {
      const prefix = tenant + SEP + subject[0] + SEP + subject[1] + (subject[2] === undefined ? '' : SEP + subject[2]);
      // A prefix too long to be stored matches nothing (and LMDB would refuse it as a bound).
      if (tooLong(prefix)) return [];
      for (const { value } of this.#t.subjects.range(prefixRange(prefix))) ids.add(value[0]);
    } else if (object) {
      const prefix = nodeKey(tenant, object[0], object[1]);
      if (tooLong(prefix)) return [];
      for (const { value } of this.#t.grants.range(prefixRange(prefix))) {
        for (const entry of Object.values(value)) ids.add(entry[0]);
      }
    } else {
      if (tooLong(tenant)) return [];
      for (const { value } of this.#t.subjects.range({ start: tenant + SEP, end: tenant + END })) ids.add(value[0]);
    }
    const now = this.#clock();
    const out: StoredTuple[] = [];
    for (const id of ids) {
      const t = this.#tuples.get(id);
      if (!t || t.tenant !== tenant || !live(t.expires, now)) continue;
      if (relation !== undefined && t.r !== relation) continue;
      if (object && (t.ot !== object[0] || t.oi !== object[1])) continue;
      if (subject && (t.st !== subject[0] || t.si !== subject[1] || (subject[2] !== undefined && t.sr !== subject[2]))) continue;
      out.push(t);
    }
    // Ids are UUIDv7: their order is the order of creation.
    out.sort((a, b) => a.created - b.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return out.map(toRecord);
  }

  /**
   * A commit hook for the fs service: tuples whose object or subject is a renamed file or
   * directory, or lies below it, move to the new path, in every tenant. A tuple that would
   * duplicate one already at the destination is dropped (the destination's is kept).
   */
  async followRenames(events: readonly ChangeEvent[]): Promise<void> {
    for (const e of events) {
      if (e.type === 'rename' && e.new_path !== undefined && e.new_path !== e.path) await this.#moveTree(e.path, e.new_path);
    }
  }

  /** Move the tuples on `from` and below it to `to` (file object and subject ids). */
  async #moveTree(from: string, to: string): Promise<void> {
    const src = normalizePath(from);
    const dst = normalizePath(to);
    return this.#store.transact(() => {
      const moved = new Map<string, StoredTuple>();
      for (const tenant of this.#tenants.keys({})) {
        for (const range of subtreeNodeRanges(tenant, 'file', src)) {
          if (tooLong(range.start)) continue; // nothing can be stored under a key that long
          for (const { value } of this.#t.grants.range(range)) {
            for (const [id] of Object.values(value)) if (!moved.has(id)) moved.set(id, this.#tuples.get(id)!);
          }
          for (const { value } of this.#t.subjects.range(range)) if (!moved.has(value[0])) moved.set(value[0], this.#tuples.get(value[0])!);
        }
      }
      if (moved.size === 0) return;
      const now = this.#clock();
      const rewrite = (type: string, id: string) => (type === 'file' && (id === src || id.startsWith(src === '/' ? '/' : src + '/'))
        ? dst + id.slice(src.length) : id);
      // Decide everything before the first write.
      const plan: { old: StoredTuple; next: StoredTuple | undefined }[] = [];
      for (const old of moved.values()) {
        if (!live(old.expires, now)) {
          plan.push({ old, next: undefined });
          continue;
        }
        const next = { ...old, si: rewrite(old.st, old.si), oi: rewrite(old.ot, old.oi) };
        // A tuple whose new path makes its keys too long cannot follow; it is dropped.
        if (!fitsKeys(next)) {
          plan.push({ old, next: undefined });
          continue;
        }
        const clash = this.#t.grants.get(grantKey(next))?.[next.r];
        const keepsExisting = clash !== undefined && !moved.has(clash[0]) && live(clash[1], now);
        plan.push({ old, next: keepsExisting ? undefined : next });
      }
      for (const { old } of plan) this.#unindex(old);
      for (const { next } of plan) if (next) this.#index(next);
    });
  }

  // ---------------------------------------------------------------- validation

  /** Canonical `[type, id, relation?]`: aliases resolved, file ids normalised, legacy names mapped. */
  #subject(subject: SubjectTuple): SubjectTuple {
    const type = canonicalType(subject[0]);
    const id = type === 'file' ? normalizePath(subject[1]) : subject[1];
    return subject.length === 3 ? [type, id, mapLegacy(subject[2])] : [type, id];
  }

  #object(object: ObjectTuple): [string, string] {
    const type = canonicalType(object[0]);
    return [type, type === 'file' ? normalizePath(object[1]) : object[1]];
  }

  /** The relation a new tuple may carry on an object of `type`; -32005 for computed or unknown ones. */
  #concreteRelation(type: string, relation: string): string {
    const r = mapLegacy(relation);
    const ns = this.#ns.compiled(type);
    if (!ns) {
      if (COMPUTED.has(r)) throw computedRelation(r, type);
      return r;
    }
    const def = ns.relations.get(r);
    if (def?.kind === 'direct') return r;
    if (def || ns.permissions.has(r)) throw computedRelation(r, type, ns.concrete);
    throw new ValidationError(
      `Unknown relation '${relation}' for object type '${type}'; concrete relations: ${ns.concrete.join(', ')}`,
      { relation, object_type: type },
    );
  }

  /** A userset's relation must exist on its type (when the type has a config). */
  #userset(type: string, relation: string): void {
    const ns = this.#ns.compiled(type);
    if (ns && !ns.relations.has(relation) && !ns.permissions.has(relation)) {
      throw new ValidationError(`Unknown relation '${relation}' in userset subject of type '${type}'`, { relation, subject_type: type });
    }
  }

  /** A permission or relation name checks may ask about on `type`; -32005 when the type's config lacks it. */
  #knownName(type: string, name: string): string {
    const n = mapLegacy(name);
    const ns = this.#ns.compiled(type);
    if (ns && !ns.relations.has(n) && !ns.permissions.has(n)) {
      throw new ValidationError(
        `Unknown permission or relation '${name}' for object type '${type}'; permissions: ${[...ns.permissions.keys()].join(', ')}; `
          + `relations: ${[...ns.relations.keys()].join(', ')}`,
        { name, object_type: type },
      );
    }
    return n;
  }

  /**
   * Whether a tuple `(subject, relation, …)` hands the subject over to the object's holders: the
   * subject's type follows `relation` in a tupleToUserset (as `file` follows `parent`: owners of
   * `/a` own `/x` once `(/x, parent, /a)` exists). Creating such a tuple needs `share` on the
   * subject as well as on the object, or the owner of any directory could adopt anyone's.
   */
  followedFromSubject(subject: SubjectTuple, relation: string): boolean {
    if (subject.length === 3) return false;
    return this.#isTupleset(canonicalType(subject[0]), mapLegacy(relation));
  }

  /** Whether tuples with relation `r` on `type` are followed by a tupleToUserset (like `parent`). */
  #isTupleset(type: string, r: string): boolean {
    const ns = this.#ns.compiled(type);
    if (!ns) return false;
    for (const def of ns.relations.values()) if (def.kind === 'ttu' && def.tupleset === r) return true;
    return false;
  }

  /**
   * Refuse `(A, r, B)` when B already reaches A through r edges (explicit tuples, and the path
   * hierarchy for a `path_parent` relation): following them would loop.
   */
  #refuseCycle(t: StoredTuple): void {
    const ns = this.#ns.compiled(t.ot);
    const pathParent = ns?.relations.get(t.r);
    const implied = pathParent?.kind === 'direct' && pathParent.pathParent;
    const target = t.st + SEP + t.si;
    const seen = new Set<string>();
    const queue: [string, string][] = [[t.ot, t.oi]];
    const now = this.#clock();
    while (queue.length > 0) {
      const [type, id] = queue.pop()!;
      const k = type + SEP + id;
      if (k === target) {
        throw new ValidationError(
          `Cycle detected: ${t.r} from ${t.st}:${t.si} to ${t.ot}:${t.oi} would create a cycle`,
          { subject: [t.st, t.si], relation: t.r, object: [t.ot, t.oi] },
        );
      }
      if (seen.has(k)) continue;
      seen.add(k);
      if (implied && type === t.ot && id.startsWith('/') && id !== '/') queue.push([type, parentOf(id)]);
      for (const { key, value } of this.#t.subjects.range(outRange(t.tenant, type, id, t.r))) {
        if (!live(value[1], now)) continue;
        const { ot, oi } = parseSubjectKey(key);
        queue.push([ot, oi]);
      }
    }
  }

  // ---------------------------------------------------------------- index maintenance (inside transact)

  #index(t: StoredTuple): void {
    this.#tuples.put(t.id, t);
    this.#indexEntries(t, 1);
  }

  #unindex(t: StoredTuple): void {
    this.#tuples.remove(t.id);
    this.#indexEntries(t, -1);
  }

  /** Add (+1) or remove (-1) every index entry and count of a tuple. */
  #indexEntries(t: StoredTuple, by: 1 | -1): void {
    const entry: IndexEntry = [t.id, t.expires];
    const set = isSetSubject(t.st, t.sr);
    const groupForm = isGroupForm(t.st, t.sr);
    const membership = isMembership(t);
    this.#recordEntry(this.#t.grants, grantKey(t), t.r, entry, by);
    this.#entry(this.#t.subjects, subjectKey(t), entry, by);
    if (set) this.#entry(this.#t.sets, setKey(t), entry, by);
    if (isGroupSet(t.st, t.sr)) this.#recordEntry(this.#t.groupGrants, groupGrantKey(t), groupGrantEntryName(t.r, t.sr), entry, by);
    if (membership && groupForm) this.#recordEntry(this.#t.members, memberKey(t), memberEntryName(t), entry, by);
    this.#count(nodeKey(t.tenant, t.ot, t.oi), (n) => {
      n.g += by;
      if (set) bump(n.s ??= {}, t.r, by);
      if (set && !groupForm) bump(n.x ??= {}, t.r, by);
    });
    if (t.sr === '') this.#count(nodeKey(t.tenant, t.st, t.si), (n) => bump(n.o ??= {}, t.r, by));
    const tenant = this.#tenants.get(t.tenant) ?? { n: 0, xm: 0 };
    const next: TenantSummary = { n: tenant.n + by, xm: tenant.xm + (membership && !groupForm ? by : 0) };
    if (next.n > 0) this.#tenants.put(t.tenant, next);
    else this.#tenants.remove(t.tenant);
  }

  /** Put or remove a named entry of a record-valued index (removing only this very tuple's entry). */
  #recordEntry(table: Table<Record<string, IndexEntry>>, key: string, name: string, entry: IndexEntry, by: 1 | -1): void {
    const record = { ...table.get(key) };
    if (by > 0) record[name] = entry;
    else if (record[name]?.[0] === entry[0]) delete record[name];
    if (Object.keys(record).length > 0) table.put(key, record);
    else table.remove(key);
  }

  /** Put or remove one index entry (removing only the entry of this very tuple). */
  #entry(table: Table<IndexEntry>, key: string, entry: IndexEntry, by: 1 | -1): void {
    if (by > 0) table.put(key, entry);
    else if (table.get(key)?.[0] === entry[0]) table.remove(key);
  }

  /** Update a node summary; an all-zero summary is removed. */
  #count(key: string, change: (n: NodeSummary) => void): void {
    const prev = this.#t.nodes.get(key);
    const n: NodeSummary = { ...prev, g: prev?.g ?? 0 };
    for (const k of ['s', 'x', 'o'] as const) if (prev?.[k]) n[k] = { ...prev[k] };
    change(n);
    for (const k of ['s', 'x', 'o'] as const) if (n[k] && Object.keys(n[k]).length === 0) delete n[k];
    if (n.g === 0 && !n.s && !n.x && !n.o) this.#t.nodes.remove(key);
    else this.#t.nodes.put(key, n);
  }

  #setExpiry(id: string, expires: number): void {
    const t = this.#tuples.get(id)!;
    const next = { ...t, expires };
    const entry: IndexEntry = [id, expires];
    this.#tuples.put(id, next);
    this.#recordEntry(this.#t.grants, grantKey(next), next.r, entry, 1);
    if (isSetSubject(next.st, next.sr)) this.#t.sets.put(setKey(next), entry);
    if (isGroupSet(next.st, next.sr)) this.#recordEntry(this.#t.groupGrants, groupGrantKey(next), groupGrantEntryName(next.r, next.sr), entry, 1);
    if (isMembership(next) && isGroupForm(next.st, next.sr)) this.#recordEntry(this.#t.members, memberKey(next), memberEntryName(next), entry, 1);
    this.#t.subjects.put(subjectKey(next), entry);
  }
}

/** Enforcement for the ReBAC methods themselves (who may change or read the graph). */
export function requireShare(rebac: RebacService, ctx: OperationContext, object: ObjectTuple, tenant: string): void {
  if (ctx.isAdmin) return;
  if (tenant !== ctx.tenantId) throw new PermissionDeniedError(`Permission denied: may not act in tenant ${tenant}`, { tenant_id: tenant });
  if (!rebac.check([ctx.subjectType, ctx.subjectId], 'share', object, tenant)) {
    throw new PermissionDeniedError(
      `Permission denied: ${ctx.subjectType}:${ctx.subjectId} needs share on ${object[0]}:${object[1]}`,
      { object: [...object], permission: 'share' },
    );
  }
}

const COMPUTED_HINT = new Map([['owner', 'direct_owner'], ['editor', 'direct_editor'], ['viewer', 'direct_viewer']]);
const COMPUTED: ReadonlySet<string> = new Set([...COMPUTED_HINT.keys(), 'read', 'write', 'delete', 'share']);

/** -32005 for a tuple with a computed relation; `concrete` lists the type's concrete ones when it has a config. */
function computedRelation(r: string, type: string, concrete?: readonly string[]): ValidationError {
  const hint = COMPUTED_HINT.get(r);
  return new ValidationError(
    `'${r}' is computed for '${type}' (checks only): create tuples with a concrete relation${hint ? ` (here ${hint})` : ''}`
      + (concrete ? `; concrete relations of '${type}': ${concrete.join(', ')}` : ''),
    { relation: r, object_type: type },
  );
}

/** Legacy relation names mapped to their replacements; other names unchanged. */
export function mapLegacy(name: string): string {
  return Object.hasOwn(LEGACY_RELATIONS, name) ? LEGACY_RELATIONS[name]! : name;
}

function bump(counts: Record<string, number>, key: string, by: number): void {
  const n = (counts[key] ?? 0) + by;
  if (n > 0) counts[key] = n;
  else delete counts[key];
}

/** The longest keys of a tuple hold every component once: when they fit, every key does. */
function fitsKeys(t: StoredTuple): boolean {
  return !tooLong(subjectKey(t)) && !tooLong(setKey(t));
}

/** In-process callers get the checks the method schemas make: keys must stay well ordered and small. */
function checkComponents(t: StoredTuple): void {
  const parts: [string, string][] = [['tenant_id', t.tenant], ['subject', t.st], ['subject', t.si], ['relation', t.r], ['object', t.ot], ['object', t.oi]];
  if (t.sr !== '') parts.push(['subject', t.sr]);
  for (const [param, value] of parts) {
    if (!isValidComponent(value)) {
      throw new InvalidParamsError(`Invalid params: '${param}': must be non-empty, without control characters or unpaired surrogates`, { param });
    }
  }
  if (!fitsKeys(t)) throw new InvalidParamsError(`Invalid params: tuple too long (its components exceed ${MAX_KEY_BYTES} bytes together)`);
}

function toRecord(t: StoredTuple): TupleRecord {
  return {
    tuple_id: t.id,
    subject: t.sr ? [t.st, t.si, t.sr] : [t.st, t.si],
    relation: t.r,
    object: [t.ot, t.oi],
    tenant_id: t.tenant,
    created_at: new Date(t.created),
    expires_at: t.expires === NEVER ? null : new Date(t.expires),
  };
}
