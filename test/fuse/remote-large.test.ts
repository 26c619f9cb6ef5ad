/**
 * @module test/fuse/remote-large
 * Files larger than one request through a remote mount: the mount commits them as an upload
 * (upload_begin / upload_part per chunk / upload_commit), so a daemon with a 4 MiB --max-body
 * takes a 12 MiB file written with cp, as one version, and the mount reads it back chunk by chunk.
 * The upload methods themselves are also checked over plain RPC (missing parts, abort, unknown id),
 * the in-process mount streams a 40 MiB file through its spool under random writes, and a file
 * open through a remote mount keeps reading and writing after it or its directory is renamed.
 */
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fuseSkipReason, shOk, startMountedDaemon, startRemoteMount, tempDir } from './harness.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

const MiB = 1024 * 1024;

t.test('a remote mount writes and reads files larger than the daemon\'s request limit', { skip }, async (t) => {
  const d = await startMountedDaemon(t, { extraArgs: ['--max-body', '4mb'] });
  const r = await startRemoteMount(t, d.url);
  const local = join(tempDir(), 'big.bin');
  const data = randomBytes(12 * MiB + 12345);
  writeFileSync(local, data);
  const etag = createHash('sha256').update(data).digest('hex');

  await shOk(`cp '${local}' '${r.mnt}/big.bin'`, { timeoutMs: 120_000 });
  const meta = await d.rpc('get_metadata', { path: '/big.bin' });
  t.equal(meta.etag, etag, 'stored content is what cp wrote');
  t.equal(meta.size, data.length);
  t.equal(meta.version, 1, 'one version for the whole cp');
  await shOk(`cmp '${local}' '${r.mnt}/big.bin'`, { timeoutMs: 120_000 });
  await shOk(`cmp '${local}' '${d.mnt}/big.bin'`, { timeoutMs: 120_000 });
  t.pass('the remote and the in-process mount read it back byte for byte');

  // A patch in the middle of the remote copy: one more version, the rest unchanged.
  await shOk(`printf PATCH | dd of='${r.mnt}/big.bin' bs=1 seek=${5 * MiB + 3} conv=notrunc status=none`);
  data.write('PATCH', 5 * MiB + 3);
  const patched = await d.rpc('get_metadata', { path: '/big.bin' });
  t.equal(patched.version, 2);
  t.equal(patched.etag, createHash('sha256').update(data).digest('hex'), 'patched in place');
  t.equal(await d.rpc('list', { path: '/', recursive: false }).then((l: { path: string }[]) => l.length), 1, 'nothing else was stored');

  // Random reads through the remote mount, each page dropped first so the read reaches the daemon
  // (fetched alone, by range, not with its whole chunk): the bytes are the file's.
  writeFileSync(local, data);
  const script = join(tempDir(), 'random-reads.py');
  writeFileSync(script, [
    'import os, random, sys',
    'random.seed(9)',
    'm = os.open(sys.argv[1], os.O_RDONLY); l = os.open(sys.argv[2], os.O_RDONLY); size = os.fstat(l).st_size',
    'for k in range(300):',
    '    off = random.randrange(size); n = random.randrange(1, 20000)',
    '    os.posix_fadvise(m, 0, 0, os.POSIX_FADV_DONTNEED)',
    '    if os.pread(m, n, off) != os.pread(l, n, off): sys.exit(f"differs: {n} bytes at {off}")',
  ].join('\n'));
  await shOk(`python3 '${script}' '${r.mnt}/big.bin' '${local}'`, { timeoutMs: 120_000 });
  t.pass('300 random reads through the remote mount match the file');
});

t.test('upload methods over RPC', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const part = Buffer.alloc(MiB, 7);
  const { upload_id } = await d.rpc('upload_begin', { path: '/up/file.bin' });
  t.type(upload_id, 'string');
  await d.rpc('upload_part', { upload_id, index: 1, content: bytes(Buffer.from('tail')) });
  await t.rejects(d.rpc('upload_commit', { upload_id, size: MiB + 4 }), { code: -32602, message: /has 1 parts; a file of \d+ bytes needs 2/ }, 'a missing part is refused');
  t.same(await d.rpc('exists', { path: '/up/file.bin' }), { exists: false }, 'nothing stored by a refused commit');

  const second = (await d.rpc('upload_begin', { path: '/up/file.bin' })).upload_id;
  await d.rpc('upload_part', { upload_id: second, index: 1, content: bytes(Buffer.from('tail')) });
  await d.rpc('upload_part', { upload_id: second, index: 0, content: bytes(part) });
  await t.rejects(d.rpc('upload_commit', { upload_id: second, size: MiB + 5 }), { code: -32602 }, 'size must match the parts');
  const third = (await d.rpc('upload_begin', { path: '/up/file.bin' })).upload_id;
  await d.rpc('upload_part', { upload_id: third, index: 0, content: bytes(part) });
  await d.rpc('upload_part', { upload_id: third, index: 1, content: bytes(Buffer.from('tail')) });
  const done = await d.rpc('upload_commit', { upload_id: third, size: MiB + 4, mode: 0o600, modified_at: '2020-01-02T03:04:05Z' });
  t.equal(done.version, 1);
  t.equal(done.etag, createHash('sha256').update(Buffer.concat([part, Buffer.from('tail')])).digest('hex'));
  const st = await d.rpc('stat', { path: '/up/file.bin' });
  t.equal(st.mode, 0o600, 'mode from the commit');
  t.equal(st.modified_at, '2020-01-02T03:04:05.000Z', 'modification time from the commit');
  await t.rejects(d.rpc('upload_part', { upload_id: third, index: 2, content: bytes(part) }), { code: -32000 }, 'a committed upload is gone');

  const aborted = (await d.rpc('upload_begin', { path: '/up/other' })).upload_id;
  await d.rpc('upload_abort', { upload_id: aborted });
  await t.rejects(d.rpc('upload_commit', { upload_id: aborted, size: 0 }), { code: -32000 }, 'an aborted upload is gone');
  await t.rejects(d.rpc('upload_part', { upload_id: 'nope', index: 0, content: bytes(part) }), { code: -32000 }, 'unknown upload');
  const fourth = (await d.rpc('upload_begin', { path: '/up/f4' })).upload_id;
  await t.rejects(d.rpc('upload_part', { upload_id: fourth, index: 0, content: bytes(Buffer.alloc(MiB + 1)) }), { code: -32602 }, 'a part over one chunk');
  await t.rejects(d.rpc('upload_begin', { path: '/up' }), { code: -32005, data: { errno: 'EISDIR' } }, 'a directory cannot be uploaded to');
});

