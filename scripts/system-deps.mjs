#!/usr/bin/env node
// The Debian packages the FUSE mount and its tests need: libfuse2 (fuse-native's libfuse 2),
// fuse3 (fusermount; never the old "fuse" package, which removes fuse3), the tools the mount
// tests run inside a mount (rsync, git), and libfuse3-dev, pkg-config, gcc and libc6-dev, with
// which `npm run build` compiles svc's libfuse 3 binding (scripts/build-native.mjs) and bench:fuse
// builds its kernel floor (bench/fuse-floor-ll.c). Run before `npm test` (and by `svc serve --mount`
// users by hand): as root with apt-get, missing packages are installed; otherwise it says what is missing and
// how to install it. It never fails the command that runs it: without FUSE, the mount tests skip
// with a printed reason.
import { execFileSync, spawnSync } from 'node:child_process';

const PACKAGES = ['libfuse2', 'fuse3', 'rsync', 'git', 'libfuse3-dev', 'pkg-config', 'gcc', 'libc6-dev'];

function missing() {
  return PACKAGES.filter((p) => {
    const r = spawnSync('dpkg-query', ['-W', '-f=${Status}', p], { encoding: 'utf8' });
    return r.status !== 0 || !r.stdout.includes('install ok installed');
  });
}

function main() {
  if (process.platform !== 'linux') return;
  if (spawnSync('dpkg-query', ['--version']).error) return; // not Debian-like: nothing to say
  const need = missing();
  if (need.length === 0) return;
  const root = process.getuid?.() === 0;
  const apt = !spawnSync('apt-get', ['--version']).error;
  if (!root || !apt) {
    console.error(`svc: missing ${need.join(', ')}: FUSE mount tests will skip. Install with: sudo apt-get install ${need.join(' ')}`);
    return;
  }
  console.error(`svc: installing ${need.join(', ')} (apt-get)…`);
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...need], { stdio: 'ignore', env });
  } catch (err) {
    console.error(`svc: could not install ${need.join(', ')} (${err.message.split('\n')[0]}): FUSE mount tests will skip`);
  }
}

main();
