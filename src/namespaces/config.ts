/**
 * @module namespaces/config
 * The namespace configuration language (spec §4.13) and its validation. A config says, for one
 * object type, which relations exist and how each is computed, and which permissions are unions
 * of which relations. The ReBAC engine evaluates the compiled form; the built-in configs of
 * {@link module:namespaces/builtin} are written in the same language.
 *
 * ```json
 * {
 *   "relations": {
 *     "parent":       { "path_parent": true },
 *     "direct_owner": {},
 *     "parent_owner": { "tupleToUserset": { "tupleset": "parent", "computedUserset": "owner" } },
 *     "owner":        { "union": ["direct_owner", "parent_owner"] }
 *   },
 *   "permissions": { "delete": ["owner"] }
 * }
 * ```
 *
 * Relation definitions:
 * - `{}`: concrete; tuples carry it (`rebac_create` accepts only these).
 * - `{"path_parent": true}`: concrete, and for object ids that are paths it also holds from every
 *   path to its containing directory, without stored tuples (`/a/b` parent `/a`, `/a` parent `/`).
 * - `{"union": [names]}` / `{"intersection": [names]}`: computed from other relations of the
 *   same object.
 * - `{"tupleToUserset": {"tupleset": T, "computedUserset": C}}`: computed by following the tuples
 *   `(this object, T, X)` (and implied path parents when T is a `path_parent` relation) and asking
 *   for C on each X.
 */
import { ValidationError } from '../core/errors.js';

/** A relation definition as written in a config. */
export type RelationConfig =
  | Record<string, never>
  | { path_parent: true }
  | { union: string[] }
  | { intersection: string[] }
  | { tupleToUserset: { tupleset: string; computedUserset: string } };

/** A namespace config as stored and returned by namespace_get. */
export interface NamespaceConfig {
  relations: Record<string, RelationConfig>;
  permissions: Record<string, string[]>;
}

/** A relation in evaluable form. */
export type RelationDef =
  | { readonly kind: 'direct'; readonly pathParent: boolean }
  | { readonly kind: 'union' | 'intersection'; readonly of: readonly string[] }
  | { readonly kind: 'ttu'; readonly tupleset: string; readonly computed: string };

/** A validated config, as the engine reads it. */
export interface CompiledNamespace {
  readonly objectType: string;
  readonly relations: ReadonlyMap<string, RelationDef>;
  readonly permissions: ReadonlyMap<string, readonly string[]>;
  /** Names of the concrete relations, in config order (for messages). */
  readonly concrete: readonly string[];
}

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const RELATION_KEYS = ['path_parent', 'union', 'intersection', 'tupleToUserset'];

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function invalid(objectType: string, message: string, reference?: string): ValidationError {
  return new ValidationError(
    `Invalid namespace config for '${objectType}': ${message}`,
    reference === undefined ? { object_type: objectType } : { object_type: objectType, reference },
  );
}

function nameList(objectType: string, where: string, value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((n) => typeof n === 'string')) {
    throw invalid(objectType, `${where} must be a non-empty array of names`);
  }
  return value as string[];
}

/**
 * Validate a config and compile it. Every name a relation or permission refers to must be
 * defined in the same config; unions and intersections must not refer to themselves; a tupleset
 * must be a concrete relation. Failures are -32005 naming the bad reference.
 */
