/**
 * @module test/fuse/tools
 * Ordinary tools inside a real mount served by `svc serve --mount`: cp -r + diff -r, tar x/c,
 * rsync -a (twice: the second run finds nothing to do), git on a few hundred files, an editor-style
 * save, SQLite (rollback journal, then WAL with two writers), mv of a directory, chmod/touch -d/ln -s
 * seen through stat, copy_file_range, sparse files, fallocate, programs racing over one tree or over
 * a file whose directory is renamed, and the errno of each failure.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuseSkipReason, sh, shOk, startMountedDaemon, tempDir } from './harness.js';
import { fuseSupport } from '../../src/native/fuse.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const skip = fuseSkipReason();
/** A reason to skip when a tool is not installed. */
const missing = (tool: string) => (execFileSync('bash', ['-c', `command -v ${tool} || true`]).toString().trim() ? false : `${tool} is not installed`);
if (skip) console.log(`# ${skip}`);

/** Write a Python script of `lines` into `dir`; the function returned runs it with its arguments (stdout). */
async function pythonScript(dir: string, name: string, lines: string[]): Promise<(...args: string[]) => Promise<string>> {
  const script = join(dir, name);
  await writeFile(script, [...lines, ''].join('\n'));
  return (...args) => shOk(['python3', script, ...args].map((a) => `'${a}'`).join(' '));
}

/** A plain-disk tree of `n` small text files in nested directories. */
async function makeTree(dir: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const sub = join(dir, `d${i % 7}`, `e${i % 3}`);
    await mkdir(sub, { recursive: true });
    await writeFile(join(sub, `f${i}.txt`), `file ${i}\n${'x'.repeat(i * 13 % 900)}\n`);
  }
}

