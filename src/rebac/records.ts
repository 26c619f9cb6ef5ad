/**
 * @module rebac/records
 * What the ReBAC engine keeps in the metadata store, and how keys are laid out. Every key starts
 * with the tenant, so no lookup or scan can cross tenants. Components are joined with U+001F
 * (unit separator), which never occurs in a tuple component (control characters are refused), so
 * `[prefix + US, prefix + ' ')` is exactly the range of keys that extend `prefix`.
 *
 * Why not NUL: lmdb-js encodes string keys shorter than 64 characters with characters 0–4
 * escaped, and longer ones as raw UTF-8, so a NUL-joined key sorts differently depending on its
 * length and prefix ranges miss long keys. Characters from 5 up are encoded the same either way.
 *
 * Tables (T = tenant; ot/oi object type and id; st/si/sr subject type, id and userset relation,
 * sr = '' for a plain subject; r relation):
 * - `rebac_tuples`  tuple_id → {@link StoredTuple}: the record.
 * - `rebac_grants`  T ot oi st si sr → {r: [tuple_id, expires]}: "which relations does this
 *   subject hold directly on this object": one point lookup per object a check visits.
 * - `rebac_sets`    T ot oi r st si sr → [tuple_id, expires]: only tuples whose subject stands
 *   for a set of subjects (a userset, or a plain group); a check scans it per (object, relation)
 *   only when the object's node says there is something to find.
 * - `rebac_subjects` T st si sr r ot oi → [tuple_id, expires]: tuples by subject (listing by
 *   subject, tupleToUserset edges such as explicit `parent` tuples, renames).
 * - `rebac_group_grants` T ot oi gt gi → {[r sr]: [tuple_id, expires]}: grants to a group's members
 *   (`[group, g]` and `[group, g, member]` alike) by object and group, so "does one of S's groups
 *   hold r here" is one lookup per group.
 * - `rebac_members` T st si → {[gt gi sr]: [tuple_id, expires]}: the groups a subject is a member
 *   of (`member` tuples on groups whose subject is plain or a group's `#member`), one record per
 *   subject, so the groups of a subject, nested ones included, take one lookup per group.
 * - `rebac_nodes`   T type id → {@link NodeSummary}: counts that let a check skip lookups and
 *   scans on objects with nothing stored.
 * - `rebac_tenants` T → {@link TenantSummary} (renames visit every tenant that has tuples).
 */
import { randomBytes } from 'node:crypto';

export const SEP = '\u001f';
/** The first character after {@link SEP}: `[prefix + SEP, prefix + END)` is a prefix range. */
export const END = '\u0020';

/**
 * Whether a string may be a tuple component: non-empty, well-formed UTF-16 (a lone surrogate
 * would be encoded differently in short and long keys), and free of control characters.
 */
export function isValidComponent(s: string): boolean {
  return s.length > 0 && !CONTROL.test(s) && !LONE_SURROGATE.test(s);
}
// C0 controls (the separator among them) and DEL.
const CONTROL = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** LMDB refuses keys over 1978 bytes; tuples whose keys would exceed this are refused. */
export const MAX_KEY_BYTES = 1900;

/** Whether a key is over {@link MAX_KEY_BYTES} (so nothing can be stored under it). */
export function tooLong(key: string): boolean {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short keys need no counting.
  return key.length * 3 > MAX_KEY_BYTES && Buffer.byteLength(key) > MAX_KEY_BYTES;
}

/**
 * A new tuple id: a UUIDv7 (RFC 9562), whose 48-bit millisecond timestamp and 12-bit counter make
 * ids created by this process strictly increasing, so ids order tuples by creation.
 */