export function compileNamespace(objectType: string, raw: unknown): CompiledNamespace {
  if (!isObject(raw)) throw invalid(objectType, 'config must be an object');
  for (const key of Object.keys(raw)) {
    if (key !== 'relations' && key !== 'permissions') {
      throw invalid(objectType, `unknown key '${key}' (a config has 'relations' and 'permissions')`, key);
    }
  }
  if (!isObject(raw.relations) || !isObject(raw.permissions)) {
    throw invalid(objectType, "config must have 'relations' and 'permissions' objects");
  }
  const relations = new Map<string, RelationDef>();
  for (const [name, def] of Object.entries(raw.relations)) {
    if (!NAME.test(name)) throw invalid(objectType, `'${name}' is not a valid relation name`, name);
    relations.set(name, parseRelation(objectType, name, def));
  }
  if (relations.size === 0) throw invalid(objectType, 'at least one relation is required');

  const refers = (where: string, ref: string) => {
    if (!relations.has(ref)) throw invalid(objectType, `${where} refers to undefined relation '${ref}'`, ref);
  };
  for (const [name, def] of relations) {
    if (def.kind === 'union' || def.kind === 'intersection') {
      for (const ref of def.of) refers(`relation '${name}'`, ref);
    } else if (def.kind === 'ttu') {
      refers(`relation '${name}' (tupleset)`, def.tupleset);
      refers(`relation '${name}' (computedUserset)`, def.computed);
      if (relations.get(def.tupleset)!.kind !== 'direct') {
        throw invalid(objectType, `relation '${name}': tupleset '${def.tupleset}' must be a concrete relation`, def.tupleset);
      }
    }
  }
  rejectSelfReference(objectType, relations);

  const permissions = new Map<string, readonly string[]>();
  for (const [name, list] of Object.entries(raw.permissions)) {
    if (!NAME.test(name)) throw invalid(objectType, `'${name}' is not a valid permission name`, name);
    if (relations.has(name)) throw invalid(objectType, `'${name}' is both a relation and a permission`, name);
    const of = nameList(objectType, `permission '${name}'`, list);
    for (const ref of of) refers(`permission '${name}'`, ref);
    permissions.set(name, Object.freeze([...of]));
  }
  const concrete = [...relations].filter(([, d]) => d.kind === 'direct').map(([n]) => n);
  return Object.freeze({ objectType, relations, permissions, concrete: Object.freeze(concrete) });
}

function parseRelation(objectType: string, name: string, def: unknown): RelationDef {
  if (!isObject(def)) throw invalid(objectType, `relation '${name}' must be an object ({} for a concrete relation)`, name);
  const keys = Object.keys(def);
  for (const key of keys) {
    if (!RELATION_KEYS.includes(key)) {
      throw invalid(objectType, `relation '${name}': unknown key '${key}' (expected one of ${RELATION_KEYS.join(', ')}, or {})`, key);
    }
  }
  if (keys.length > 1) throw invalid(objectType, `relation '${name}' must use exactly one of ${RELATION_KEYS.join(', ')}`, name);
  if (keys.length === 0) return Object.freeze({ kind: 'direct', pathParent: false });
  if ('path_parent' in def) {
    if (def.path_parent !== true) throw invalid(objectType, `relation '${name}': path_parent must be true`, name);
    return Object.freeze({ kind: 'direct', pathParent: true });
  }
  if ('union' in def) return Object.freeze({ kind: 'union', of: Object.freeze([...nameList(objectType, `relation '${name}' union`, def.union)]) });
  if ('intersection' in def) {
    return Object.freeze({ kind: 'intersection', of: Object.freeze([...nameList(objectType, `relation '${name}' intersection`, def.intersection)]) });
  }
  const ttu = def.tupleToUserset;
  if (!isObject(ttu) || typeof ttu.tupleset !== 'string' || typeof ttu.computedUserset !== 'string') {
    throw invalid(objectType, `relation '${name}': tupleToUserset needs string 'tupleset' and 'computedUserset'`, name);
  }
  return Object.freeze({ kind: 'ttu', tupleset: ttu.tupleset, computed: ttu.computedUserset });
}

/**
 * Unions and intersections are evaluated on the same object, so a relation that reaches itself
 * through them could never be decided. (Through a tupleToUserset it moves to another object, which
 * is how inheritance recurses, and is fine.)
 */
function rejectSelfReference(objectType: string, relations: ReadonlyMap<string, RelationDef>): void {
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, trail: string[]): void => {
    const s = state.get(name);
    if (s === 'done') return;
    if (s === 'visiting') {
      const cycle = [...trail.slice(trail.indexOf(name)), name].join(' -> ');
      throw invalid(objectType, `relation '${name}' refers to itself (${cycle})`, name);
    }
    state.set(name, 'visiting');
    const def = relations.get(name)!;
    if (def.kind === 'union' || def.kind === 'intersection') for (const ref of def.of) visit(ref, [...trail, name]);
    state.set(name, 'done');
  };
  for (const name of relations.keys()) visit(name, []);
}
