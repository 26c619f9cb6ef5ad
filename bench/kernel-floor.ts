/**
 * @module bench/kernel-floor
 * Building bench/fuse-floor-ll.c, the kernel floor bench/fuse.ts times beside the binding floor (bench/fuse-floor.ts):
 * a bare in-memory file system in C on libfuse 3's low-level API (see the C file's header).
 */
import { execFileSync } from 'node:child_process';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The kernel floor's C source. */
export const KERNEL_FLOOR_SOURCE = join(resolve(dirname(fileURLToPath(import.meta.url))), 'fuse-floor-ll.c');

/**
 * Build the kernel floor into `dir` with `cc` and pkg-config's fuse3 flags (the Debian package
 * libfuse3-dev): the binary's path, or why it cannot be built here. The binary takes one argument,
 * the mount point; it prints `ready` once mounted and unmounts on SIGTERM or SIGINT.
 */
export function buildKernelFloor(dir: string): { binary: string } | { reason: string } {
  const binary = join(dir, 'floor-ll');
  let flags: string[];
  try {
    flags = execFileSync('pkg-config', ['--cflags', '--libs', 'fuse3'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split(/\s+/);
  } catch {
    return { reason: 'pkg-config finds no fuse3 (install the Debian package libfuse3-dev)' };
  }
  try {
    execFileSync('cc', ['-O2', '-o', binary, KERNEL_FLOOR_SOURCE, ...flags], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    return { reason: `cc failed: ${String((err as { stderr?: Buffer }).stderr ?? err).split('\n')[0]}` };
  }
  return { binary };
}
