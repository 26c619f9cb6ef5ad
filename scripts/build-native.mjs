#!/usr/bin/env node
/**
 * `npm run build` step: build svc's C addons into native/build/ with `cc` and Node's own headers:
 * - svc_fuse3.node (native/fuse3/svc_fuse3.c), svc's libfuse 3 binding, with pkg-config's fuse3
 *   flags (the Debian package libfuse3-dev; scripts/system-deps.mjs installs it as root);
 * - svc_sha256.node (native/sha256/svc_sha256.c), SHA-256 with the CPU's SHA extensions, two
 *   hashes of the same bytes in one pass (no library needed).
 * Each is skipped when it is newer than its source. It never fails the build: where an addon
 * cannot be built, svc works without it (mounts use fuse-native, hashes node:crypto) and this
 * says why in one line.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const ADDONS = [
  {
    name: 'svc_fuse3',
    source: join(ROOT, 'native', 'fuse3', 'svc_fuse3.c'),
    pkg: 'fuse3',
    cflags: ['-O2', '-pthread'],
    without: 'FUSE mounts will use fuse-native (libfuse 2)',
  },
  {
    name: 'svc_sha256',
    source: join(ROOT, 'native', 'sha256', 'svc_sha256.c'),
    // -O3 unrolls the 16 round groups (about 15 % faster here than -O2).
    cflags: ['-O3'],
    without: 'hashes will use node:crypto',
  },
];

/** Build one addon of {@link ADDONS}: its path, or why it cannot be built here. */
function build({ name, source, pkg, cflags }, { force = false } = {}) {
  const out = join(ROOT, 'native', 'build', `${name}.node`);
  if (process.platform !== 'linux') return { reason: 'svc builds its addons on Linux only' };
  if (!force && existsSync(out) && statSync(out).mtimeMs >= statSync(source).mtimeMs) return { addon: out };
  const headers = join(dirname(process.execPath), '..', 'include', 'node');
  if (!existsSync(join(headers, 'node_api.h'))) return { reason: `Node's headers are not at ${headers}` };
  let flags = [];
  if (pkg) {
    try {
      flags = execFileSync('pkg-config', ['--cflags', '--libs', pkg], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split(/\s+/);
    } catch {
      return { reason: `pkg-config finds no ${pkg} (install lib${pkg}-dev and pkg-config)` };
    }
  }
  mkdirSync(dirname(out), { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  try {
    execFileSync('cc', [...cflags, '-fPIC', '-shared', '-Wall', `-I${headers}`, '-o', tmp, source, ...flags], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const detail = err.code === 'ENOENT' ? 'no C compiler (install gcc)' : String(err.stderr ?? err).trim().split('\n').slice(0, 3).join(' ');
    return { reason: `cc failed: ${detail}` };
  }
  renameSync(tmp, out); // atomic: a running daemon never loads a half-written file
  return { addon: out };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const addon of ADDONS) {
    const result = build(addon, { force: process.argv.includes('--force') });
    if ('reason' in result && process.platform === 'linux') {
      console.error(`svc: the ${addon.name} addon was not built (${result.reason}); ${addon.without}`);
    }
  }
}
