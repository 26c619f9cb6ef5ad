/**
 * @module admin/methods
 * The admin methods of spec §4.10 plus `admin_audit`; all admin-only. Results never carry a
 * hash, and the raw key only in admin_create_key's answer. `expires_days` is a positive integer
 * (days from now) or null (never expires); in admin_update_key an absent one leaves the expiry as
 * it is (WIRE.md "Admin").
 */
import { z } from 'zod';
import { defineMethod, type ApiOf } from '../core/method.js';
import { datetimeParam } from '../core/wire.js';
import { AUDIT_EVENTS } from '../auth/keys.js';
import type { AdminService } from './service.js';

const expiresDays = z.number().int().positive().nullable();
const keySubjectTypes = ['user', 'agent', 'service'] as const;
const metadata = z.record(z.string(), z.unknown());
const page = { limit: z.number().int().min(1).default(100), offset: z.number().int().min(0).default(0) };

export function adminMethods(admin: AdminService) {
  return [
    defineMethod({
      name: 'admin_create_key', access: 'admin',
      description: 'Create an API key; the raw key is in this answer and never again.',
      params: z.strictObject({
        user_id: z.string().min(1), name: z.string().min(1), is_admin: z.boolean().default(false),
        expires_days: expiresDays.default(null), tenant_id: z.string().min(1).nullable().default('default'),
        subject_type: z.enum(keySubjectTypes).default('user'), subject_id: z.string().min(1).nullable().optional(),
        metadata: metadata.optional(),
      }),
      handler: (p, ctx) => admin.createKey(p, ctx),
    }),
    defineMethod({
      name: 'admin_list_keys', access: 'admin',
      description: 'API keys matching the filters, oldest first; total counts every match.',
      params: z.strictObject({
        user_id: z.string().optional(), tenant_id: z.string().optional(), is_admin: z.boolean().optional(),
        include_revoked: z.boolean().default(false), include_expired: z.boolean().default(false), ...page,
      }),
      handler: (p) => admin.listKeys(p),
    }),
    defineMethod({
      name: 'admin_get_key', access: 'admin', description: 'One API key record (-32000 when the key_id is unknown).',
      params: z.strictObject({ key_id: z.string().min(1) }),
      handler: ({ key_id }) => admin.getKey(key_id),
    }),
    defineMethod({
      name: 'admin_revoke_key', access: 'admin',
      description: 'Revoke an API key for good: it stops authenticating at once.',
      params: z.strictObject({ key_id: z.string().min(1) }),
      handler: ({ key_id }, ctx) => admin.revokeKey(key_id, ctx),
    }),
    defineMethod({
      name: 'admin_update_key', access: 'admin',
      description: 'Change name, admin flag, expiry (days from now; null = never) or metadata of a key.',
      params: z.strictObject({
        key_id: z.string().min(1), name: z.string().min(1).optional(), is_admin: z.boolean().optional(),
        expires_days: expiresDays.optional(), metadata: metadata.optional(),
      }),
      handler: ({ key_id, ...changes }, ctx) => admin.updateKey(key_id, changes, ctx),
    }),
    defineMethod({
      name: 'admin_audit', access: 'admin',
      description: 'The audit trail of authentications, failures and key administration, newest first.',
      params: z.strictObject({
        event: z.enum(AUDIT_EVENTS).optional(), key_id: z.string().optional(), user_id: z.string().optional(),
        tenant_id: z.string().optional(), since: datetimeParam.optional(), until: datetimeParam.optional(), ...page,
      }),
      handler: (p) => admin.audit(p),
    }),
  ] as const;
}

export type AdminApi = ApiOf<ReturnType<typeof adminMethods>>;
