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
import { fuseSkipReason, sh, startMountedDaemon } from './harness.js';
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