/** Random writes, truncations and reads through one open handle, on `path`; prints a digest of what was read. */
const PATCHER = `
import os, random, sys, hashlib
path, seed = sys.argv[1], int(sys.argv[2])
r = random.Random(seed)
MiB = 1 << 20
h = hashlib.sha256()
with open(path, 'r+b', buffering=0) as f:  # unbuffered: fstat sees every write
    for step in range(400):
        op = r.random()
        size = os.fstat(f.fileno()).st_size
        if op < 0.6:
            off = r.randrange(0, 48 * MiB)
            f.seek(off); f.write(r.randbytes(r.choice([1, 4096, 100000, MiB + 7])))
        elif op < 0.7:
            f.truncate(r.randrange(0, 48 * MiB))
        else:
            f.seek(r.randrange(0, max(1, size))); h.update(f.read(r.choice([10, 65536, 2 * MiB])))
    f.flush()
print(h.hexdigest())
`;
import { bytes } from '../helpers/daemon.js';

t.test('the in-process mount streams a large file through its spool, random writes included', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const plain = tempDir();
  const script = join(plain, 'patch.py');
  writeFileSync(script, PATCHER);
  await shOk(`head -c ${40 * MiB} /dev/urandom > '${plain}/big' && cp '${plain}/big' '${d.mnt}/big'`, { timeoutMs: 120_000 });
  for (const seed of [1, 2]) {
    const a = await shOk(`python3 '${script}' '${plain}/big' ${seed}`, { timeoutMs: 120_000 });
    const b = await shOk(`python3 '${script}' '${d.mnt}/big' ${seed}`, { timeoutMs: 120_000 });
    t.equal(b, a, `seed ${seed}: every read through the open handle saw the same bytes`);
    await shOk(`cmp '${plain}/big' '${d.mnt}/big'`, { timeoutMs: 120_000 });
  }
  t.equal((await d.rpc('get_metadata', { path: '/big' })).version, 3, 'one version per close');
  t.same(readdirSync(join(d.dataDir, 'spool')), [], 'spool files leave no name behind');
});

const MOVER = String.raw`
import os, sys
m = sys.argv[1]
MiB = 1 << 20
os.makedirs(m + '/g')
data = bytes(range(256)) * (10 * 1024)  # 2.5 MiB: three chunks
with open(m + '/g/f', 'wb') as f: f.write(data)
with open(m + '/other', 'wb') as f: f.write(b'replaced')
fd = os.open(m + '/g/f', os.O_RDWR)
os.rename(m + '/g', m + '/h')          # its directory moves
os.mkdir(m + '/g')                      # and a new one takes the old name
os.pwrite(fd, b'ONE', 5)               # a write loads the chunk it lands in from the new name
assert os.pread(fd, 4, 2 * MiB) == data[2 * MiB:2 * MiB + 4], 'read of a chunk not loaded yet'
os.rename(m + '/h/f', m + '/other')    # the file itself moves, over a file (its next version there)
os.pwrite(fd, b'TWO', MiB + 1)
os.close(fd)
want = bytearray(data); want[5:8] = b'ONE'; want[MiB + 1:MiB + 4] = b'TWO'
assert open(m + '/other', 'rb').read() == bytes(want), 'content after the moves'
print('ok')
`;

t.test('a file open through a remote mount is read and written at its new name after it or its directory is renamed', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const r = await startRemoteMount(t, d.url);
  const script = join(tempDir(), 'mover.py');
  writeFileSync(script, MOVER);
  // Before: the open file read its stored chunks by the name it was opened with (ENOENT once moved).
  t.equal((await shOk(`python3 '${script}' '${r.mnt}'`)).trim(), 'ok');
  const meta = await d.rpc('get_metadata', { path: '/other' });
  t.equal(meta.version, 3, 'the file it replaced had one version, the rename gave it the second, the close the third');
});
