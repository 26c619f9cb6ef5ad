/**
 * @module transports/fuse/versions
 * The read-only `/.versions/` tree of the mount: `/.versions/<dir>/` mirrors the live directories,
 * `/.versions/<file>/` is a directory of the file's versions and `/.versions/<file>/<n>` is version
 * n's content, so any tool can open or copy an old version. Nothing is stored for it (it never
 * shows up in RPC `list`/`glob`), and it is left out of the root's listing, like NetApp's
 * `.snapshot`, so `cp -r`, `rsync` and `find` over the mount do not copy the whole history.
 */
import { PermissionDeniedError } from '../../core/errors.js';
import { parentOf, baseName } from '../../core/paths.js';
import type { FsService } from '../../fs/service.js';
import type { FuseBackend, NodeInfo, VersionInfo } from './backend.js';

export const VERSIONS_DIR = '/.versions';

export function isVersionsPath(path: string): boolean {
  return path === VERSIONS_DIR || path.startsWith(VERSIONS_DIR + '/');
}

/**
 * Nothing is stored at or below /.versions by any face (-32004, EROFS on a mount): every mount,
 * the daemon's own or a remote one made later, shows the history there, so a file stored there
 * would be listed by RPC and never seen in a mount. Deletes, and renames out of it, still pass, to
 * clear what an earlier svc let in.
 */
export function reserveVersionsDir(fs: Pick<FsService, 'addGuard'>): void {
  fs.addGuard((kind, paths) => {
    const target = kind === 'write' || kind === 'mkdir' ? paths[0] : kind === 'rename' ? paths[1] : undefined;
    if (target !== undefined && isVersionsPath(target)) {
      throw new PermissionDeniedError(`Read-only: ${VERSIONS_DIR} is the mount's version history, nothing can be stored at ${target}`,
        { path: target, errno: 'EROFS' });
    }
  });
}

/** What a path below /.versions names. */
export type VersionsTarget =
  | { kind: 'dir'; path: string; info: NodeInfo | undefined }
  | { kind: 'history'; path: string; info: NodeInfo }
  | { kind: 'version'; path: string; version: VersionInfo };

/** Resolve a /.versions path against the live tree; undefined when it names nothing. */
export async function resolveVersionsPath(backend: FuseBackend, path: string): Promise<VersionsTarget | undefined> {
  const live = path.slice(VERSIONS_DIR.length) || '/';
  if (live === '/') return { kind: 'dir', path: '/', info: undefined };
  const info = await backend.stat(live);
  if (info?.kind === 'dir') return { kind: 'dir', path: live, info };
  if (info) return { kind: 'history', path: live, info };
  const n = baseName(live);
  if (!/^[1-9][0-9]*$/.test(n)) return undefined;
  const file = parentOf(live);
  const owner = file === '/' ? undefined : await backend.stat(file);
  if (!owner || owner.kind === 'dir') return undefined;
  const version = backend.version
    ? await backend.version(file, Number(n))
    : (await backend.versions(file)).find((v) => v.version === Number(n));
  return version && { kind: 'version', path: file, version };
}

/** Names in a /.versions directory: live children, or a file's version numbers. */
export async function listVersionsDir(backend: FuseBackend, target: VersionsTarget): Promise<[string, VersionsTarget][]> {
  if (target.kind === 'dir') {
    const out: [string, VersionsTarget][] = [];
    for (const [name, info] of await backend.list(target.path)) {
      const path = target.path === '/' ? `/${name}` : `${target.path}/${name}`;
      out.push([name, info.kind === 'dir' ? { kind: 'dir', path, info } : { kind: 'history', path, info }]);
    }
    return out;
  }
  if (target.kind === 'history') {
    return (await backend.versions(target.path)).map((version) => [String(version.version), { kind: 'version', path: target.path, version }]);
  }
  return [];
}
