/**
 * @module test/helpers/small-disk
 * A small tmpfs of its own, to fill up: what a full disk does to the store and the faces. Mounting
 * needs root; elsewhere {@link smallDisk} gives the reason the test is skipped.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Why a small disk cannot be made here, or undefined when it can. */
export function smallDiskSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'a full-disk test needs root to mount a small tmpfs';
  return undefined;
}

/** Mount a tmpfs of `mib` MiB on a fresh directory; unmounted (lazily) and removed at teardown. */
export function smallDisk(t: { teardown(fn: () => unknown): void }, mib: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-small-disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mib}m`, 'tmpfs', dir]);
  t.teardown(() => {
    try {
      execFileSync('umount', ['-l', dir]);
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}
