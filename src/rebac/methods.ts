/**
 * @module rebac/methods
 * ReBAC methods (spec §4.11, WIRE.md "Results the spec leaves open"). Everything happens in one
 * tenant: the `tenant_id` param where the spec has one, else the caller's context tenant.
 *
 * With permission enforcement on, an authenticated non-admin caller works in its own tenant only,
 * and needs `share` on an object to create or delete tuples on it (so nobody grants themselves
 * what they do not own). Admins may do anything.
 */
import { z } from 'zod';
import { defineMethod, type ApiOf } from '../core/method.js';
import type { OperationContext } from '../core/context.js';
import { PermissionDeniedError } from '../core/errors.js';
import { datetimeParam } from '../core/wire.js';
import { requireShare, type RebacService } from './service.js';
import { isValidComponent } from './records.js';

const part = z.string().min(1).refine(isValidComponent, 'must not contain control characters or unpaired surrogates');
const objectParam = z.tuple([part, part]).describe('`[type, id]`, e.g. `["file", "/docs/a.txt"]`; `file` ids are normalised paths, `workspace` means `file`');
const subjectParam = z.tuple([part, part]).describe('`[type, id]`, e.g. `["user", "alice"]`');
const subjectOrUserset = z.union([z.tuple([part, part]), z.tuple([part, part, part])])
  .describe('`[type, id]`, or a userset `[type, id, relation]` such as `["group", "eng", "member"]`; a plain `["group", id]` also stands for its members');
const tenantParam = part.describe('Tenant (default: the caller\'s tenant)');
const nameParam = part.describe('A permission (`read`, `write`, `delete`, `share`) or relation (`owner`, `editor`, `viewer`, `direct_*`, `member`, `parent`)');

export interface RebacMethodOptions {
  /** Whether permissions are enforced (config `enforcePermissions`). */
  enforce: boolean;
}

export function rebacMethods(rebac: RebacService, opts: RebacMethodOptions) {
  /** Whether this caller is held to the rules (enforcement on, authenticated, not admin). */
  const restricted = (ctx: OperationContext) => opts.enforce && ctx.authenticated && !ctx.isAdmin;
  const tenantOf = (ctx: OperationContext, tenant: string | undefined) => {
    const t = tenant ?? ctx.tenantId;
    if (restricted(ctx) && t !== ctx.tenantId) {
      throw new PermissionDeniedError(`Permission denied: may not act in tenant ${t}`, { tenant_id: t });
    }
    return t;
  };
  return [
    defineMethod({
      name: 'rebac_create', access: 'user',
      description: 'Create a relationship tuple and return its tuple_id; the same tuple again returns the same id (with the new expiry). '
        + 'Concrete relations only (`direct_owner`, `direct_editor`, `direct_viewer`, `parent`, `member`, or those of a custom namespace); '
        + 'computed ones (`owner`, `editor`, `viewer`) are -32005; legacy `member-of`, `owner-of`, `viewer-of`, `editor-of` are mapped. '
        + 'A `parent` tuple that would close a loop is -32005. With enforcement on, a non-admin needs `share` on the object '
        + '(and, for a `parent` tuple, on the subject too: it puts the subject under the object\'s owners).',
      params: z.strictObject({
        subject: subjectOrUserset,
        relation: part.describe('A concrete relation'),
        object: objectParam,
        expires_at: z.union([z.null(), datetimeParam]).optional().describe('When the tuple stops granting anything (null or absent: never)'),
        tenant_id: tenantParam.optional(),
      }),
      handler: async (p, ctx) => {
        const tenant = tenantOf(ctx, p.tenant_id);
        if (restricted(ctx)) {
          requireShare(rebac, ctx, p.object, tenant);
          // A `parent` tuple subordinates its subject to the object: its owner must agree too.
          if (rebac.followedFromSubject(p.subject, p.relation)) requireShare(rebac, ctx, [p.subject[0], p.subject[1]], tenant);
        }
        return rebac.create({ subject: p.subject, relation: p.relation, object: p.object, tenantId: tenant, expiresAt: p.expires_at });
      },
    }),
    defineMethod({
      name: 'rebac_check', access: 'user',
      description: 'Whether the subject holds a permission or relation on the object: true or false. Computed relations, directory '
        + 'inheritance (a grant on `/a` holds on `/a/b/c.txt`), groups and nested groups are resolved; expired tuples grant nothing. '
        + 'A name the object type does not define is -32005.',
      params: z.strictObject({ subject: subjectParam, permission: nameParam, object: objectParam, tenant_id: tenantParam.optional() }),
      handler: (p, ctx) => rebac.checkName(p.subject, p.permission, p.object, tenantOf(ctx, p.tenant_id)),
    }),
    defineMethod({
      name: 'rebac_expand', access: 'user',
      description: 'Every concrete subject holding a permission or relation on the object, groups replaced by their members: `{subjects:[[type, id], …]}`, sorted.',
      params: z.strictObject({ permission: nameParam, object: objectParam }),
      handler: (p, ctx) => rebac.expand(p.permission, p.object, ctx.tenantId),
    }),
    defineMethod({
      name: 'rebac_explain', access: 'user',
      description: 'Why a check answers as it does: `{allowed, path:[{subject, relation, object, tuple_id?, implied?}]}`, the tuples that grant '
        + 'the permission from the subject to the object (`implied` marks a `parent` edge of the path hierarchy); an empty path when denied.',
      params: z.strictObject({ subject: subjectParam, permission: nameParam, object: objectParam, tenant_id: tenantParam.optional() }),
      handler: (p, ctx) => rebac.explain(p.subject, p.permission, p.object, tenantOf(ctx, p.tenant_id)),
    }),
    defineMethod({
      name: 'rebac_delete', access: 'user',
      description: 'Delete a tuple of the caller\'s tenant: true if it existed, false otherwise. With enforcement on, a non-admin needs `share` on its object.',
      params: z.strictObject({ tuple_id: part }),
      handler: (p, ctx) => {
        const tuple = rebac.get(p.tuple_id, ctx.tenantId);
        if (!tuple) return rebac.delete(p.tuple_id, ctx.tenantId);
        if (restricted(ctx)) requireShare(rebac, ctx, tuple.object, ctx.tenantId);
        return rebac.delete(p.tuple_id, ctx.tenantId);
      },
    }),
    defineMethod({
      name: 'rebac_list_tuples', access: 'user',
      description: 'The live tuples of the caller\'s tenant matching every given filter, oldest first: '
        + '`[{tuple_id, subject, relation, object, tenant_id, created_at, expires_at}]`. A `[type, id]` subject filter also matches usersets of that subject.',
      params: z.strictObject({
        subject: subjectOrUserset.optional(),
        relation: part.describe('Only tuples with this relation (legacy names are mapped)').optional(),
        object: objectParam.optional(),
      }),
      handler: (p, ctx) => rebac.list({ subject: p.subject, relation: p.relation, object: p.object }, ctx.tenantId),
    }),
  ] as const;
}

export type RebacApi = ApiOf<ReturnType<typeof rebacMethods>>;
