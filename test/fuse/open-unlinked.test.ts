/**
 * @module test/fuse/open-unlinked
 * A file unlinked while open, through the kernel: the binding keeps it under a hidden name
 * (.fuse_hidden…) until its last close, and the stored file is deleted before the unlink is
 * answered (other faces and a crash right after agree; a store that refuses refuses the unlink).
 * When its directory is renamed, removed or renamed over meanwhile, the open file keeps working
 * (fstat, pread, ftruncate), is let go at its last close (the chunks stored for it are freed), and
 * the stored file does not come back under the new name. Found in a review of the binding (renamed)
 * and left as a limit one stop (removed, renamed over: the binding moves such a file to the root);
 * each test failed before its fix.
 */
import t from 'tap';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fuseSkipReason, sh, shOk, startMountedDaemon, startRemoteMount, tempDir } from './harness.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

t.test('files unlinked while open', { skip }, async (t) => {
  const changes = {
    'left alone (control)': () => '',
    renamed: (dir: string) => `os.rename('${dir}', '${dir}-moved')`,
    removed: (dir: string) => `os.rmdir('${dir}')`,
    'renamed over': (dir: string) => `os.mkdir('${dir}-other'); os.rename('${dir}-other', '${dir}')`,
  };
  for (const [variant, change] of Object.entries(changes)) {
    t.test(`a file unlinked while open is let go at its last close when its directory was ${variant} meanwhile`, async (t) => {
      // Each round: 4 MiB of distinct bytes written to a file in a fresh directory, the file
      // unlinked (hidden: .fuse_hidden…), the directory removed or renamed, then the file closed.
      // The chunks stored for the file while it was written are released when its OpenFile is
      // disposed; when it never is, the store keeps them until the next start.
      const d = await startMountedDaemon(t);
      const du = async () => Number((await shOk(`du -sk ${d.dataDir}`)).split('\t')[0]) / 1024;
      const round = (i: number, change: string) => shOk(`mkdir ${d.mnt}/r${i} && python3 -c "
import os
fd = os.open('${d.mnt}/r${i}/f', os.O_RDWR | os.O_CREAT, 0o644)
for j in range(4): os.write(fd, os.urandom(1 << 20))
os.unlink('${d.mnt}/r${i}/f')
${change}
os.close(fd)
"`);
      // Warm-up rounds where nothing changes the directory: the store's file reaches its size.
      for (let i = 0; i < 3; i++) await round(i, '');
      await new Promise((ok) => setTimeout(ok, 1000));
      const before = await du();
      for (let i = 3; i < 9; i++) {
        await round(i, change(`${d.mnt}/r${i}`));
      }
      await new Promise((ok) => setTimeout(ok, 1000));
      const after = await du();
      t.ok(after - before < 8, `the store grew by ${(after - before).toFixed(1)} MiB over six rounds of 4 MiB each (every chunk should have been released)`);
    });
  }

  for (const [variant, change] of Object.entries(changes)) {
    t.test(`an open file unlinked while open still answers fstat, pread and ftruncate when its directory was ${variant}`, async (t) => {
      // POSIX: an open descriptor works whatever happens to the names. The binding keeps the file
      // under a hidden name in its directory and moves it with the directory; the operations did
      // not move their open file along (#rename skipped orphans), so fstat, ftruncate and reads
      // past the cached size answered ENOENT.
      const d = await startMountedDaemon(t);
      const out = await shOk(`python3 -c "
import os, time
D = '${d.mnt}/dir'
os.mkdir(D)
fd = os.open(D + '/f', os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b'hello')
os.unlink(D + '/f')
${change(`${d.mnt}/dir`)}
time.sleep(0.6)  # the kernel's cached attributes expire
res = []
for name, f in [('fstat', lambda: os.fstat(fd).st_size), ('pread', lambda: os.pread(fd, 100, 0).decode()), ('ftruncate', lambda: os.ftruncate(fd, 2)), ('close', lambda: os.close(fd))]:
    try: res.append('%s=%s' % (name, f()))
    except OSError as e: res.append('%s=%s' % (name, e.strerror))
print(' '.join(res))
"`);
      t.equal(out.trim(), 'fstat=5 pread=hello ftruncate=None close=None');
    });
  }

  t.test('a file unlinked while open stays unlinked when its directory is renamed right after', async (t) => {
    // The operations keep the stored file for 20 ms after the hide (a rename onto it may follow);
    // a rename of its directory meanwhile carries the stored file along, and the deletion then
    // misses it: the file comes back under the new directory, for good (every face sees it).
    const d = await startMountedDaemon(t);
    const out = await shOk(`python3 -c "
import os, time
D = '${d.mnt}/D'
os.mkdir(D)
open(D + '/f', 'w').write('stored')
fd = os.open(D + '/f', os.O_RDONLY)
os.unlink(D + '/f')
os.rename(D, D + 'E')
os.close(fd)
time.sleep(0.6)
print(os.listdir(D + 'E'))
"`);
    t.equal(out.trim(), '[]', 'nothing in the renamed directory');
  });

  for (const remote of [false, true]) {
    t.test(`an unlink of an open file is answered once the stored file is gone: RPC no longer finds it while the file is still open (${remote ? 'a remote mount' : 'the daemon\'s mount'})`, async (t) => {
      // The stored file was deleted 20 ms after the unlink was answered: meanwhile every other face
      // still saw it (found by the tree test on a remote mount, listing right after a close).
      const d = await startMountedDaemon(t);
      const mnt = remote ? (await startRemoteMount(t, d.url)).mnt : d.mnt;
      const out = await shOk(`python3 -c "
import os, json, urllib.request
def stored(p):
    body = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'get_metadata', 'params': {'path': p}}).encode()
    req = urllib.request.Request('${d.url}/api/nfs/get_metadata', data=body, headers={'Content-Type': 'application/json'})
    return json.load(urllib.request.urlopen(req))['result'] is not None
open('${mnt}/gone.txt', 'w').write('stored')
fd = os.open('${mnt}/gone.txt', os.O_RDONLY)
before = stored('/gone.txt')
os.unlink('${mnt}/gone.txt')
print(before, stored('/gone.txt'), os.pread(fd, 100, 0).decode())
os.close(fd)
"`);
      t.equal(out.trim(), 'True False stored', 'stored before the unlink, gone once it returned, still readable through the descriptor');
    });
  }

  t.test('an unlink of an open file survives a kill -9 right after it', async (t) => {
    const d = await startMountedDaemon(t);
    await shOk(`echo stored > '${d.mnt}/kept-open.txt'`);
    await sh(`python3 -c "
import os
fd = os.open('${d.mnt}/kept-open.txt', os.O_RDONLY)
os.unlink('${d.mnt}/kept-open.txt')
os.kill(${d.pid}, 9)
"`);
    await d.kill9();
    await d.start();
    t.equal((await sh(`ls '${d.mnt}/kept-open.txt'`)).code, 2, 'still unlinked after the restart');
    t.equal(await d.rpc('get_metadata', { path: '/kept-open.txt' }), null, 'and not stored');
  });

  t.test('where the store refuses the unlink (a read-only svc mount), unlinking an open file answers EROFS and the file stays', async (t) => {
    // The hide answered success and the deletion failed later, in the log only.
    const d = await startMountedDaemon(t);
    const host = tempDir('svc-fuse-ro-open-');
    t.teardown(() => sh(`rm -rf '${host}'`));
    await mkdir(join(host, 'sub'));
    await shOk(`echo hosted > '${host}/sub/h.txt'`);
    await d.rpc('add_mount', { mount_point: '/ro', backend_type: 'local', backend_config: { data_dir: host }, readonly: true });
    const out = await shOk(`python3 -c "
import os
fd = os.open('${d.mnt}/ro/sub/h.txt', os.O_RDONLY)
try:
    os.unlink('${d.mnt}/ro/sub/h.txt')
    print('unlinked')
except OSError as e:
    print(e.strerror)
print(os.pread(fd, 100, 0).decode().strip())
os.close(fd)
"`);
    t.equal(out.trim(), 'Read-only file system\nhosted');
    t.equal(await shOk(`cat '${d.mnt}/ro/sub/h.txt' '${host}/sub/h.txt'`), 'hosted\nhosted\n', 'still there, in the mount and on the host');
  });

  t.test('a rename over an open file that fails leaves the file where it was, with what is written through it', async (t) => {
    // Found in review: the binding hides the open target before the rename (which then replaces
    // nothing); the rename failed (EROFS: the source is in /.versions) and nothing undid the hide,
    // so the descriptor wrote to an orphan, dropped at its close.
    const d = await startMountedDaemon(t);
    const out = await shOk(`python3 -c "
import os, time
M = '${d.mnt}'
open(M + '/src.txt', 'w').write('source')
open(M + '/target.txt', 'w').write('before-')
fd = os.open(M + '/target.txt', os.O_WRONLY | os.O_APPEND)
try:
    os.rename(M + '/.versions/src.txt/1', M + '/target.txt')
    print('renamed')
except OSError as e:
    print('rename:', e.strerror)
os.write(fd, b'after')
os.close(fd)
print('right after close:', open(M + '/target.txt').read())
time.sleep(1)
print('later:', open(M + '/target.txt').read(), sorted(n for n in os.listdir(M)))
"`);
    t.equal(out.trim(), "rename: Read-only file system\nright after close: before-after\nlater: before-after ['src.txt', 'target.txt']");
    t.equal((await d.rpc('get_metadata', { path: '/target.txt' }))?.size, 'before-after'.length, 'stored');
  });

  t.test('an open file a program renames to a .fuse_hidden… name is kept under it', async (t) => {
    // Found in review: any rename of an open file to such a name was taken for the binding's hide:
    // the file was never stored again and its stored file was deleted.
    const d = await startMountedDaemon(t);
    const out = await shOk(`python3 -c "
import os, time
M = '${d.mnt}'
open(M + '/f', 'w').write('kept')
fd = os.open(M + '/f', os.O_RDWR)
os.rename(M + '/f', M + '/.fuse_hidden_mine')
os.pwrite(fd, b'KEPT', 0)
os.close(fd)
time.sleep(0.6)
print(sorted(os.listdir(M)), open(M + '/.fuse_hidden_mine').read())
"`);
    t.equal(out.trim(), "['.fuse_hidden_mine'] KEPT");
    t.equal((await d.rpc('get_metadata', { path: '/.fuse_hidden_mine' }))?.size, 4, 'stored');
  });
});
