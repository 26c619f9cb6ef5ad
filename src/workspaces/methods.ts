/**
 * @module workspaces/methods
 * Workspace registration and snapshot methods (spec §4.5). The deprecated `agent_id` parameter
 * means `workspace_path = /workspace/<agent_id>` (WIRE.md).
 */
import { z } from 'zod';
import { defineMethod, type ApiOf } from '../core/method.js';
import { timedeltaParam } from '../core/wire.js';
import { WorkspaceService } from './service.js';

const wsTarget = { workspace_path: z.string().optional(), agent_id: z.string().min(1).optional() };
const target = (p: { workspace_path?: string | undefined; agent_id?: string | undefined }) =>
  WorkspaceService.resolvePath(p.workspace_path, p.agent_id);

export function workspaceMethods(ws: WorkspaceService) {
  return [
    defineMethod({
      name: 'register_workspace', access: 'user', description: 'Register a directory as a workspace (snapshots need one).',
      params: z.strictObject({
        path: z.string(), name: z.string().optional(), description: z.string().optional(), created_by: z.string().optional(),
        tags: z.array(z.string()).optional(), metadata: z.record(z.string(), z.unknown()).optional(),
        session_id: z.string().optional(), ttl: timedeltaParam.optional(),
      }),
      handler: ({ path, ...opts }) => ws.register(path, opts),
    }),
    defineMethod({
      name: 'unregister_workspace', access: 'user', description: 'Forget a workspace and its snapshots; the files are kept.',
      params: z.strictObject({ path: z.string() }),
      handler: ({ path }) => ws.unregister(path),
    }),
    defineMethod({
      name: 'list_workspaces', access: 'user', description: 'Registered workspaces.',
      params: z.strictObject({}),
      handler: () => ws.list(),
    }),
    defineMethod({
      name: 'get_workspace_info', access: 'user', description: 'A workspace record, or null when not registered.',
      params: z.strictObject({ path: z.string() }),
      handler: ({ path }) => ws.get(path),
    }),
    defineMethod({
      name: 'workspace_snapshot', access: 'user', description: 'Record an immutable snapshot of every file in the workspace (no bytes copied).',
      params: z.strictObject({
        ...wsTarget, description: z.string().optional(), tags: z.array(z.string()).optional(), created_by: z.string().optional(),
      }),
      handler: (p) => ws.snapshot(target(p), { description: p.description, tags: p.tags, created_by: p.created_by }),
    }),
    defineMethod({
      name: 'workspace_restore', access: 'user',
      description: 'Bring the workspace back to a snapshot: changed files get their old content as a new version, added files are deleted.',
      params: z.strictObject({ snapshot_number: z.number().int().min(1), ...wsTarget }),
      handler: (p) => ws.restore(target(p), p.snapshot_number),
    }),
    defineMethod({
      name: 'workspace_log', access: 'user', description: 'Snapshots of a workspace, newest first.',
      params: z.strictObject({ ...wsTarget, limit: z.number().int().min(1).default(100) }),
      handler: (p) => ws.log(target(p), p.limit),
    }),
    defineMethod({
      name: 'workspace_diff', access: 'user', description: 'Files added, modified and deleted between two snapshots.',
      params: z.strictObject({ snapshot_1: z.number().int().min(1), snapshot_2: z.number().int().min(1), ...wsTarget }),
      handler: (p) => ws.diff(target(p), p.snapshot_1, p.snapshot_2),
    }),
  ] as const;
}

export type WorkspaceApi = ApiOf<ReturnType<typeof workspaceMethods>>;
