/**
 * @module bench/kernel-floor
 * Building bench/fuse.ts's helpers in C: the kernel floor (bench/fuse-floor-ll.c, timed beside the
 * binding floor bench/fuse-floor.ts: a bare in-memory file system on libfuse 3's low-level API, see
 * the C file's header) and the folio counter (bench/folios.c: how a file sits in the page cache).
 */
import { execFileSync } from 'node:child_process';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = resolve(dirname(fileURLToPath(import.meta.url)));
/** The kernel floor's C source. */
export const KERNEL_FLOOR_SOURCE = join(HERE, 'fuse-floor-ll.c');
/** The folio counter's C source. */
export const FOLIOS_SOURCE = join(HERE, 'folios.c');

export type Built = { binary: string } | { reason: string };

/** Compile `source` into `binary` with `cc -O2` and `flags`: the binary's path, or why not. */
function compile(source: string, binary: string, flags: string[] = []): Built {
  try {
    execFileSync('cc', ['-O2', '-o', binary, source, ...flags], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    return { reason: `cc failed: ${String((err as { stderr?: Buffer }).stderr ?? err).split('\n')[0]}` };
  }
  return { binary };
}

/**
 * Build the kernel floor into `dir` with `cc` and pkg-config's fuse3 flags (the Debian package
 * libfuse3-dev): the binary's path, or why it cannot be built here. The binary takes one argument,
 * the mount point; it prints `ready` once mounted and unmounts on SIGTERM or SIGINT.
 */
export function buildKernelFloor(dir: string): Built {
  let flags: string[];
  try {
    flags = execFileSync('pkg-config', ['--cflags', '--libs', 'fuse3'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split(/\s+/);
  } catch {
    return { reason: 'pkg-config finds no fuse3 (install the Debian package libfuse3-dev)' };
  }
  return compile(KERNEL_FLOOR_SOURCE, join(dir, 'floor-ll'), flags);
}

/** Build the folio counter into `dir` (`folios FILE` prints `pages P cached C folios F largest L`; needs root to run). */
export function buildFolioCounter(dir: string): Built {
  return compile(FOLIOS_SOURCE, join(dir, 'folios'));
}