export function newTupleId(): string {
  let ms = Date.now();
  if (ms > lastMs) {
    lastMs = ms;
    counter = 0;
  } else if (++counter > 0xfff) {
    lastMs += 1; // 4,096 ids in one millisecond: borrow the next one
    counter = 0;
  }
  ms = lastMs;
  const rand = randomBytes(8);
  rand[0] = (rand[0]! & 0x3f) | 0x80; // variant 10
  const hex = ms.toString(16).padStart(12, '0') + (0x7000 | counter).toString(16) + rand.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
let lastMs = 0;
let counter = 0;

/** `expires` of a tuple that never expires. */
export const NEVER = 0;

export interface StoredTuple {
  id: string;
  tenant: string;
  st: string;
  si: string;
  /** Userset relation of the subject; '' for a plain subject. */
  sr: string;
  r: string;
  ot: string;
  oi: string;
  /** ms since epoch */
  created: number;
  /** ms since epoch; {@link NEVER} when the tuple does not expire. */
  expires: number;
}

/** One index entry: which tuple, and until when it holds. */
export type IndexEntry = [tupleId: string, expires: number];

/** Direct relations a subject holds on an object. */
export type GrantRecord = Record<string, IndexEntry>;

/** Groups a subject is a member of, by `gt SEP gi SEP sr` (sr of the membership's subject). */
export type MemberRecord = Record<string, IndexEntry>;

/** Grants of one group's members on one object, by `r SEP sr`. */
export type GroupGrantRecord = Record<string, IndexEntry>;

/** Per object (or subject) node: what is stored about it, so checks can skip what is empty. */
export interface NodeSummary {
  /** Tuples whose object is this node. */
  g: number;
  /** Of those, tuples whose subject is a set (userset or plain group), by relation. */
  s?: Record<string, number>;
  /** Of the set-subject tuples, those not of group form (see {@link isGroupForm}), by relation. */
  x?: Record<string, number>;
  /** Tuples whose plain subject is this node, by relation (tupleToUserset edges). */
  o?: Record<string, number>;
}

export interface TenantSummary {
  /** Tuples stored for the tenant. */
  n: number;
  /**
   * Memberships whose subject is not of group form (e.g. `[team, t, admin]` member of a group):
   * while there are none, group membership is exactly what the members index says.
   */
  xm: number;
}

/** Subject types whose plain form `[type, id]` stands for the set of its members (`#member`). */
export const SET_TYPES: ReadonlySet<string> = new Set(['group']);
/** The relation a plain subject of a {@link SET_TYPES} type stands for. */
export const SET_RELATION = 'member';

/** Whether a tuple's subject stands for a set that a check must expand. */
export const isSetSubject = (st: string, sr: string): boolean => sr !== '' || SET_TYPES.has(st);

/** A subject that is a plain one, or the members of a group (`[group, g]`, `[group, g, member]`). */
export const isGroupForm = (st: string, sr: string): boolean => sr === '' || (sr === SET_RELATION && SET_TYPES.has(st));

/** A subject that stands for a group's members: `[group, g]` or `[group, g, member]`. */
export const isGroupSet = (st: string, sr: string): boolean => SET_TYPES.has(st) && (sr === '' || sr === SET_RELATION);

/** A membership: a `member` tuple on a group. */
export const isMembership = (t: StoredTuple): boolean => t.r === SET_RELATION && SET_TYPES.has(t.ot);

export const live = (expires: number, now: number): boolean => expires === NEVER || expires > now;

export const nodeKey = (tenant: string, type: string, id: string): string => tenant + SEP + type + SEP + id;

/** Suffix of a grants key naming the subject. */
export const subjectSuffix = (st: string, si: string, sr: string): string => SEP + st + SEP + si + SEP + sr;

export const grantKey = (t: StoredTuple): string => nodeKey(t.tenant, t.ot, t.oi) + subjectSuffix(t.st, t.si, t.sr);

export const setKey = (t: StoredTuple): string =>
  nodeKey(t.tenant, t.ot, t.oi) + SEP + t.r + SEP + t.st + SEP + t.si + SEP + t.sr;

export const subjectKey = (t: StoredTuple): string =>
  t.tenant + SEP + t.st + SEP + t.si + SEP + t.sr + SEP + t.r + SEP + t.ot + SEP + t.oi;

/** Key of the group-grants record of a tuple whose subject is a group set, and the entry's name in it. */
export const groupGrantKey = (t: StoredTuple): string => nodeKey(t.tenant, t.ot, t.oi) + SEP + t.st + SEP + t.si;
export const groupGrantEntryName = (r: string, sr: string): string => r + SEP + sr;

/** Key of the members record of a membership's subject, and the entry's name in it. */
export const memberKey = (t: StoredTuple): string => nodeKey(t.tenant, t.st, t.si);
export const memberEntryName = (t: StoredTuple): string => t.ot + SEP + t.oi + SEP + t.sr;

/** Range of every key that extends `prefix + SEP`. */
export const prefixRange = (prefix: string) => ({ start: prefix + SEP, end: prefix + END });

/** Range of the set-subject entries of one (object, relation). */
export const setRange = (tenant: string, type: string, id: string, relation: string) =>
  prefixRange(nodeKey(tenant, type, id) + SEP + relation);

/** Range of the tuples whose subject is `[type, id]` (sr = '') with relation `relation`. */
export const outRange = (tenant: string, type: string, id: string, relation: string) =>
  prefixRange(nodeKey(tenant, type, id) + SEP + SEP + relation);

/** Ranges of the keys whose node is `[type, path]` or lies below that path (for renames). */
export function subtreeNodeRanges(tenant: string, type: string, path: string): { start: string; end: string }[] {
  const base = tenant + SEP + type + SEP;
  // '/' + 1 === '0': ids below `path` sort in [path/, path0).
  if (path === '/') return [{ start: base + '/', end: base + '0' }];
  return [prefixRange(base + path), { start: base + path + '/', end: base + path + '0' }];
}

/** Split a set-index key into its subject parts. */
export function parseSetKey(key: string): { st: string; si: string; sr: string } {
  const p = key.split(SEP);
  return { st: p[4]!, si: p[5]!, sr: p[6]! };
}

/** Split a subjects-index key into its relation and object parts. */
export function parseSubjectKey(key: string): { r: string; ot: string; oi: string } {
  const p = key.split(SEP);
  return { r: p[4]!, ot: p[5]!, oi: p[6]! };
}
