/**
 * @module mounts/methods
 * Mount methods (spec §4.6): active mounts and saved configurations.
 */
import { z } from 'zod';
import { defineMethod, type ApiOf } from '../core/method.js';
import { BACKEND_TYPES, type MountService } from './service.js';
import type { Permissions } from '../auth/permissions.js';

const mount_point = z.string();
const spec = {
  mount_point, backend_type: z.enum(BACKEND_TYPES), backend_config: z.record(z.string(), z.unknown()),
  priority: z.number().int().default(0), readonly: z.boolean().default(false),
};

/** Credential-looking settings (tokens, secrets, passwords, keys) replaced by `"<redacted>"`. */
function redactSecrets(config: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, /token|secret|password|credential|key/i.test(k) ? '<redacted>' : v]));
}

/**
 * With `perms`, changing mounts (add, remove, save, load, delete_saved) is admin only: a mount
 * puts a directory of the daemon's host (backend_config) into the tree, so write on the mount
 * point would let any user expose any host path it names — that is the daemon owner's decision,
 * not a file permission. Listing active mounts is open; list_saved_mounts keeps a non-admin in
 * its own tenant and hides credentials from it.
 */
export function mountMethods(mounts: MountService, perms?: Permissions) {
  const admin = (ctx: Parameters<Permissions['applies']>[0], what: string) => perms?.requireAdmin(ctx, what);
  return [
    defineMethod({
      name: 'add_mount', access: 'user', description: 'Activate a storage mount; returns the mount point. Admin only when permissions are enforced.',
      params: z.strictObject(spec),
      handler: (p, ctx) => (admin(ctx, 'add a mount'), mounts.add(p)),
    }),
    defineMethod({
      name: 'remove_mount', access: 'user', description: 'Deactivate a mount (its saved configuration is untouched).',
      params: z.strictObject({ mount_point }),
      handler: ({ mount_point }, ctx) => (admin(ctx, 'remove a mount'), mounts.remove(mount_point)),
    }),
    defineMethod({
      name: 'list_mounts', access: 'user', description: 'Active mounts.',
      params: z.strictObject({}),
      handler: () => mounts.list(),
    }),
    defineMethod({
      name: 'get_mount', access: 'user', description: 'An active mount, or null.',
      params: z.strictObject({ mount_point }),
      handler: ({ mount_point }) => mounts.get(mount_point),
    }),
    defineMethod({
      name: 'has_mount', access: 'user', description: 'Whether a mount point is active.',
      params: z.strictObject({ mount_point }),
      handler: ({ mount_point }) => mounts.has(mount_point),
    }),
    defineMethod({
      name: 'save_mount', access: 'user', description: 'Save a mount configuration (activated at start, or with load_mount); returns its UUID.',
      params: z.strictObject({
        ...spec, owner_user_id: z.string().optional(), tenant_id: z.string().optional(), description: z.string().optional(),
      }),
      handler: (p, ctx) => (admin(ctx, 'save a mount'), mounts.save(p)),
    }),
    defineMethod({
      name: 'list_saved_mounts', access: 'user', description: 'Saved mount configurations, filtered by owner and tenant.',
      params: z.strictObject({ owner_user_id: z.string().optional(), tenant_id: z.string().optional() }),
      handler: (p, ctx) => {
        if (!perms?.applies(ctx)) return mounts.listSaved(p);
        // A non-admin sees its tenant's configurations, without their credentials (tokens of a cloud drive).
        return mounts.listSaved({ ...p, tenant_id: ctx.tenantId }).map((m) => ({ ...m, backend_config: redactSecrets(m.backend_config) }));
      },
    }),
    defineMethod({
      name: 'load_mount', access: 'user', description: 'Activate a saved mount; returns the mount record.',
      params: z.strictObject({ mount_point }),
      handler: ({ mount_point }, ctx) => (admin(ctx, 'load a mount'), mounts.load(mount_point)),
    }),
    defineMethod({
      name: 'delete_saved_mount', access: 'user', description: 'Delete a saved configuration (an active mount stays).',
      params: z.strictObject({ mount_point }),
      handler: ({ mount_point }, ctx) => (admin(ctx, 'delete a saved mount'), mounts.deleteSaved(mount_point)),
    }),
  ] as const;
}

export type MountApi = ApiOf<ReturnType<typeof mountMethods>>;
