/**
 * @module test/fuse/maps-and-appends
 * Shared memory maps and O_APPEND through the daemon's own mount, as a program on a local disk uses
 * them: a map's pages the kernel still holds when the daemon is stopped, an appending descriptor
 * after another face appended, and a map's pages written back through an appending descriptor.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { eventually, fuseSkipReason, sh, startMountedDaemon } from './harness.js';
import { bytes, unbytes } from '../helpers/daemon.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

t.test('SIGTERM keeps what a live MAP_SHARED mapping wrote but never msync-ed', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const file = join(d.mnt, 'mapped.bin');
  await sh(`printf '%8192s' '' | tr ' ' a > '${file}'`);
  // A program (an editor, a database) that keeps its mapping and has not msync-ed yet: on a local
  // disk its dirty pages reach the file whatever happens to other processes.
  const prog = spawn('python3', ['-c', `
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 8192)
m[0:6] = b'MAPPED'
print('ready', flush=True)
time.sleep(60)
`, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => { prog.kill('SIGKILL'); });
  await new Promise<void>((resolve, reject) => {
    prog.stdout!.on('data', (b: Buffer) => { if (b.toString().includes('ready')) resolve(); });
    prog.once('exit', (code) => reject(new Error(`python exited ${code}`)));
  });
  t.equal(await d.stop(), 0, 'the daemon stops cleanly');
  prog.kill('SIGKILL');
  await d.start();
  const stored = unbytes(await d.rpc('read', { path: '/mapped.bin' })).subarray(0, 6).toString();
  t.equal(stored, 'MAPPED', 'the mapped write was committed before the unmount');
  t.equal((await readFile(file)).subarray(0, 6).toString(), 'MAPPED', 'and the mount shows it after the restart');
});

t.test('an O_APPEND descriptor appends after what another face appended meanwhile', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const file = join(d.mnt, 'app.log');
  await writeFile(file, 'line1\n');
  // A logger keeps its log open for appending; another face (RPC) appends a line meanwhile.
  const log = await open(file, 'a');
  t.teardown(() => log.close().catch(() => undefined));
  await d.rpc('write', { path: '/app.log', content: bytes('line1\nline2 from rpc\n') });
  await new Promise((r) => setTimeout(r, 700));
  await log.write('line3 appended\n');
  await log.close();
  const want = 'line1\nline2 from rpc\nline3 appended\n';
  t.equal(unbytes(await d.rpc('read', { path: '/app.log' })).toString(), want, 'stored: the append went to the end, nothing overwritten');
  t.equal(await readFile(file, 'utf8'), want, 'the mount shows the same');
});

t.test('a whole page appended through O_APPEND after another face appended: the kernel keeps no page of it at the wrong place', { skip }, async (t) => {
  // The kernel copies a write into its page cache where it placed it (its cached size), and keeps
  // a whole page it filled as up to date. The mount stores the append at the end instead, so that
  // page held the append's bytes where the other face's are: a reader with the file open read them
  // there until the file was opened again.
  const d = await startMountedDaemon(t);
  const file = join(d.mnt, 'pages.log');
  const page = (c: string) => Buffer.alloc(4096, c);
  await writeFile(file, page('a'));
  const log = await open(file, 'a');
  const reader = await open(file, 'r');
  t.teardown(async () => {
    await log.close().catch(() => undefined);
    await reader.close().catch(() => undefined);
  });
  await d.rpc('write', { path: '/pages.log', content: bytes(Buffer.concat([page('a'), page('b')])) });
  await new Promise((r) => setTimeout(r, 700));
  await log.write(page('c')); // the kernel places it at 4096 (its cached size), the mount at 8192
  const second = async () => {
    const buf = Buffer.alloc(4096);
    await reader.read(buf, 0, 4096, 4096);
    return buf.toString('latin1', 0, 1) + buf.toString('latin1', 4095);
  };
  t.ok(await eventually(async () => (await second()) === 'bb', 2000, 20), `the second page reads the other face's bytes: ${await second()}`);
  await log.close();
  const stored = unbytes(await d.rpc('read', { path: '/pages.log' }));
  t.same([stored.length, stored[0], stored[4096], stored[8192]], [12288, 0x61, 0x62, 0x63], 'stored: a, b, then the append');
});

t.test('pages of a shared map written back through an O_APPEND handle stay where they were mapped', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const file = join(d.mnt, 'mapped-append.bin');
  const out = await sh(`python3 -c "
import mmap, os, sys
p = sys.argv[1]
open(p, 'wb').write(b'a' * 8192)
fd = os.open(p, os.O_RDWR | os.O_APPEND)
m = mmap.mmap(fd, 8192)
m[100:104] = b'MAP2'
m.flush(); m.close()
os.write(fd, b'TAIL')
os.close(fd)
" '${file}'`);
  t.equal(out.code, 0, out.stderr);
  const stored = unbytes(await d.rpc('read', { path: '/mapped-append.bin' }));
  t.equal(stored.length, 8196, 'only the write(2) appended');
  t.equal(stored.subarray(100, 104).toString(), 'MAP2', 'the mapped page landed at its offset');
  t.equal(stored.subarray(8192).toString(), 'TAIL');
});
