/**
 * @module test/helpers/fuse-ops
 * Calling the mount's fuse-native style operations in process (no kernel), for the FUSE tests
 * that drive FuseFileSystem directly.
 */
import type { FuseOperations } from '../../src/native/fuse.js';

/** Call a fuse-native style operation; resolves with [code, value]. */
export function call<V = unknown>(op: (...args: never[]) => void, ...args: unknown[]): Promise<[number, V | undefined]> {
  return new Promise((resolve) => (op as (...a: unknown[]) => void)(...args, (code: number, value?: V) => resolve([code, value])));
}

/** create, write, flush, release (as `echo text > path`), checking each answer; mode 0640 unless given. */
export async function writeFile(ops: FuseOperations, path: string, data: string | Buffer, mode = 0o100640): Promise<void> {
  const [c, fd] = await call<number>(ops.create, path, mode);
  if (c !== 0) throw new Error(`create ${path}: ${c}`);
  const buf = Buffer.from(data);
  const [w] = await call(ops.write, path, fd, buf, buf.length, 0);
  if (w < 0) throw new Error(`write ${path}: ${w}`);
  const [f] = await call(ops.flush, path, fd);
  const [r] = await call(ops.release, path, fd);
  if (f !== 0 || r !== 0) throw new Error(`close ${path}: ${f} ${r}`);
}
