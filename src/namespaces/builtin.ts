/**
 * @module namespaces/builtin
 * The default namespace configs for the object types of spec §2.4. They encode the relations of
 * spec §2.4 and the permissions of WIRE.md "Settled details": owner = direct_owner; editor =
 * direct_editor ∪ owner; viewer = direct_viewer ∪ editor; read = viewer, write = editor,
 * delete = owner, share = owner. `file` adds directory inheritance: a relation held on a
 * directory holds on everything below it (`parent` follows the path hierarchy and explicit
 * `parent` tuples). `group` and `tenant` add `member`, and their members may view them.
 * `workspace` is an alias of `file` (spec §2.4) and has no config of its own.
 */
import type { NamespaceConfig } from './config.js';

/** Object types that are other names of a configured type. */
export const OBJECT_TYPE_ALIASES: Readonly<Record<string, string>> = Object.freeze({ workspace: 'file' });

/** The type whose config governs `type` (`workspace` → `file`). */
export function canonicalType(type: string): string {
  return Object.hasOwn(OBJECT_TYPE_ALIASES, type) ? OBJECT_TYPE_ALIASES[type]! : type;
}

/** Permissions shared by every built-in type. */
const PERMISSIONS = { read: ['viewer'], write: ['editor'], delete: ['owner'], share: ['owner'] };

const DIRECT = { direct_owner: {}, direct_editor: {}, direct_viewer: {} };

/** A resource with owners, editors and viewers, and nothing else. */
function resource(extraViewers: string[] = [], extra: NamespaceConfig['relations'] = {}): NamespaceConfig {
  return {
    relations: {
      ...DIRECT,
      ...extra,
      owner: { union: ['direct_owner'] },
      editor: { union: ['direct_editor', 'owner'] },
      viewer: { union: ['direct_viewer', 'editor', ...extraViewers] },
    },
    permissions: PERMISSIONS,
  };
}

const FILE: NamespaceConfig = {
  relations: {
    parent: { path_parent: true },
    ...DIRECT,
    parent_owner: { tupleToUserset: { tupleset: 'parent', computedUserset: 'owner' } },
    parent_editor: { tupleToUserset: { tupleset: 'parent', computedUserset: 'editor' } },
    parent_viewer: { tupleToUserset: { tupleset: 'parent', computedUserset: 'viewer' } },
    owner: { union: ['direct_owner', 'parent_owner'] },
    editor: { union: ['direct_editor', 'owner', 'parent_editor'] },
    viewer: { union: ['direct_viewer', 'editor', 'parent_viewer'] },
  },
  permissions: PERMISSIONS,
};

/** Built-in configs by object type (aliases excluded). Deep-frozen JSON. */
export const BUILTIN_NAMESPACES: Readonly<Record<string, NamespaceConfig>> = deepFreeze({
  file: FILE,
  memory: resource(),
  agent: resource(),
  user: resource(),
  group: resource(['member'], { member: {} }),
  tenant: resource(['member'], { member: {} }),
});

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
