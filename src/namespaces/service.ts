/**
 * @module namespaces/service
 * Namespace configs (spec §4.13): the built-ins of {@link module:namespaces/builtin} plus custom
 * configs kept in the metadata store. A custom config replaces the built-in of its object type
 * until it is deleted. The ReBAC engine asks {@link NamespaceService.compiled} on every step of a
 * check, so compiled configs are held in memory and refreshed when this service changes them (the
 * daemon is the only writer of its store).
 */
import type { MetadataStore, Table } from '../store/types.js';
import { NotFoundError, ValidationError } from '../core/errors.js';
import { compileNamespace, type CompiledNamespace, type NamespaceConfig } from './config.js';
import { BUILTIN_NAMESPACES, OBJECT_TYPE_ALIASES, canonicalType } from './builtin.js';

/** A namespace as namespace_get / namespace_list return it. */
export interface NamespaceRecord {
  object_type: string;
  config: NamespaceConfig;
  /** True while the built-in config is in force (no custom config for the type). */
  builtin: boolean;
  /** The configured type this one is another name of (`workspace` → `file`). */
  alias_of?: string;
  /** When the custom config was last written; null for a built-in. */
  updated_at: Date | null;
}

interface StoredNamespace {
  config: NamespaceConfig;
  created: number;
  updated: number;
}

export class NamespaceService {
  readonly #store: MetadataStore;
  readonly #table: Table<StoredNamespace>;
  readonly #compiled = new Map<string, CompiledNamespace>();

  constructor(deps: { store: MetadataStore }) {
    this.#store = deps.store;
    this.#table = deps.store.table('rebac_namespaces');
    for (const [type, config] of Object.entries(BUILTIN_NAMESPACES)) this.#compiled.set(type, compileNamespace(type, config));
    for (const { key, value } of this.#table.range({})) {
      // A stored config is never skipped: ignoring it would silently change who may do what.
      try {
        this.#compiled.set(key, compileNamespace(key, value.config));
      } catch (err) {
        throw new Error(`stored namespace config for '${key}' is no longer valid (${(err as Error).message}); fix or delete it`);
      }
    }
  }

  /** The config governing `objectType` (aliases resolved), or undefined when the type has none. */
  compiled(objectType: string): CompiledNamespace | undefined {
    return this.#compiled.get(canonicalType(objectType));
  }

  /** Validate and store a custom config for an object type (replacing any earlier one). */
  async create(objectType: string, config: unknown): Promise<NamespaceRecord> {
    if (Object.hasOwn(OBJECT_TYPE_ALIASES, objectType)) {
      throw new ValidationError(
        `'${objectType}' is an alias of '${OBJECT_TYPE_ALIASES[objectType]}': configure '${OBJECT_TYPE_ALIASES[objectType]}' instead`,
        { object_type: objectType },
      );
    }
    compileNamespace(objectType, config);
    // Stored as a plain JSON copy: what namespace_get shows is what was validated.
    const json = JSON.parse(JSON.stringify(config)) as NamespaceConfig;
    const now = Date.now();
    const stored = await this.#store.transact(() => {
      const prev = this.#table.get(objectType);
      const value: StoredNamespace = { config: json, created: prev?.created ?? now, updated: now };
      this.#table.put(objectType, value);
      return value;
    });
    this.#refresh(objectType);
    return this.#record(objectType, stored);
  }

  /** The namespace of a type; -32000 when it has none. */
  get(objectType: string): NamespaceRecord {
    const rec = this.#find(objectType);
    if (!rec) throw new NotFoundError(`Namespace not found: ${objectType}`, { object_type: objectType });
    return rec;
  }

  /** Every namespace in force (built-in, custom and aliases), ordered by object type. */
  list(): NamespaceRecord[] {
    return this.available().map((type) => this.#find(type)!);
  }

  /**
   * Remove the custom config of a type; true if there was one. A type with a built-in falls back
   * to it. Built-ins themselves cannot be removed.
   */
  async delete(objectType: string): Promise<boolean> {
    const found = await this.#store.transact(() => {
      if (!this.#table.get(objectType)) return false;
      this.#table.remove(objectType);
      return true;
    });
    if (found) this.#refresh(objectType);
    return found;
  }

  /** Recompile a type from the committed state (so concurrent writers end up agreeing with the store). */
  #refresh(objectType: string): void {
    const stored = this.#table.get(objectType);
    if (stored) this.#compiled.set(objectType, compileNamespace(objectType, stored.config));
    else if (Object.hasOwn(BUILTIN_NAMESPACES, objectType)) {
      this.#compiled.set(objectType, compileNamespace(objectType, BUILTIN_NAMESPACES[objectType]));
    } else this.#compiled.delete(objectType);
  }

  /** Object types that have a config, sorted. */
  available(): string[] {
    const types = new Set([...this.#compiled.keys(), ...Object.keys(OBJECT_TYPE_ALIASES)]);
    return [...types].sort();
  }

  #find(objectType: string): NamespaceRecord | undefined {
    const target = canonicalType(objectType);
    const stored = this.#table.get(target);
    let rec: NamespaceRecord | undefined;
    if (stored) rec = this.#record(target, stored);
    else if (Object.hasOwn(BUILTIN_NAMESPACES, target)) {
      rec = { object_type: target, config: BUILTIN_NAMESPACES[target]!, builtin: true, updated_at: null };
    }
    if (rec && target !== objectType) return { ...rec, object_type: objectType, alias_of: target };
    return rec;
  }

  #record(objectType: string, stored: StoredNamespace): NamespaceRecord {
    return { object_type: objectType, config: stored.config, builtin: false, updated_at: new Date(stored.updated) };
  }
}
