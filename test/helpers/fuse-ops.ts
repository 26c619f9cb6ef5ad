/**
 * @module test/helpers/fuse-ops
 * Calling the mount's fuse-native style operations in process (no kernel), for the FUSE tests
 * that drive FuseFileSystem directly.
 */

/** Call a fuse-native style operation; resolves with [code, value]. */
export function call<V = unknown>(op: (...args: never[]) => void, ...args: unknown[]): Promise<[number, V | undefined]> {
  return new Promise((resolve) => (op as (...a: unknown[]) => void)(...args, (code: number, value?: V) => resolve([code, value])));
}
