/**
 * @module workspaces/methods
 * Workspace registration and snapshot methods (spec §4.5). The deprecated `agent_id` parameter
 * means `workspace_path = /workspace/<agent_id>` (WIRE.md).
 */
import { z } from 'zod';
import { defineMethod, type ApiOf } from '../core/method.js';
import { timedeltaParam } from '../core/wire.js';
import { WorkspaceService } from './service.js';
import { normalizeFilePath, parentOf } from '../core/paths.js';
import type { Permissions } from '../auth/permissions.js';

const wsTarget = { workspace_path: z.string().optional(), agent_id: z.string().min(1).optional() };
const target = (p: { workspace_path?: string | undefined; agent_id?: string | undefined }) =>
  WorkspaceService.resolvePath(p.workspace_path, p.agent_id);

/**
 * With `perms`, the workspace methods check the caller on the workspace path (issue 3 §5):
 * register hands out ownership (the registrant becomes direct_owner), so it needs what creating
 * the directory needs when the path does not exist (write on its parent) and ownership (`share`)
 * when it does — registering someone else's directory must not make the caller its owner;
 * unregister drops the snapshots and needs `delete`; snapshot and restore need read and write;
 * get_workspace_info, workspace_log and workspace_diff need read; list_workspaces shows only
 * readable ones.
 */
export function workspaceMethods(ws: WorkspaceService, perms?: Permissions, exists: (path: string) => boolean = () => false) {
  return [
    defineMethod({
      name: 'register_workspace', access: 'user', description: 'Register a directory as a workspace (snapshots need one); the registrant becomes its direct_owner.',
      params: z.strictObject({
        path: z.string(), name: z.string().optional(), description: z.string().optional(), created_by: z.string().optional(),
        tags: z.array(z.string()).optional(), metadata: z.record(z.string(), z.unknown()).optional(),
        session_id: z.string().optional(), ttl: timedeltaParam.optional(),
      }),
      handler: async ({ path, ...opts }, ctx) => {
        const p = normalizeFilePath(path);
        if (perms?.applies(ctx)) {
          if (exists(p)) perms.require(ctx, 'share', p);
          else perms.require(ctx, 'write', parentOf(p));
        }
        const record = await ws.register(path, opts);
        await perms?.grantOwner(ctx, p);
        return record;
      },
    }),
    defineMethod({
      name: 'unregister_workspace', access: 'user', description: 'Forget a workspace and its snapshots; the files are kept.',
      params: z.strictObject({ path: z.string() }),
      handler: ({ path }, ctx) => {
        perms?.require(ctx, 'delete', normalizeFilePath(path));
        return ws.unregister(path);
      },
    }),
    defineMethod({
      name: 'list_workspaces', access: 'user', description: 'Registered workspaces.',
      params: z.strictObject({}),
      handler: (_p, ctx) => {
        const readable = perms?.filter(ctx, 'read');
        return readable ? ws.list().filter((w) => readable(w.path)) : ws.list();
      },
    }),
    defineMethod({
      name: 'get_workspace_info', access: 'user', description: 'A workspace record, or null when not registered.',
      params: z.strictObject({ path: z.string() }),
      handler: ({ path }, ctx) => {
        perms?.require(ctx, 'read', normalizeFilePath(path));
        return ws.get(path);
      },
    }),
    defineMethod({
      name: 'workspace_snapshot', access: 'user', description: 'Record an immutable snapshot of every file in the workspace (no bytes copied).',
      params: z.strictObject({
        ...wsTarget, description: z.string().optional(), tags: z.array(z.string()).optional(), created_by: z.string().optional(),
      }),
      handler: (p, ctx) => {
        const path = target(p);
        perms?.require(ctx, 'read', path);
        perms?.require(ctx, 'write', path);
        return ws.snapshot(path, { description: p.description, tags: p.tags, created_by: p.created_by });
      },
    }),
    defineMethod({
      name: 'workspace_restore', access: 'user',
      description: 'Bring the workspace back to a snapshot: changed files get their old content as a new version, added files are deleted.',
      params: z.strictObject({ snapshot_number: z.number().int().min(1), ...wsTarget }),
      handler: (p, ctx) => {
        const path = target(p);
        perms?.require(ctx, 'read', path);
        perms?.require(ctx, 'write', path);
        return ws.restore(path, p.snapshot_number);
      },
    }),
    defineMethod({
      name: 'workspace_log', access: 'user', description: 'Snapshots of a workspace, newest first.',
      params: z.strictObject({ ...wsTarget, limit: z.number().int().min(1).default(100) }),
      handler: (p, ctx) => {
        const path = target(p);
        perms?.require(ctx, 'read', path);
        return ws.log(path, p.limit);
      },
    }),
    defineMethod({
      name: 'workspace_diff', access: 'user', description: 'Files added, modified and deleted between two snapshots.',
      params: z.strictObject({ snapshot_1: z.number().int().min(1), snapshot_2: z.number().int().min(1), ...wsTarget }),
      handler: (p, ctx) => {
        const path = target(p);
        perms?.require(ctx, 'read', path);
        return ws.diff(path, p.snapshot_1, p.snapshot_2);
      },
    }),
  ] as const;
}

export type WorkspaceApi = ApiOf<ReturnType<typeof workspaceMethods>>;
