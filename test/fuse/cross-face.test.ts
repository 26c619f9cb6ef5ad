/**
 * @module test/fuse/cross-face
 * The mount and the other faces are one file system: a file written by RPC is readable in the
 * mount within a second (and the other way round) with versions and etags agreeing, changes made
 * in the mount reach WebSocket watchers, `/.versions/` shows the history without appearing in RPC
 * list/glob, a read-only svc mount answers EROFS, and a remote mount (`svc mount --remote-url`)
 * sees the same tree.
 */
import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import WebSocket from 'ws';
import { eventually, fuseSkipReason, sh, shOk, startMountedDaemon, startRemoteMount, tempDir } from './harness.js';
import { bytes } from '../helpers/daemon.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const sha256File = async (path: string) => sha256(await readFile(path));

t.test('the mount and RPC see one file tree', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const m = d.mnt;

  t.test('a file written by RPC is readable in the mount; a rewrite shows up within a second', async (t) => {
    await d.rpc('write', { path: '/x/from-rpc.txt', content: bytes('first\n') });
    t.equal(await shOk(`cat '${m}/x/from-rpc.txt'`), 'first\n');
    await d.rpc('write', { path: '/x/from-rpc.txt', content: bytes('second, longer\n') });
    // From the answer on (the change is committed then; a durable write's own wait for the disk
    // is not the mount's to count).
    const started = Date.now();
    const seen = await eventually(async () => (await shOk(`cat '${m}/x/from-rpc.txt'`)) === 'second, longer\n', 3000, 20);
    t.ok(seen, 'the new content is read through the mount');
    t.ok(Date.now() - started < 1000, `within a second (${Date.now() - started} ms)`);
    await d.rpc('delete', { path: '/x/from-rpc.txt' });
    t.ok(await eventually(async () => (await sh(`test -e '${m}/x/from-rpc.txt'`)).code === 1, 1000, 20), 'a delete too');
  });

  t.test('a name looked up in vain, then created by RPC, shows up within a second (the kernel\'s negative entry is dropped)', async (t) => {
    t.equal((await sh(`cat '${m}/x/later.txt'`)).code, 1, 'absent at first (the kernel may now cache that)');
    await d.rpc('write', { path: '/x/later.txt', content: bytes('made by rpc\n') });
    const started = Date.now();
    const seen = await eventually(async () => (await sh(`cat '${m}/x/later.txt'`)).stdout === 'made by rpc\n', 3000, 20);
    t.ok(seen, 'read through the mount');
    t.ok(Date.now() - started < 1000, `within a second (${Date.now() - started} ms)`);
  });

  t.test('a program keeping a file open reads another face\'s change without reopening it', async (t) => {
    await keptOpenSeesChanges(t, d, m, '/kept.txt');
  });

  t.test('a file saved in the mount and rewritten by RPC a moment later: the open descriptor reads the rewrite', async (t) => {
    // As when an agent reformats a file right after a person saved it: the RPC write is not the mount's own.
    await shOk(`echo 'saved in the mount' > '${m}/saved.txt'`);
    const handle = await open(`${m}/saved.txt`, 'r');
    try {
      const read = () => readStart(handle);
      t.equal(await read(), 'saved in the mount\n');
      await d.rpc('write', { path: '/saved.txt', content: bytes('rewritten by rpc!!\n') }); // same size
      t.ok(await eventually(async () => (await read()) === 'rewritten by rpc!!\n', 1500, 10), 'the rewrite is read through the same descriptor');
    } finally {
      await handle.close();
    }
  });

  t.test('a large file written in the mount and rewritten by RPC: a later open reads the rewrite, not the pages the mount wrote', async (t) => {
    // The mount keeps a file's pages across opens after its own writes (they are written through);
    // another face's rewrite must still drop them.
    const mine = Buffer.alloc(4 << 20, 'm');
    await writeFile(`${m}/big-saved.bin`, mine);
    // Not read in the mount before the rewrite: its pages are still the ones the write left.
    t.equal((await d.rpc('get_metadata', { path: '/big-saved.bin' })).etag, sha256(mine), 'stored as written');
    const theirs = Buffer.alloc(4 << 20, 'r');
    await d.rpc('write', { path: '/big-saved.bin', content: bytes(theirs) }); // same size
    t.ok(await eventually(async () => (await sha256File(`${m}/big-saved.bin`)) === sha256(theirs), 1500, 20), 'a later open reads the rewrite');
  });

  t.test('rewrites by RPC while the mount reads, stats and writes beside them: nothing stalls, the last one is read', async (t) => {
    // The notifications wait for requests in flight on the same inode and directory; the mount
    // must keep answering them (a stall here would hang the mount beyond kill -9).
    const version = (i: number) => {
      const data = Buffer.alloc(300_000, i % 251); // a large file: committed at close, not queued
      data.write(`v${String(i).padStart(3, '0')}`);
      return data;
    };
    await d.rpc('write', { path: '/busy/hot.bin', content: bytes(version(0)) });
    const handle = await open(`${m}/busy/hot.bin`, 'r');
    let stop = false;
    let reads = 0;
    let stats = 0;
    let own = 0;
    const buf = Buffer.alloc(300_000);
    const loops = [
      (async () => { while (!stop) { await handle.read(buf, 0, buf.length, 0); reads++; } })(),
      (async () => {
        while (!stop) {
          await stat(`${m}/busy/hot.bin`);
          await readFile(`${m}/busy/hot.bin`);
          stats++;
        }
      })(),
      (async () => { while (!stop) await writeFile(`${m}/busy/own${own++ % 10}.txt`, `own ${own}`); })(),
    ];
    try {
      for (let i = 1; i <= 100; i++) {
        await d.rpc('write', { path: '/busy/hot.bin', content: bytes(version(i)) });
        if (i % 20 === 0) await d.rpc('write', { path: `/busy/new${i}.txt`, content: bytes('n') });
      }
      t.ok(await eventually(async () => (await readStart(handle, 4)) === 'v100', 3000, 10), 'the open descriptor reads the last version');
    } finally {
      stop = true;
      await Promise.all(loops);
      await handle.close();
    }
    t.ok(reads > 0 && stats > 0 && own > 0, `reads ${reads}, stat and cat ${stats}, own writes ${own} meanwhile`);
    t.equal((await shOk(`ls '${m}/busy' | grep -c new`)).trim(), '5', 'names created by RPC are listed');
  });

  t.test('a file written in the mount is read by RPC with the same etag and one version per close', async (t) => {
    await shOk(`echo one > '${m}/doc.md' && echo two > '${m}/doc.md' && printf three >> '${m}/doc.md'`);
    const meta = await d.rpc('get_metadata', { path: '/doc.md' });
    t.equal(meta.etag, sha256('two\nthree'), 'etag = SHA-256 of the content');
    t.equal(meta.version, 3, 'three closes, three versions');
    const read = await d.rpc('read', { path: '/doc.md' });
    t.equal(Buffer.from(read.data, 'base64').toString(), 'two\nthree');
    await shOk(`python3 -c "
f = open('${m}/big.bin', 'wb')
for i in range(40): f.write(bytes([i]) * 131072)
f.close()"`);
    const versions = await d.rpc('list_versions', { path: '/big.bin' });
    t.equal(versions.length, 1, '40 write calls through one handle make one version');
    t.equal(versions[0].size, 40 * 131072);
  });

  t.test('RPC reads what a program has just closed in the mount, before its batch would commit', async (t) => {
    // A small file's close is answered once journaled and committed within ~10 ms; an RPC call
    // waits for what the mount has answered, so it never reads the previous content.
    await mkdir(join(m, 'fresh'));
    for (let i = 0; i < 20; i++) {
      await writeFile(join(m, 'fresh', 'f.txt'), `round ${i}\n`);
      const read = await d.rpc('read', { path: '/fresh/f.txt' });
      if (Buffer.from(read.data, 'base64').toString() !== `round ${i}\n`) {
        t.fail(`round ${i}: RPC read ${JSON.stringify(Buffer.from(read.data, 'base64').toString())}`);
        return;
      }
      const listed = (await d.rpc('list', { path: '/fresh', details: true })) as { path: string; size: number }[];
      t.equal(listed.find((e) => e.path === '/fresh/f.txt')?.size, `round ${i}\n`.length, `round ${i}: list shows the new size`);
    }
    t.equal((await d.rpc('get_metadata', { path: '/fresh/f.txt' })).version, 20, 'one version per close');
  });

  t.test('/.versions shows every version, read-only, and stays out of RPC list and glob', async (t) => {
    t.equal((await shOk(`ls '${m}/.versions/doc.md'`)).trim().split('\n').join(' '), '1 2 3');
    for (const v of [1, 2, 3]) {
      const rpc = Buffer.from((await d.rpc('get_version', { path: '/doc.md', version: v })).data, 'base64').toString();
      t.equal(await shOk(`cat '${m}/.versions/doc.md/${v}'`), rpc, `version ${v}`);
    }
    t.equal((await shOk(`stat -c '%a %s' '${m}/.versions/doc.md/1'`)).trim(), '444 4');
    t.match((await sh(`rm '${m}/.versions/doc.md/1'`)).stderr, /Read-only file system/);
    t.notMatch(await shOk(`ls -a '${m}'`), /\.versions/, 'not listed at the root (reachable by name)');
    const all = (await d.rpc('list', { path: '/', recursive: true })) as string[];
    t.equal(all.some((p) => p.includes('.versions')), false, 'not in RPC list');
    t.same(await d.rpc('glob', { pattern: '**/.versions/**' }), [], 'not in RPC glob');
    await shOk(`cp '${m}/.versions/doc.md/1' '${m}/restored.md'`);
    t.equal(await shOk(`cat '${m}/restored.md'`), 'one\n', 'an old version copies out with any tool');
  });

  t.test('cp inside the mount makes a file with the source\'s content and etag; cp out of /.versions restores an old one', async (t) => {
    // On libfuse 3, in process, cp's copy_file_range shares the stored chunks instead of copying
    // bytes (test/fuse/chunk-holds.test.ts shows the sharing); the result must be the same as a copy.
    const v1 = Buffer.concat([randomBytes(3 * 1024 * 1024), Buffer.from('tail of version one')]);
    const first = await d.rpc('write', { path: '/cp/orig.bin', content: bytes(v1) });
    await shOk(`cp '${m}/cp/orig.bin' '${m}/cp/copy.bin'`);
    const copy = await d.rpc('get_metadata', { path: '/cp/copy.bin' });
    t.equal(copy.etag, first.etag, 'the copy\'s etag is the source\'s');
    t.equal(copy.etag, sha256(v1), 'and the SHA-256 of its bytes');
    t.equal(copy.version, 1, 'one version');
    t.ok((await readFile(join(m, 'cp', 'copy.bin'))).equals(v1), 'the same bytes through the mount');
    t.ok(Buffer.from((await d.rpc('read', { path: '/cp/copy.bin' })).data, 'base64').equals(v1), 'and by RPC');
    await d.rpc('write', { path: '/cp/orig.bin', content: bytes('version two') });
    await shOk(`cp '${m}/.versions/cp/orig.bin/1' '${m}/cp/restored.bin'`);
    t.equal((await d.rpc('get_metadata', { path: '/cp/restored.bin' })).etag, first.etag, 'version 1 restored, etag and all');
    await shOk(`cp '${m}/cp/copy.bin' '${m}/cp/copy2.bin' && printf more >> '${m}/cp/copy2.bin'`);
    t.equal((await d.rpc('get_metadata', { path: '/cp/copy2.bin' })).etag, sha256(Buffer.concat([v1, Buffer.from('more')])),
      'a copy appended to afterwards has the etag of its new bytes');
    await d.rpc('delete', { path: '/cp/copy.bin' });
    t.ok((await readFile(join(m, 'cp', 'copy2.bin'))).subarray(0, v1.length).equals(v1), 'a copy outlives the file it was copied from');
    // A source with a write not yet saved (its handle still open) is copied as it reads, unsaved bytes and all.
    const writer = await open(join(m, 'cp', 'copy2.bin'), 'r+');
    try {
      const unsaved = randomBytes(4096);
      await writer.write(unsaved, 0, unsaved.length, 1024 * 1024 + 10);
      await shOk(`cp '${m}/cp/copy2.bin' '${m}/cp/copy3.bin'`);
      const copied = await readFile(join(m, 'cp', 'copy3.bin'));
      t.ok(copied.subarray(1024 * 1024 + 10, 1024 * 1024 + 10 + 4096).equals(unsaved), 'the copy has the unsaved write');
      t.ok(copied.equals(await readFile(join(m, 'cp', 'copy2.bin'))), 'and every other byte of the source');
    } finally {
      await writer.close();
    }
  });

  t.test('changes made in the mount reach WebSocket watchers', async (t) => {
    const ws = new WebSocket(`${d.url.replace('http', 'ws')}/api/nfs/ws`);
    await new Promise((r) => ws.once('open', r));
    const events: { type: string; path: string; new_path?: string }[] = [];
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString());
      if (msg.method === 'fs.event') events.push(msg.params);
    });
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'watch', params: { path: '/w' } }));
    await new Promise((r) => setTimeout(r, 100));
    await shOk(`mkdir '${m}/w' && echo a > '${m}/w/f' && mv '${m}/w/f' '${m}/w/g' && rm '${m}/w/g' && rmdir '${m}/w'`);
    await eventually(async () => events.length >= 5, 2000);
    ws.close();
    t.same(events.map((e) => `${e.type} ${e.path}${e.new_path ? ` ${e.new_path}` : ''}`),
      ['mkdir /w', 'write /w/f', 'rename /w/f /w/g', 'delete /w/g', 'rmdir /w']);
  });

  t.test('a read-only svc mount answers EROFS in the FUSE mount', async (t) => {
    const host = tempDir('svc-fuse-ro-');
    t.teardown(() => sh(`rm -rf '${host}'`));
    await mkdir(join(host, 'sub'));
    await shOk(`echo hosted > '${host}/sub/h.txt'`);
    await d.rpc('add_mount', { mount_point: '/ro', backend_type: 'local', backend_config: { data_dir: host }, readonly: true });
    t.equal(await shOk(`cat '${m}/ro/sub/h.txt'`), 'hosted\n', 'readable');
    t.match((await sh(`echo x > '${m}/ro/new.txt'`)).stderr, /Read-only file system/, 'create');
    t.match((await sh(`echo x >> '${m}/ro/sub/h.txt'`)).stderr, /Read-only file system/, 'append');
    t.match((await sh(`rm '${m}/ro/sub/h.txt'`)).stderr, /Read-only file system/, 'unlink');
  });

  t.test('ln -s inside a local svc mount makes a symlink in its host directory', async (t) => {
    const host = tempDir('svc-fuse-lnk-');
    t.teardown(() => sh(`rm -rf '${host}'`));
    await d.rpc('add_mount', { mount_point: '/hosted', backend_type: 'local', backend_config: { data_dir: host } });
    await shOk(`cd '${m}/hosted' && echo data > target.txt && ln -s target.txt link && ln -s /nowhere/at/all dangling`);
    t.equal(await shOk(`readlink '${host}/link'`), 'target.txt\n', 'a host symlink, not a file holding its text');
    t.equal(await shOk(`cat '${host}/link'`), 'data\n');
    t.equal(await shOk(`readlink '${host}/dangling'`), '/nowhere/at/all\n');
    t.equal(await shOk(`stat -c %F '${m}/hosted/link'`), 'symbolic link\n', 'still a link in the mount');
    await shOk(`rm '${m}/hosted/dangling'`);
    t.equal((await sh(`test -L '${host}/dangling'`)).code, 1, 'removed from the host directory');
  });

  t.test('a remote mount (svc mount --remote-url) sees the same tree', async (t) => {
    const r = await startRemoteMount(t, d.url);
    t.equal(await shOk(`cat '${r.mnt}/doc.md'`), 'two\nthree', 'reads what the daemon holds');
    await shOk(`mkdir -p '${r.mnt}/remote/sub' && echo via-remote > '${r.mnt}/remote/sub/r.txt' && chmod 600 '${r.mnt}/remote/sub/r.txt'`);
    t.equal(await shOk(`cat '${m}/remote/sub/r.txt'`), 'via-remote\n', 'the daemon\'s own mount sees it');
    t.equal((await d.rpc('get_metadata', { path: '/remote/sub/r.txt' })).etag, sha256('via-remote\n'));
    t.equal((await shOk(`stat -c %a '${m}/remote/sub/r.txt'`)).trim(), '600', 'attributes travel');
    await shOk(`echo from-daemon-mount > '${m}/remote/sub/r.txt'`);
    t.ok(await eventually(async () => (await shOk(`cat '${r.mnt}/remote/sub/r.txt'`)) === 'from-daemon-mount\n', 2000, 20),
      'a change in the other mount shows up within a second');
    await shOk(`cp -r '${m}/x' '${r.mnt}/copy-of-x' 2>/dev/null || true; cd '${r.mnt}' && ln -s remote/sub/r.txt rl && mv remote moved`);
    t.equal(await shOk(`readlink '${r.mnt}/rl'`), 'remote/sub/r.txt\n');
    t.equal(await shOk(`cat '${m}/moved/sub/r.txt'`), 'from-daemon-mount\n');
    t.equal((await shOk(`ls '${r.mnt}/.versions/moved/sub/r.txt'`)).trim().split('\n').length, 2, 'history over RPC');
    await keptOpenSeesChanges(t, d, r.mnt, '/kept-remote.txt');
    t.equal(await r.stop(), 0, 'SIGTERM: clean exit');
  });
});

