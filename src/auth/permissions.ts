/**
 * @module auth/permissions
 * The one permission check every face calls (RPC/WebSocket here; FUSE and MCP too): whether the
 * caller of an operation may read, write, delete or share a path, by the ReBAC tuples of its
 * tenant (spec §5.3, issue 3 §5 "Enforcement"). Independent of HTTP: it sees only the
 * {@link OperationContext} a face resolved.
 *
 * Who is held to the rules: with enforcement on (config `enforcePermissions`), every
 * authenticated caller that is not an admin. A daemon without auth resolves unauthenticated
 * contexts, so nothing is checked; admins may act for anyone. Checks run in the caller's tenant
 * (`ctx.tenantId`) only, so tenants never see each other's grants.
 */
import type { OperationContext } from '../core/context.js';
import { PermissionDeniedError } from '../core/errors.js';
import { normalizePath, parentOf } from '../core/paths.js';
import type { Permission, RebacService } from '../rebac/service.js';

export type { Permission } from '../rebac/service.js';

/** A per-request path predicate (list, glob, grep, readdir). */
export type PathFilter = (path: string) => boolean;

export class Permissions {
  readonly #rebac: RebacService;
  readonly #enforce: boolean;

  constructor(rebac: RebacService, opts: { enforce: boolean }) {
    this.#rebac = rebac;
    this.#enforce = opts.enforce;
  }

  /** Whether enforcement is configured at all (it still skips unauthenticated and admin callers). */
  get enforcing(): boolean {
    return this.#enforce;
  }

  /** Whether this caller is held to the rules: enforcement on, authenticated, not an admin. */
  applies(ctx: OperationContext): boolean {
    return this.#enforce && ctx.authenticated && !ctx.isAdmin;
  }

  /** Whether the caller may do `permission` on `path` (a file or directory, existing or not). */
  can(ctx: OperationContext, permission: Permission, path: string): boolean {
    if (!this.applies(ctx)) return true;
    return this.#rebac.canAccessPath(ctx, permission, path);
  }

  /** {@link can} or -32004 naming the subject, the permission and the path. */
  require(ctx: OperationContext, permission: Permission, path: string): void {
    if (!this.applies(ctx)) return;
    this.#rebac.requirePath(ctx, permission, path);
  }

  /** -32004 unless the caller is an admin (or not held to the rules at all). */
  requireAdmin(ctx: OperationContext, what: string): void {
    if (!this.applies(ctx)) return;
    throw new PermissionDeniedError(`Permission denied: ${ctx.subjectType}:${ctx.subjectId} may not ${what} (admin only)`);
  }

  /**
   * A predicate for many paths of one request (shares ancestor evaluations). Use it within one
   * request only: it does not see later tuple changes.
   */
  filter(ctx: OperationContext, permission: Permission): PathFilter {
    if (!this.applies(ctx)) return () => true;
    return this.#rebac.pathFilter(ctx, permission);
  }

  /**
   * The visibility rule of listings: a file is shown when the caller may read it, a directory when
   * the caller may read it or anything below it. `below(dir)` yields the paths under `dir` (files
   * and directories, any depth); it is consulted only for directories the caller may not read, and
   * answers are memoised for the request. Returns undefined when everything is visible.
   */
  visibility(ctx: OperationContext, below: (dir: string) => Iterable<string>): ((path: string, isDirectory: boolean) => boolean) | undefined {
    if (!this.applies(ctx)) return undefined;
    const readable = this.#rebac.pathFilter(ctx, 'read');
    const dirs = new Map<string, boolean>();
    const dirVisible = (dir: string): boolean => {
      const d = normalizePath(dir);
      let v = dirs.get(d);
      if (v === undefined) {
        v = readable(d);
        if (!v) {
          for (const p of below(d)) {
            if (readable(p)) {
              v = true;
              break;
            }
          }
        }
        dirs.set(d, v);
      }
      return v;
    };
    return (path, isDirectory) => (isDirectory ? dirVisible(path) : readable(path));
  }

  /**
   * Make the caller the direct_owner of a path it just created (a tuple in its own tenant).
   * Only when enforcement is on and the caller is authenticated — an admin acting as a user
   * (X-Svc-Subject) makes that user the owner. Without enforcement no tuples are written.
   */
  async grantOwner(ctx: OperationContext, path: string): Promise<void> {
    if (!this.#enforce || !ctx.authenticated) return;
    await this.#rebac.create({
      subject: [ctx.subjectType, ctx.subjectId], relation: 'direct_owner', object: ['file', normalizePath(path)], tenantId: ctx.tenantId,
    });
  }

  /**
   * What creating `path` needs: write on the path itself when it exists (overwriting), else write
   * on its parent directory (adding an entry to it). `exists` is the caller's view of the store.
   */
  requireCreate(ctx: OperationContext, path: string, exists: boolean): void {
    if (!this.applies(ctx)) return;
    const p = normalizePath(path);
    this.require(ctx, 'write', exists ? p : parentOf(p));
  }
}

/** The outermost of `path` and its ancestors for which `exists` is false (what a create makes); undefined when `path` exists. */
export function outermostMissing(path: string, exists: (p: string) => boolean): string | undefined {
  let p = normalizePath(path);
  if (exists(p)) return undefined;
  for (let parent = parentOf(p); parent !== '/' && !exists(parent); parent = parentOf(parent)) p = parent;
  return p;
}
