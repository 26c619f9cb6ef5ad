/**
 * bench/folios.c, the folio counter bench/fuse.ts prints after its warm reads: it must count what
 * is cached without reading anything in, and say why when it cannot look (not root).
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, openSync, rmSync, writeSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildFolioCounter } from '../../bench/kernel-floor.js';
import { tempDir } from '../fuse/harness.js';

const dir = tempDir('svc-folios-');
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const built = buildFolioCounter(dir);
const root = process.getuid?.() === 0;

if (!('binary' in built)) {
  t.fail(`the folio counter cannot be built: ${built.reason}`);
} else {
  const run = (path: string) => spawnSync(built.binary, [path], { encoding: 'utf8' });

  t.test('a file written in 4 KiB writes is counted page by page', { skip: !root && 'reading /proc/kpageflags needs root' }, async (t) => {
    const file = join(dir, 'small-writes.bin');
    const fd = openSync(file, 'w');
    const page = Buffer.alloc(4096, 7);
    for (let i = 0; i < 64; i++) writeSync(fd, page);
    closeSync(fd);
    const out = run(file);
    t.equal(out.status, 0, out.stderr);
    t.equal(out.stdout.trim(), 'pages 64 cached 64 folios 64 largest 1');
  });

  t.test('pages not cached are neither counted nor read in', { skip: !root && 'dropping caches and /proc/kpageflags need root' }, async (t) => {
    const file = join(dir, 'dropped.bin');
    writeFileSync(file, Buffer.alloc(64 * 4096, 1));
    spawnSync('sync');
    // POSIX_FADV_DONTNEED through dd's nocache flag: the file's clean pages leave the cache.
    const dd = spawnSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
    t.equal(dd.status, 0, String(dd.stderr));
    const first = run(file);
    t.equal(first.status, 0, first.stderr);
    t.match(first.stdout, /^pages 64 cached (\d+) folios \d+ largest \d+\n$/);
    const cached = Number(/cached (\d+)/.exec(first.stdout)![1]);
    t.ok(cached < 64, `some pages dropped (${cached} of 64 cached)`);
    t.equal(/cached (\d+)/.exec(run(file).stdout)?.[1], String(cached), 'counting read nothing in');
  });

  t.test('without root it says why and exits 2', async (t) => {
    const file = join(dir, 'any.bin');
    writeFileSync(file, Buffer.alloc(4096));
    // As root, the same as nobody (setpriv drops every capability with the ids).
    chmodSync(dir, 0o755);
    chmodSync(file, 0o644);
    const out = root
      ? spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', built.binary, file], { encoding: 'utf8' })
      : run(file);
    t.equal(out.status, 2, out.stderr);
    t.match(out.stderr, /^folios: \/proc\/(kpageflags|self\/pagemap)|needs CAP_SYS_ADMIN/);
  });

  t.test('a missing file is an error, not a count', async (t) => {
    const out = run(join(dir, 'missing.bin'));
    t.equal(out.status, 2);
    t.match(out.stderr, /No such file/);
  });
}
