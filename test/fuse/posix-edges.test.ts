/**
 * @module test/fuse/posix-edges
 * The mount at the edges of POSIX, each against what ext4 (a plain directory) does for the same
 * syscalls: sizes past what the daemon can hold (EFBIG), paths past what the store can key
 * (ENAMETOOLONG at once, never a directory made and then lost, nor a directory renamed so that
 * what is below it cannot be reached), and names ending in whitespace, which are their own names.
 */
import t from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fuseSkipReason, sh, shOk, startMountedDaemon, tempDir } from './harness.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

/** Run a Python probe (`dir` is sys.argv[1], cwd) in a child; its stdout lines. */
async function py(t: { teardown(fn: () => unknown): void }, dir: string, code: string, timeoutS = 20): Promise<{ code: number; lines: string[]; stderr: string }> {
  const tmp = tempDir('svc-audit-b-py-');
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
  const file = join(tmp, 'probe.py');
  writeFileSync(file, `import os, sys, errno, time, ctypes\nos.chdir(sys.argv[1])\n${code}\n`);
  // SIGKILL: a process waiting for a FUSE answer only dies of a fatal signal.
  const r = await sh(`timeout -s KILL ${timeoutS} python3 '${file}' '${dir}'`, { timeoutMs: (timeoutS + 5) * 1000 });
  return { code: r.code, lines: r.stdout.trim().split('\n'), stderr: r.stderr };
}

const ERR = `
def err(f, *a, **k):
    try:
        f(*a, **k); return 'ok'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
`;

t.test('a file size the daemon cannot represent is refused with EFBIG, and the daemon keeps answering', { skip }, async (t) => {
  // ext4: ftruncate(fd, 2**60) and pwrite(fd, b, 2**53) fail with EFBIG (max 16 TiB). The mount
  // took 2**60: the daemon's main thread then loops over 2**40 chunk indexes (OpenFile.allocated,
  // seek, #pieces) and never answers again, the mount and every RPC client with it.
  const d = await startMountedDaemon(t);
  const r = await py(t, d.mnt, `${ERR}
fd = os.open('huge', os.O_CREAT | os.O_RDWR, 0o644)
print(err(os.ftruncate, fd, 2**60), flush=True)
print(err(os.pwrite, fd, b'x', 2**53), flush=True)
print(err(os.posix_fallocate, fd, 2**40, 4096), flush=True)
print(err(os.pwrite, fd, b'x', 2**40 - 1), os.fstat(fd).st_size, flush=True)
os.close(fd)
`, 8);
  t.equal(r.lines[0], 'EFBIG', `ftruncate to 2**60 bytes: EFBIG (got ${JSON.stringify(r.lines[0])}, exit ${r.code})`);
  t.equal(r.lines[1], 'EFBIG', 'a write at 2**53');
  t.equal(r.lines[2], 'EFBIG', 'an allocation past 1 TiB');
  t.equal(r.lines[3], `ok ${2 ** 40}`, 'a write ending at 1 TiB is taken');
  const alive = await Promise.race([
    d.rpc('stat', { path: '/' }).then(() => true, () => true),
    new Promise<boolean>((res) => setTimeout(() => res(false), 3000)),
  ]);
  t.ok(alive, 'the daemon still answers RPC');
  if (!alive) await d.kill9(); // its main thread is stuck: spare the teardown its 15 s SIGTERM wait
});

t.test('a directory made at a path of 2,000–4,096 bytes is kept (or refused at once), not dropped after its mkdir succeeded', { skip }, async (t) => {
  // ext4 takes any path up to PATH_MAX (4096). The mount validated paths against 4096 bytes and
  // answered the mkdir from its queue, but the store's keys must fit LMDB's 1,978 bytes: the
  // batch's put threw ("Key size is larger than the maximum key size"), and the directory the
  // program was told exists was gone (as was a file closed in it). Paths are now refused past
  // 1,900 bytes (core/paths MAX_PATH_BYTES), by every face, when asked.
  const d = await startMountedDaemon(t);
  const r = await py(t, d.mnt, `${ERR}
deep = '/'.join(['d' * 200] * 10)   # 2009 bytes below the mount root
print('mkdir', err(os.makedirs, deep))
time.sleep(1)
print('stat', err(os.stat, deep))
`);
  // Either outcome of a good disk is fine: kept, or refused by the mkdir itself (ENAMETOOLONG).
  t.ok(r.lines[0] === 'mkdir ENAMETOOLONG' || (r.lines[0] === 'mkdir ok' && r.lines[1] === 'stat ok'),
    `mkdir refused at once, or the directory it made still exists a second later (got ${JSON.stringify(r.lines)})`);
  const log = d.output();
  t.notMatch(log, /Key size is larger than the maximum key size/, 'no failed commit in the daemon log');
});

