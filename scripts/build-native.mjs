#!/usr/bin/env node
/**
 * `npm run build` step: build svc's libfuse 3 addon (native/fuse3/svc_fuse3.c) into
 * native/build/svc_fuse3.node with `cc`, Node's own headers and pkg-config's fuse3 flags (the
 * Debian package libfuse3-dev; scripts/system-deps.mjs installs it as root). Skipped when the addon
 * is newer than its source. It never fails the build: where it cannot be built, mounts use
 * fuse-native (libfuse 2) and this says why in one line.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SOURCE = join(ROOT, 'native', 'fuse3', 'svc_fuse3.c');
const OUT = join(ROOT, 'native', 'build', 'svc_fuse3.node');

/** Build the addon: its path, or why it cannot be built here. */
export function buildFuse3({ force = false } = {}) {
  if (process.platform !== 'linux') return { reason: 'FUSE mounts are Linux only' };
  if (!force && existsSync(OUT) && statSync(OUT).mtimeMs >= statSync(SOURCE).mtimeMs) return { addon: OUT };
  const headers = join(dirname(process.execPath), '..', 'include', 'node');
  if (!existsSync(join(headers, 'node_api.h'))) return { reason: `Node's headers are not at ${headers}` };
  let flags;
  try {
    flags = execFileSync('pkg-config', ['--cflags', '--libs', 'fuse3'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split(/\s+/);
  } catch {
    return { reason: 'pkg-config finds no fuse3 (install libfuse3-dev and pkg-config)' };
  }
  mkdirSync(dirname(OUT), { recursive: true });
  const tmp = `${OUT}.${process.pid}.tmp`;
  try {
    execFileSync('cc', ['-O2', '-fPIC', '-shared', '-pthread', '-Wall', `-I${headers}`, '-o', tmp, SOURCE, ...flags], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const detail = err.code === 'ENOENT' ? 'no C compiler (install gcc)' : String(err.stderr ?? err).trim().split('\n').slice(0, 3).join(' ');
    return { reason: `cc failed: ${detail}` };
  }
  renameSync(tmp, OUT); // atomic: a running daemon never loads a half-written file
  return { addon: OUT };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = buildFuse3({ force: process.argv.includes('--force') });
  if ('reason' in result && process.platform === 'linux') {
    console.error(`svc: the libfuse 3 addon was not built (${result.reason}); FUSE mounts will use fuse-native (libfuse 2)`);
  }
}
