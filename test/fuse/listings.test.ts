/**
 * @module test/fuse/listings
 * Listings of large directories through the daemon's own mount while files in them change (found
 * by an audit of scale and long sessions, whose other checks found nothing to fix).
 */
import t from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fuseSkipReason, sh, startMountedDaemon, tempDir } from './harness.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

/**
 * A listing of a large directory is read in several getdents calls; the daemon's binding takes the
 * listing (with each entry's attributes, READDIRPLUS) at the first and answers the following ones
 * from it. A file rewritten (or replaced by a rename) between two of those calls then got the
 * listing's old attributes pushed into the kernel with the later batch: `stat` right after the
 * listing showed the old size, and `read` returned only that many bytes of the new content — a
 * truncated file — until the attribute cache expired. ext4 shows the new file at once.
 */
t.test('a listing under way does not push stale attributes of a file changed since it began', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const tmp = tempDir('svc-listings-');
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
  const probe = join(tmp, 'probe.py');
  writeFileSync(probe, `
import os, sys, time
d, mode = sys.argv[1], sys.argv[2]
os.makedirs(d)
for i in range(3000):
    open(f'{d}/f{i:04d}' + 'n' * 100, 'w').write('.')
open(f'{d}/zz', 'w').write('x' * 10)
time.sleep(1)                       # the kernel's cached attributes of zz expire
it = os.scandir(d); next(it)        # the listing begins (first getdents)
if mode == 'write':
    open(f'{d}/zz', 'w').write('y' * 100000)
else:
    open(f'{d}/new', 'w').write('y' * 100000); os.rename(f'{d}/new', f'{d}/zz')
listed = 1 + sum(1 for _ in it)     # the rest of the listing (later getdents)
print(listed, os.stat(f'{d}/zz').st_size, len(open(f'{d}/zz').read()))
`);
  for (const mode of ['write', 'rename']) {
    const r = await sh(`timeout -s KILL 60 python3 '${probe}' '${join(d.mnt, mode)}' ${mode}`, { timeoutMs: 65_000 });
    t.equal(r.code, 0, `${mode}: probe ran (${r.stderr})`);
    const [listed, size, read] = r.stdout.trim().split(' ').map(Number);
    t.equal(listed, 3001, `${mode}: every entry listed`);
    t.equal(size, 100000, `${mode}: stat after the listing shows the new size`);
    t.equal(read, 100000, `${mode}: read after the listing returns the whole new content`);
  }
});