t.test('a name ending in whitespace is its own name, never the name without it', { skip }, async (t) => {
  // On a disk "c " and "c" are two names. The mount must either keep them apart or refuse the
  // one with the space (docs/errors.md: EINVAL), but never act on "c" when asked about "c ".
  const d = await startMountedDaemon(t);
  const out = await shOk(`cd '${d.mnt}' && python3 -c "
import os, json
def do(f):
    try: f(); return 'ok'
    except OSError as e: return e.strerror
res = []
open('keep', 'w').write('precious')
res.append(do(lambda: os.unlink('keep ')))                      # rm 'keep '
res.append(do(lambda: os.unlink('keep\\u00a0')))                # a no-break space
open('b', 'w').write('precious b'); open('new', 'w').write('new')
res.append(do(lambda: os.rename('new', 'b ')))                  # mv new 'b '
os.mkdir('sub'); os.mkdir('sub2'); open('sub2/f', 'w').write('f')
res.append(do(lambda: os.rmdir('sub/\\u2028')))                 # a line separator, inside sub
res.append(do(lambda: os.rename('sub2/\\u00a0', 'moved')))
res.append(do(lambda: open('a ', 'w').write('A')))
print(repr(res))
print(open('keep').read() if os.path.exists('keep') else 'keep is gone')
print(open('b').read() if os.path.exists('b') else 'b is gone')
print(json.dumps(sorted(os.listdir('.'))))
"`);
  const [, keep, b, listing] = out.trim().split('\n');
  t.equal(keep, 'precious', 'unlink of "keep " and "keep\\u00a0" leave "keep" alone');
  t.equal(b, 'precious b', 'a rename onto "b " does not replace "b"');
  const names = JSON.parse(listing!) as string[];
  t.ok(names.includes('sub'), `rmdir of "sub/\\u2028" does not remove sub: ${listing}`);
  t.ok(names.includes('sub2') && !names.includes('moved'), `rename of "sub2/\\u00a0" does not move sub2: ${listing}`);
  t.notOk(names.includes('a'), `creating "a " makes no "a": ${listing}`);
});

t.test('renaming a directory whose deepest paths would pass the path limit keeps the whole tree reachable', { skip }, async (t) => {
  // A tree whose deepest file sits at about 1,700 bytes from the mount's root, then its top
  // directory renamed to a 250-byte name (the file's path: ~1,950 bytes, past the 1,900 the store
  // takes), then moved one level further (~2,150: past LMDB's 1,978-byte keys). On a disk both
  // succeed. The mount may refuse them (ENAMETOOLONG, docs/fuse.md), but every file must stay
  // readable where the rename left it. The first rename succeeded and left the file unreachable
  // (ENAMETOOLONG at every lookup); the second failed with EIO half done: the directories above
  // the file moved, the deepest directory was lost, and the file was left at a path with no parents.
  const d = await startMountedDaemon(t);
  const out = await shOk(`cd '${d.mnt}' && python3 -c "
import os, json
p = 'a'
os.mkdir(p)
for i in range(7):
    p += '/d%d' % i + 'x' * 240
    os.mkdir(p)
open(p + '/f', 'w').write('deep')
rel = p[1:] + '/f'                                  # below the top directory
res = []
def find():
    for top in os.listdir('.'):
        for sub in ('', '/' + 'e' * 200):
            try:
                return open(top + sub + rel).read()
            except OSError: pass
    return None
for to in ('b' * 250, 'c' * 250 + '/' + 'e' * 200):
    frm = 'b' * 250 if os.path.isdir('b' * 250) else 'a'
    if to.startswith('c'): os.mkdir('c' * 250)
    try: os.rename(frm, to); r = 'ok'
    except OSError as e: r = e.strerror
    res.append([r, find()])
print(json.dumps(res))
"`);
  const [[first, afterFirst], [second, afterSecond]] = JSON.parse(out) as [string, string | null][];
  t.ok(first === 'ok' || first === 'File name too long', `first rename: ${first}`);
  t.equal(afterFirst, 'deep', 'the file is readable where the first rename left it');
  t.ok(second === 'ok' || second === 'File name too long', `second rename: ${second}`);
  t.equal(afterSecond, 'deep', 'the file is readable where the second rename left it');
  t.equal((await sh(`grep -c 'Key size is larger' <<'EOF'\n${d.output()}\nEOF`)).stdout.trim(), '0', 'no store error in the log');
});

t.test('chmod, chown and utimes set the ctime to now; ctime is not a copy of the mtime', { skip }, async (t) => {
  // ext4: any inode change (chmod, chown, utimes, write) sets st_ctime to the current time, and
  // nothing lets a program set it. The mount answered ctime = mtime: a chmod or chown left ctime
  // as it was (backup tools that detect changes by ctime — tar --newer, restic, borg — missed it),
  // and `touch -d 2001-01-01` (or cp -p, rsync -a, tar x) moved the ctime back to 2001.
  const d = await startMountedDaemon(t);
  const r = await py(t, d.mnt, `
open('f', 'w').write('x')
os.utime('f', (1000000000, 1000000000))
start = time.time() - 2
print('utimes', os.stat('f').st_ctime >= start)
os.utime('f', (1000000000, 1000000000))
os.chmod('f', 0o600)
print('chmod', os.stat('f').st_ctime >= start)
os.utime('f', (1000000000, 1000000000))
os.chown('f', 1234, 5678)
print('chown', os.stat('f').st_ctime >= start)
`);
  t.same(r.lines, ['utimes True', 'chmod True', 'chown True'], 'ctime is the time of the last change');
});
