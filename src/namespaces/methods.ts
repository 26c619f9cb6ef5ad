/**
 * @module namespaces/methods
 * Namespace methods (spec §4.13). A namespace config governs ReBAC checks for its object type, so
 * changing one is an administrative act: with permission enforcement on, an authenticated caller
 * needs admin rights for namespace_create and namespace_delete.
 */
import { z } from 'zod';
import { defineMethod, type ApiOf } from '../core/method.js';
import type { OperationContext } from '../core/context.js';
import { PermissionDeniedError } from '../core/errors.js';
import type { NamespaceService } from './service.js';

const objectType = z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, 'object_type must be a name (letters, digits, _ . -)')
  .describe('Object type the config governs, e.g. `file`, `group`, or a type of your own');

export interface NamespaceMethodOptions {
  /** Whether permissions are enforced (config `enforcePermissions`). */
  enforce: boolean;
}

export function namespaceMethods(ns: NamespaceService, opts: NamespaceMethodOptions) {
  const requireAdmin = (ctx: OperationContext, action: string) => {
    if (opts.enforce && ctx.authenticated && !ctx.isAdmin) {
      throw new PermissionDeniedError(`Permission denied: ${action} requires admin privileges`);
    }
  };
  return [
    defineMethod({
      name: 'namespace_create', access: 'user',
      description: 'Set the namespace config of an object type: its relations (`{}` concrete, `{"path_parent":true}`, '
        + '`{"union":[…]}`, `{"intersection":[…]}`, `{"tupleToUserset":{"tupleset","computedUserset"}}`) and permissions '
        + '(name → relations). Validated first (-32005 naming a bad reference); replaces the built-in or earlier config '
        + 'and governs checks from then on. Returns the stored namespace. Admin only when permissions are enforced.',
      params: z.strictObject({
        object_type: objectType,
        config: z.record(z.string(), z.unknown()).describe('`{relations:{…}, permissions:{…}}`'),
      }),
      handler: ({ object_type, config }, ctx) => {
        requireAdmin(ctx, 'namespace_create');
        return ns.create(object_type, config);
      },
    }),
    defineMethod({
      name: 'namespace_get', access: 'user',
      description: 'The namespace config in force for an object type (custom or built-in), `{object_type, config, builtin, updated_at}`; -32000 when the type has none.',
      params: z.strictObject({ object_type: objectType }),
      handler: ({ object_type }) => ns.get(object_type),
    }),
    defineMethod({
      name: 'namespace_list', access: 'user',
      description: 'Every namespace in force (built-in, custom and aliases such as `workspace`), ordered by object type.',
      params: z.strictObject({}),
      handler: () => ns.list(),
    }),
    defineMethod({
      name: 'namespace_delete', access: 'user',
      description: 'Remove the custom config of an object type: true if there was one. A built-in type falls back to its built-in config. Admin only when permissions are enforced.',
      params: z.strictObject({ object_type: objectType }),
      handler: ({ object_type }, ctx) => {
        requireAdmin(ctx, 'namespace_delete');
        return ns.delete(object_type);
      },
    }),
    defineMethod({
      name: 'get_available_namespaces', access: 'user',
      description: 'Object types that have a namespace config: `{namespaces:[…]}`, sorted.',
      params: z.strictObject({}),
      handler: () => ({ namespaces: ns.available() }),
    }),
  ] as const;
}

export type NamespaceApi = ApiOf<ReturnType<typeof namespaceMethods>>;