t.test('ordinary tools in the mount', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const m = d.mnt;
  const plain = tempDir('svc-fuse-plain-');
  t.teardown(() => sh(`rm -rf '${plain}'`));

  t.test('cp -r of a source tree, then diff -r against the original', async (t) => {
    await shOk(`cp -r '${ROOT}/src' '${m}/src'`);
    const r = await sh(`diff -r '${ROOT}/src' '${m}/src'`);
    t.equal(r.code, 0, r.stdout + r.stderr);
  });

  t.test('cp of a large file and copy_file_range at odd offsets give what they give on a plain disk', async (t) => {
    // On libfuse 3 the daemon copies (copy_file_range reaches it); on fuse-native the kernel reads
    // and writes. Either way the bytes and the counts must be the disk's.
    const cfr = await pythonScript(plain, 'cfr.py', [
      'import hashlib, os, random, shutil, sys',
      'd = sys.argv[1]',
      'data = random.Random(7).randbytes(5 * 1024 * 1024 + 12345)',
      "open(f'{d}/cfr-src', 'wb').write(data)",
      "open(f'{d}/cfr-dst', 'wb').write(b'\\x01' * 3000000)",
      "src, dst = os.open(f'{d}/cfr-src', os.O_RDONLY), os.open(f'{d}/cfr-dst', os.O_WRONLY)",
      'counts = [os.copy_file_range(src, dst, n, a, b) for n, a, b in',
      '          [(5000, 100, 7), (3 * 1024 * 1024, 1024 * 1024 - 10, 2 * 1024 * 1024 + 3), (10, len(data) - 4, 100), (100, len(data) + 50, 0)]]',
      'os.close(src); os.close(dst)',
      "print(counts, hashlib.sha256(open(f'{d}/cfr-dst', 'rb').read()).hexdigest())",
    ]);
    const onDisk = await cfr(plain);
    t.equal(await cfr(m), onDisk, 'the same counts and bytes');
    await shOk(`cp '${m}/cfr-src' '${m}/cfr-copy'`);
    t.equal((await sh(`cmp '${m}/cfr-src' '${m}/cfr-copy'`)).code, 0, 'cp inside the mount copies every byte');
    t.equal((await shOk(`cmp '${plain}/cfr-src' '${m}/cfr-copy' && echo same`)).trim(), 'same');
  });

  t.test('a sparse file: SEEK_DATA/SEEK_HOLE find its holes (libfuse 3), and cp copies it exactly and sparse', async (t) => {
    const sparse = await pythonScript(plain, 'sparse.py', [
      'import os, sys',
      'M = 1 << 20',
      "p = sys.argv[1] + '/sparse.bin'",
      'fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)',
      "os.write(fd, b'head'); os.pwrite(fd, b'tail', 3 * M + 100); os.ftruncate(fd, 6 * M); os.close(fd)",
      'fd = os.open(p, os.O_RDONLY)',
      'def seek(off, how):',
      '    try: return os.lseek(fd, off, how)',
      "    except OSError as e: return e.strerror",
      'print([seek(0, os.SEEK_HOLE), seek(M, os.SEEK_DATA), seek(3 * M, os.SEEK_HOLE), seek(4 * M, os.SEEK_DATA), seek(6 * M, os.SEEK_HOLE)])',
    ]);
    const seeks = (await sparse(m)).trim();
    const M = 1 << 20;
    const support = fuseSupport();
    if (support.available && support.binding === 'libfuse3') {
      t.equal(seeks, `[${M}, ${3 * M}, ${4 * M}, 'No such device or address', 'No such device or address']`, 'holes at whole chunks of zeros');
    } else {
      t.equal(seeks, `[${6 * M}, ${M}, ${6 * M}, ${4 * M}, 'No such device or address']`, 'fuse-native: no lseek, the kernel sees one extent of data');
    }
    await shOk(`cp '${m}/sparse.bin' '${m}/sparse-copy.bin' && cp '${m}/sparse.bin' '${plain}/sparse-out.bin'`);
    t.equal((await sh(`cmp '${m}/sparse.bin' '${m}/sparse-copy.bin'`)).code, 0, 'cp inside the mount copies every byte');
    t.equal((await sh(`cmp '${m}/sparse.bin' '${plain}/sparse-out.bin'`)).code, 0, 'and out of it');
    const blocks = (await shOk(`stat -c %b '${m}/sparse.bin' '${m}/sparse-copy.bin'`)).trim().split('\n').map(Number);
    t.ok(blocks[1]! <= blocks[0]!, `the copy is as sparse as the original (${blocks[1]} and ${blocks[0]} blocks)`);
    t.ok(blocks[0]! * 512 < 6 * M, `the original reports its holes (${blocks[0]} blocks)`);
  });

  t.test('fallocate grows, punches and zeroes as on a plain disk (libfuse 3)', async (t) => {
    // fallocate(2) through ctypes: mode 0 past the end, KEEP_SIZE, PUNCH_HOLE across chunks,
    // ZERO_RANGE past the end, then posix_fallocate; the size and a digest after each. Last,
    // COLLAPSE_RANGE on a file of its own (ext4 has it; svc answers EOPNOTSUPP).
    const falloc = await pythonScript(plain, 'falloc.py', [
      'import ctypes, errno, hashlib, os, sys',
      "libc = ctypes.CDLL(None, use_errno=True)",
      'libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]',
      'M = 1 << 20',
      "p = sys.argv[1] + '/falloc.bin'",
      'fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)',
      "os.write(fd, bytes(range(256)) * (12 * 1024 + 7))",
      'out = []',
      'def falloc(mode, off, n):',
      '    r = libc.fallocate(fd, mode, off, n)',
      '    err = errno.errorcode[ctypes.get_errno()] if r else "ok"',
      "    out.append([mode, err, os.fstat(fd).st_size, hashlib.sha256(os.pread(fd, 1 << 24, 0)).hexdigest()[:16]])",
      'falloc(0, 2 * M, 3 * M)',
      'falloc(1, 0, 9 * M)',
      'falloc(3, 1000, 2 * M + 5)',
      'falloc(0x10, 4 * M + 17, 2 * M)',
      'falloc(0x11, 100, 7 * M)',
      'os.posix_fallocate(fd, 0, 8 * M + 3)',
      "out.append(['posix', os.fstat(fd).st_size])",
      'os.close(fd)',
      "out.append(hashlib.sha256(open(p, 'rb').read()).hexdigest())",
      'print(out)',
      "fd = os.open(p + '.2', os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)",
      'os.write(fd, bytes(3 * 4096))',
      'r = libc.fallocate(fd, 0x8, 0, 4096)',
      'print(errno.errorcode[ctypes.get_errno()] if r else "ok")',
    ]);
    const onDisk = await falloc(plain);
    const inMount = await falloc(m);
    const [modes, collapse] = inMount.trim().split('\n');
    const support = fuseSupport();
    if (support.available && support.binding === 'libfuse3') {
      t.equal(modes, onDisk.trim().split('\n')[0], 'the disk\'s sizes and bytes after each mode');
      t.equal(collapse, 'ENOTSUP', 'COLLAPSE_RANGE: EOPNOTSUPP (Python names it ENOTSUP)');
    } else {
      t.match(modes, /^\[\[0, 'ENOTSUP', /, 'fuse-native: fallocate(2) is not offered');
    }
    const stored = await d.rpc('read', { path: '/falloc.bin' });
    const digest = createHash('sha256').update(Buffer.from(stored.data, 'base64')).digest('hex');
    t.ok(modes!.endsWith(`'${digest}']`), 'the store holds the bytes the mount shows');
  });

  t.test('tar x into the mount and tar c out of it', async (t) => {
    await shOk(`tar cf '${plain}/in.tar' -C '${ROOT}' src`);
    await shOk(`mkdir '${m}/tarx' && tar xf '${plain}/in.tar' -C '${m}/tarx'`);
    t.equal((await sh(`diff -r '${ROOT}/src' '${m}/tarx/src'`)).code, 0, 'extracted tree equals the original');
    const c = await sh(`tar cf '${plain}/out.tar' -C '${m}/tarx' src`);
    t.equal(c.code, 0, `tar c exits 0 (no "file changed as we read it"): ${c.stderr}`);
    await shOk(`mkdir '${plain}/back' && tar xf '${plain}/out.tar' -C '${plain}/back'`);
    t.equal((await sh(`diff -r '${ROOT}/src' '${plain}/back/src'`)).code, 0, 'the archive made from the mount round-trips');
  });

  t.test('rsync -a copies a tree with its modes and times; a second run transfers nothing', { skip: missing('rsync') }, async (t) => {
    await shOk(`rsync -a '${ROOT}/src/' '${m}/rs/'`);
    t.equal((await sh(`diff -r '${ROOT}/src' '${m}/rs'`)).code, 0);
    const again = await shOk(`rsync -ai '${ROOT}/src/' '${m}/rs/'`);
    t.equal(again.trim(), '', 'nothing left to transfer');
    const [a, b] = (await shOk(`stat -c '%Y %a' '${ROOT}/src/daemon.ts' '${m}/rs/daemon.ts'`)).trim().split('\n');
    t.equal(b, a, 'modification time and mode preserved');
  });

  t.test('git init/add/commit/log/status on a few hundred files', { skip: missing('git') }, async (t) => {
    await makeTree(join(plain, 'repo'), 300);
    await shOk(`cp -r '${plain}/repo' '${m}/repo'`);
    const git = 'git -c user.email=t@example.com -c user.name=t -c init.defaultBranch=main';
    await shOk(`${git} init -q && ${git} add -A && ${git} commit -qm first`, { cwd: `${m}/repo`, timeoutMs: 120_000 });
    t.equal((await shOk('git status --porcelain', { cwd: `${m}/repo` })).trim(), '', 'clean after commit');
    t.match(await shOk('git log --oneline', { cwd: `${m}/repo` }), /first/);
    await shOk('echo change >> d1/e1/f1.txt && rm d2/e2/f2.txt && echo new > added.txt', { cwd: `${m}/repo` });
    const status = (await shOk('git status --porcelain', { cwd: `${m}/repo` })).replace(/\n$/, '').split('\n').sort();
    t.same(status, ['?? added.txt', ' D d2/e2/f2.txt', ' M d1/e1/f1.txt'].sort());
    await shOk(`${git} add -A && ${git} commit -qm second && git fsck --no-progress`, { cwd: `${m}/repo` });
    t.equal((await shOk('git log --oneline | wc -l', { cwd: `${m}/repo` })).trim(), '2');
  });

  t.test('editor-style save: temp file, fsync, rename over the original keeps its history', async (t) => {
    await shOk(`echo one > '${m}/doc.txt'`);
    await shOk(`cd '${m}' && printf 'two\\n' > .doc.txt.swp && python3 -c "import os; fd=os.open('.doc.txt.swp', os.O_RDWR); os.fsync(fd); os.close(fd)" && mv .doc.txt.swp doc.txt`);
    t.equal(await shOk(`cat '${m}/doc.txt'`), 'two\n');
    t.equal((await shOk(`ls -a '${m}'`)).includes('.doc.txt.swp'), false, 'temp file gone');
    const versions = await d.rpc('list_versions', { path: '/doc.txt' });
    t.same(versions.map((v: { version: number }) => v.version), [2, 1], 'the original history continues');
    t.equal(await shOk(`cat '${m}/.versions/doc.txt/1'`), 'one\n');
  });

  const noSqlite = execFileSync('bash', ['-c', 'python3 -c "import sqlite3" 2>/dev/null && echo ok || true']).toString().trim()
    ? false : "python3's sqlite3 module is not installed";
  t.test('SQLite: a rollback-journal database, then WAL with two writers at once', { skip: noSqlite }, async (t) => {
    const py = (code: string) => shOk(`cd '${m}' && python3 -c '${code}'`);
    await py(`
import sqlite3
db = sqlite3.connect("app.db")
db.execute("create table t(id integer primary key, body text)")
for batch in range(20):
    with db:
        db.executemany("insert into t(body) values (?)", [("row %d %s" % (batch * 100 + i, "x" * (i * 37 % 500)),) for i in range(100)])
db.close()`);
    t.equal(await py('import sqlite3; print(sqlite3.connect("app.db").execute("pragma integrity_check").fetchone()[0])'), 'ok\n');
    // WAL: the -wal and -shm files are written through shared memory maps and fcntl locks.
    await py('import sqlite3; print(sqlite3.connect("app.db").execute("pragma journal_mode=wal").fetchone()[0])');
    const writer = (tag: string) => py(`
import sqlite3
db = sqlite3.connect("app.db", timeout=30)
for i in range(100):
    with db:
        db.execute("insert into t(body) values (?)", ("${tag} %d" % i,))
db.close()`);
    await Promise.all([writer('a'), writer('b')]);
    t.equal(await py(`
import sqlite3
db = sqlite3.connect("app.db")
print(db.execute("pragma integrity_check").fetchone()[0], db.execute("select count(*) from t").fetchone()[0],
      db.execute("select count(*) from t where body like ? or body like ?", ("a %", "b %")).fetchone()[0])
db.execute("pragma wal_checkpoint(truncate)")
db.close()`), 'ok 2200 200\n', 'both writers\' rows, none lost');
    const meta = await d.rpc('get_metadata', { path: '/app.db' });
    t.equal(meta.etag, (await shOk(`sha256sum '${m}/app.db'`)).split(' ')[0], 'RPC holds the bytes the mount shows');
  });

  t.test('mv of a directory moves everything below it', async (t) => {
    await shOk(`mkdir -p '${m}/mvsrc/a/b' && echo deep > '${m}/mvsrc/a/b/c.txt' && mv '${m}/mvsrc' '${m}/mvdst'`);
    t.equal(await shOk(`cat '${m}/mvdst/a/b/c.txt'`), 'deep\n');
    t.equal((await sh(`test -e '${m}/mvsrc'`)).code, 1, 'the source is gone');
    t.equal((await d.rpc('exists', { path: '/mvdst/a/b/c.txt' })).exists, true, 'RPC sees the move');
  });

  t.test('a directory renamed while a file in it is open for writing: the file keeps its number and lands at the new path', async (t) => {
    await shOk(`mkdir -p '${m}/openmv/sub'`);
    const out = await shOk(`cd '${m}' && python3 -c "
import os
f = open('openmv/sub/f.txt', 'w'); f.write('before '); f.flush()
ino = os.stat('openmv/sub/f.txt').st_ino
os.rename('openmv', 'openmv2')
f.write('after'); f.close()
print(ino == os.stat('openmv2/sub/f.txt').st_ino, os.path.exists('openmv'))"`);
    t.equal(out, 'True False\n', 'same inode at the new path; nothing left at the old one');
    t.equal(await shOk(`cat '${m}/openmv2/sub/f.txt'`), 'before after');
    const file = await d.rpc('read', { path: '/openmv2/sub/f.txt' });
    t.equal(Buffer.from(file.data, 'base64').toString(), 'before after', 'RPC reads the whole file at the new path');
    t.equal((await d.rpc('exists', { path: '/openmv/sub/f.txt' })).exists, false);
  });

  t.test('programs renaming, unlinking and reading one tree at once get only the errors a disk gives', async (t) => {
    // Four processes race over a dozen names and three directories: files written and left open,
    // renamed over each other and into directories, unlinked, directories renamed over each other,
    // the tree walked and read. Races give ENOENT, EEXIST and ENOTEMPTY; nothing else may come out.
    await shOk(`mkdir '${m}/race'`);
    const race = await pythonScript(plain, 'race.py', [
      'import os, random, sys, errno',
      'random.seed(int(sys.argv[2]))',
      "root = sys.argv[1] + '/race'",
      "names = [root + '/n%d' % i for i in range(12)]",
      "dirs = [root + '/d%d' % i for i in range(3)]",
      'held, errs = [], {}',
      'for step in range(1500):',
      '    op = random.random()',
      '    try:',
      '        if op < 0.25:',
      "            f = open(random.choice(names), 'ab'); f.write(os.urandom(random.randint(1, 5000))); held.append(f)",
      '        elif op < 0.4 and held: held.pop(random.randrange(len(held))).close()',
      '        elif op < 0.55: os.rename(random.choice(names), random.choice(names))',
      '        elif op < 0.65: os.unlink(random.choice(names))',
      '        elif op < 0.72: os.mkdir(random.choice(dirs))',
      "        elif op < 0.78: os.rename(random.choice(names), random.choice(dirs) + '/x%d' % random.randint(0, 3))",
      '        elif op < 0.84: os.rename(random.choice(dirs), random.choice(dirs))',
      '        elif op < 0.9:',
      '            for d, _, fs in os.walk(root):',
      '                for x in fs:',
      "                    try: open(os.path.join(d, x), 'rb').read()",
      '                    except FileNotFoundError: pass',
      '        else:',
      "            with open(random.choice(names), 'rb') as f: f.read()",
      '    except OSError as e:',
      '        name = errno.errorcode.get(e.errno, str(e.errno))',
      '        errs[name] = errs.get(name, 0) + 1',
      'for f in held: f.close()',
      "print(' '.join(sorted(errs)))",
    ]);
    const runs = await Promise.all(['1', '2', '3', '4'].map((seed) => race(m, seed)));
    const seen = new Set(runs.flatMap((r) => r.trim().split(' ').filter(Boolean)));
    t.same([...seen].filter((e) => !['ENOENT', 'EEXIST', 'ENOTEMPTY'].includes(e)), [], `errors seen: ${[...seen].join(', ')}`);
    t.equal((await d.rpc('exists', { path: '/race' })).exists, true, 'the daemon still answers');
  });

  t.test('a file open in a directory being renamed back and forth is stat-ed and committed where it is', async (t) => {
    // One process renames ra to rb and back; one fstat()s a descriptor open on ra/f; one writes
    // through it and flushes (close of a dup: a commit). On a disk none of them fails, and the last
    // write is in the file wherever its directory is. Before requests about the renamed subtree
    // waited for the rename, fstat failed with ENOENT, and a flush recreated ra while it was rb.
    await shOk(`mkdir -p '${m}/dirrace/ra' && printf start > '${m}/dirrace/ra/f'`);
    const dirRace = await pythonScript(plain, 'dirrace.py', [
      'import os, sys, json, time, multiprocessing as mp',
      "root = sys.argv[1] + '/dirrace'",
      "a, b = root + '/ra', root + '/rb'",
      "fd = os.open(a + '/f', os.O_RDWR)",
      'def loop(name, stop, q, step):',
      '    n, errs = 0, {}',
      '    while not stop.is_set():',
      '        try: step(n + 1); n += 1',
      '        except OSError as e: errs[e.strerror] = errs.get(e.strerror, 0) + 1',
      '    q.put((name, n, errs))',
      'def rename(n): os.rename(a, b); os.rename(b, a)',
      'def fstat(n): os.fstat(fd)',
      "def write(n): os.pwrite(fd, b'%012d' % n, 0); os.close(os.dup(fd))",
      'stop, q = mp.Event(), mp.Queue()',
      "ps = [mp.Process(target=loop, args=(name, stop, q, f)) for name, f in (('rename', rename), ('fstat', fstat), ('write', write))]",
      'for p in ps: p.start()',
      'time.sleep(1.5); stop.set()',
      'out = {name: [n, errs] for name, n, errs in (q.get() for _ in ps)}',
      'for p in ps: p.join()',
      'os.close(fd)',
      "out['dirs'] = sorted(os.listdir(root))",
      "out['content'] = open(a + '/f').read() if os.path.exists(a) else None",
      'print(json.dumps(out))',
    ]);
    const out = JSON.parse(await dirRace(m)) as Record<string, [number, Record<string, number>]> & { dirs: string[]; content: string | null };
    for (const name of ['rename', 'fstat', 'write']) {
      t.ok(out[name]![0] > 0, `${name} ran (${out[name]![0]} times)`);
      t.same(out[name]![1], {}, `${name} never failed`);
    }
    t.same(out.dirs, ['ra'], 'the directory is where the last rename left it, and only there');
    t.equal(out.content, `${out.write![0]}`.padStart(12, '0'), 'the file holds the last write');
    const stored = await d.rpc('read', { path: '/dirrace/ra/f' });
    t.equal(Buffer.from(stored.data, 'base64').toString(), out.content, 'and so does the store');
  });

  t.test('chmod, chown, touch -d and ln -s are visible through stat', async (t) => {
    await shOk(`cd '${m}' && echo x > attrs.txt && chmod 640 attrs.txt && chown 1234:5678 attrs.txt && touch -d '2001-02-03 04:05:06 UTC' attrs.txt && ln -s attrs.txt link`);
    t.equal((await shOk(`stat -c '%a %u %g %Y' '${m}/attrs.txt'`)).trim(), `640 1234 5678 ${Date.UTC(2001, 1, 3, 4, 5, 6) / 1000}`);
    t.equal((await shOk(`stat -c '%F' '${m}/link'`)).trim(), 'symbolic link');
    t.equal((await shOk(`readlink '${m}/link'`)).trim(), 'attrs.txt');
    t.equal(await shOk(`cat '${m}/link'`), 'x\n', 'the link resolves');
    await shOk(`mkdir -m 700 '${m}/private'`);
    t.equal((await shOk(`stat -c '%a' '${m}/private'`)).trim(), '700', 'mkdir mode');
    await shOk(`echo y > '${m}/attrs.txt'`);
    t.equal((await shOk(`stat -c '%a %u' '${m}/attrs.txt'`)).trim(), '640 1234', 'a new version keeps the attributes');
  });

  t.test('random-offset writes, sparse extension and truncation', async (t) => {
    await shOk(`cd '${m}' && dd if=/dev/urandom of='${plain}/r.bin' bs=1k count=2500 status=none && cp '${plain}/r.bin' r.bin`
      + ` && printf 'PATCH' | dd of=r.bin bs=1 seek=1048570 conv=notrunc status=none && printf 'PATCH' | dd of='${plain}/r.bin' bs=1 seek=1048570 conv=notrunc status=none`
      + ` && truncate -s 3000000 r.bin && truncate -s 3000000 '${plain}/r.bin' && truncate -s 1048577 r.bin && truncate -s 1048577 '${plain}/r.bin'`
      + ` && truncate -s 2200000 r.bin && truncate -s 2200000 '${plain}/r.bin'`);
    t.equal((await sh(`cmp '${m}/r.bin' '${plain}/r.bin'`)).code, 0);
    const meta = await d.rpc('get_metadata', { path: '/r.bin' });
    t.equal(meta.size, 2200000, 'size from the record');
  });

  t.test('du counts a sparse file\'s holes as free, as on the disk', async (t) => {
    // 64 MiB of holes and 1 MiB of data at the end; the holes are stored as one chunk of zeros.
    await shOk(`cd '${m}' && truncate -s 64M holes.bin && dd if=/dev/urandom of=holes.bin bs=1M seek=64 count=1 conv=notrunc status=none`);
    const [size, blocks] = (await shOk(`stat -c '%s %b' '${m}/holes.bin'`)).trim().split(' ').map(Number);
    t.equal(size, 65 * 1024 * 1024);
    t.equal(blocks, (1024 * 1024) / 512, 'st_blocks counts the 1 MiB of data only');
    t.ok(Number((await shOk(`du -k '${m}/holes.bin'`)).split('\t')[0]) <= 1024, 'du reports about 1 MiB');
    t.equal((await shOk(`stat -c %b '${m}/r.bin'`)).trim(), String(Math.ceil(2200000 / 512)), 'a file without holes: its size');
  });

  t.test('a file grown sparse while open counts its holes as free before it is closed', async (t) => {
    const blocks = await shOk(`cd '${m}' && python3 -c "
import os
f = open('open-holes.bin', 'wb')
f.truncate(64 << 20); f.seek(64 << 20); f.write(b'x' * (1 << 20)); f.flush()
print(os.stat('open-holes.bin').st_blocks)
f.close()
print(os.stat('open-holes.bin').st_blocks)"`);
    t.same(blocks.trim().split('\n').map(Number), [2048, 2048], 'open and closed alike: the 1 MiB of data');
  });

  t.test('failures carry the right errno', async (t) => {
    const err = async (cmd: string) => (await sh(`cd '${m}' && ${cmd}`)).stderr;
    await shOk(`cd '${m}' && mkdir -p full/sub && echo f > file`);
    t.match(await err('cat missing'), /No such file or directory/, 'ENOENT');
    t.match(await err('mkdir full'), /File exists/, 'EEXIST');
    t.match(await err('rmdir full'), /Directory not empty/, 'ENOTEMPTY');
    t.match(await err('cat full'), /Is a directory/, 'EISDIR');
    t.match(await err('ls file/x'), /Not a directory/, 'ENOTDIR');
    t.match(await err(`touch ${'n'.repeat(256)}`), /File name too long/, 'ENAMETOOLONG');
    t.match(await err('ln file hard'), /Operation not permitted/, 'EPERM for hard links');
    t.match(await err('mkfifo fifo'), /Operation not permitted/, 'EPERM for a FIFO');
    t.match(await err(`python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('sock')"`), /Operation not permitted/,
      'EPERM for a socket');
    t.match(await err(`python3 -c "import os; os.mknod('reg'); print(os.stat('reg').st_size)"`), /^$/, 'mknod of a regular file makes one');
    t.match(await err(`python3 -c "import os; os.readlink('file')"`), /Invalid argument/, 'EINVAL: readlink of a regular file');
    t.match(await err(`python3 -c "import os; os.getxattr('file', 'user.x')"`), /Operation not supported/,
      'no extended attributes: ENOTSUP, not EIO');
    t.match(await err('echo x > .versions/file/1'), /Read-only file system/, 'EROFS in /.versions');
    const rename = (from: string, to: string) => err(`python3 -c "import os; os.rename('${from}', '${to}')"`);
    t.match(await rename('file', 'full'), /Is a directory/, 'EISDIR: file over directory');
    t.match(await rename('full', 'file'), /Not a directory/, 'ENOTDIR: directory over file');
    await shOk(`mkdir '${m}/other' && echo o > '${m}/other/o'`);
    t.match(await rename('full', 'other'), /Directory not empty/, 'ENOTEMPTY: directory over a non-empty one');
    t.match(await err('runuser -u nobody -- cat file'), /Permission denied/, 'EACCES for a caller the mount does not admit');
  });
});