/** The first `length` bytes read through an open descriptor, as text. */
async function readStart(handle: FileHandle, length = 100): Promise<string> {
  const buf = Buffer.alloc(length);
  const { bytesRead } = await handle.read(buf, 0, length, 0);
  return buf.subarray(0, bytesRead).toString();
}

/**
 * A file kept open in mount `mnt` (its pages in the kernel's cache) is rewritten over RPC: reads
 * through the same descriptor show the new bytes, at the same size and longer. Without the
 * kernel cache notifications (src/transports/fuse/kernel-cache.ts) the old pages stay until reopen.
 */
async function keptOpenSeesChanges(t: Test, d: { rpc: (m: string, p: Record<string, unknown>) => Promise<unknown> }, mnt: string, path: string): Promise<void> {
  await d.rpc('write', { path, content: bytes('first version\n') });
  const handle = await open(`${mnt}${path}`, 'r');
  try {
    const read = () => readStart(handle);
    t.equal(await read(), 'first version\n');
    t.equal(await read(), 'first version\n', 'read again (from the kernel\'s cache)');
    for (const next of ['other version\n', 'a third and longer version\n']) {
      await d.rpc('write', { path, content: bytes(next) });
      const started = Date.now();
      t.ok(await eventually(async () => (await read()) === next, 3000, 10), `the open descriptor reads ${JSON.stringify(next)}`);
      t.ok(Date.now() - started < 1000, `within a second (${Date.now() - started} ms)`);
    }
    t.equal((await handle.stat()).size, 'a third and longer version\n'.length, 'and its size');
  } finally {
    await handle.close();
  }
}
