// Directories over HTTP: mkdir, rmdir, is_directory, list, directory rename (spec §4.4, WIRE.md "Settled details").
import t from 'tap';
import { startDaemon, bytes, unbytes } from '../helpers/daemon.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('directories', async (t) => {
  const d = await startDaemon({}, t);

  t.test('mkdir answers {success:true}; an existing directory is -32001 unless parents or exist_ok', async (t) => {
    t.same(await d.call('mkdir', { path: '/m' }), { success: true });
    t.same(await d.call('is_directory', { path: '/m' }), { is_directory: true });
    const env = await d.rpc('mkdir', { path: '/m' });
    t.equal(env.error?.code, -32001);
    t.same(env.error?.data, { path: '/m' });
    t.same(await d.call('mkdir', { path: '/m', exist_ok: true }), { success: true });
    t.same(await d.call('mkdir', { path: '/m', parents: true }), { success: true });
  });

  t.test('mkdir without parents needs the parent; with parents it makes the chain', async (t) => {
    const env = await d.rpc('mkdir', { path: '/m/x/y/z' });
    t.equal(env.error?.code, -32000);
    t.same(await d.call('exists', { path: '/m/x' }), { exists: false });
    t.same(await d.call('mkdir', { path: '/m/x/y/z', parents: true }), { success: true });
    for (const p of ['/m/x', '/m/x/y', '/m/x/y/z']) t.same(await d.call('is_directory', { path: p }), { is_directory: true }, p);
  });

  t.test('mkdir over a file is -32001', async (t) => {
    await d.call('write', { path: '/m/f.txt', content: bytes('f') });
    await t.rejects(d.call('mkdir', { path: '/m/f.txt' }), { code: -32001 });
    await t.rejects(d.call('mkdir', { path: '/m/f.txt', exist_ok: true }), { code: -32001 });
    t.same(await d.call('is_directory', { path: '/m/f.txt' }), { is_directory: false });
  });

  t.test('mkdir of the root is -32001 plainly, fine with parents', async (t) => {
    await t.rejects(d.call('mkdir', { path: '/' }), { code: -32001 });
    t.same(await d.call('mkdir', { path: '/', parents: true }), { success: true });
  });

  t.test('rmdir: empty works, non-empty is -32005, recursive removes the subtree', async (t) => {
    await d.call('mkdir', { path: '/r/empty', parents: true });
    t.same(await d.call('rmdir', { path: '/r/empty' }), { success: true });
    t.same(await d.call('exists', { path: '/r/empty' }), { exists: false });

    await d.call('write', { path: '/r/full/a.txt', content: bytes('a') });
    await d.call('write', { path: '/r/full/sub/b.txt', content: bytes('b') });
    const env = await d.rpc('rmdir', { path: '/r/full' });
    t.equal(env.error?.code, -32005);
    t.match(env.error?.data, { path: '/r/full' });
    t.same(await d.call('exists', { path: '/r/full/a.txt' }), { exists: true }, 'nothing removed');

    t.same(await d.call('rmdir', { path: '/r/full', recursive: true }), { success: true });
    for (const p of ['/r/full', '/r/full/a.txt', '/r/full/sub', '/r/full/sub/b.txt']) {
      t.same(await d.call('exists', { path: p }), { exists: false }, p);
    }
    t.same(await d.call('list', { path: '/r' }), []);
  });

  t.test('rmdir of a missing directory is -32000, of a file -32005', async (t) => {
    await t.rejects(d.call('rmdir', { path: '/r/never' }), { code: -32000 });
    await d.call('write', { path: '/r/file.txt', content: bytes('x') });
    await t.rejects(d.call('rmdir', { path: '/r/file.txt' }), { code: -32005 });
  });

  t.test('delete of a directory is refused; the directory stays', async (t) => {
    await d.call('mkdir', { path: '/r/keep' });
    const env = await d.rpc('delete', { path: '/r/keep' });
    t.equal(env.error?.code, -32005);
    t.same(await d.call('is_directory', { path: '/r/keep' }), { is_directory: true });
  });

  t.test('list', async (t) => {
    await d.call('write', { path: '/l/b.txt', content: bytes('bb') });
    await d.call('write', { path: '/l/a.txt', content: bytes('a') });
    await d.call('write', { path: '/l/sub/c.txt', content: bytes('ccc') });
    await d.call('write', { path: '/l/sub/deeper/d.txt', content: bytes('dddd') });
    await d.call('mkdir', { path: '/l/emptydir' });
    await d.call('write', { path: '/l-sibling.txt', content: bytes('s') });

    t.test('recursive (the default) gives every file and directory below, sorted, dirs with /', async (t) => {
      const all = ['/l/a.txt', '/l/b.txt', '/l/emptydir/', '/l/sub/', '/l/sub/c.txt', '/l/sub/deeper/', '/l/sub/deeper/d.txt'];
      t.same(await d.call('list', { path: '/l' }), all);
      t.same(await d.call('list', { path: '/l', recursive: true }), all);
      t.same(await d.call('list', { path: '/l/' }), all, 'trailing slash on the path');
    });

    t.test('recursive=false gives only the direct children', async (t) => {
      t.same(await d.call('list', { path: '/l', recursive: false }), ['/l/a.txt', '/l/b.txt', '/l/emptydir/', '/l/sub/']);
    });

    t.test('the default path is the root', async (t) => {
      const root = await d.call('list', { recursive: false });
      t.ok(root.includes('/l/'));
      t.ok(root.includes('/l-sibling.txt'));
      t.notOk(root.includes('/l/a.txt'));
      t.same(root, [...root].sort(), 'sorted');
    });

    t.test('details gives entries of spec §2.3', async (t) => {
      const entries = await d.call('list', { path: '/l/sub', details: true });
      t.same(entries.map((e: { path: string }) => e.path), ['/l/sub/c.txt', '/l/sub/deeper/', '/l/sub/deeper/d.txt']);
      const [file, dir] = entries;
      t.match(file, { path: '/l/sub/c.txt', size: 3, etag: /^[0-9a-f]{64}$/, modified_at: ISO, is_directory: false });
      t.match(dir, { path: '/l/sub/deeper/', is_directory: true });
      t.same(await d.call('list', { path: '/l/sub', details: true, recursive: false }).then((e: { path: string }[]) => e.map((x) => x.path)),
        ['/l/sub/c.txt', '/l/sub/deeper/']);
    });

    t.test('prefix filters on the full path, within path', async (t) => {
      t.same(await d.call('list', { path: '/l', prefix: '/l/s' }), ['/l/sub/', '/l/sub/c.txt', '/l/sub/deeper/', '/l/sub/deeper/d.txt']);
      t.same(await d.call('list', { path: '/l', prefix: '/l/a' }), ['/l/a.txt']);
      t.same(await d.call('list', { path: '/l', prefix: '/l/sub/deeper/d' }), ['/l/sub/deeper/d.txt']);
      t.same(await d.call('list', { path: '/l', prefix: '/l-' }), [], 'nothing outside path');
      t.same(await d.call('list', { path: '/', prefix: '/l-' }), ['/l-sibling.txt']);
      t.same(await d.call('list', { path: '/l', recursive: false, prefix: '/l/sub/c' }), [],
        'a prefix below the direct children matches nothing when not recursive');
    });

    t.test('listing a missing directory is -32000, a file -32005', async (t) => {
      await t.rejects(d.call('list', { path: '/l/none' }), { code: -32000 });
      await t.rejects(d.call('list', { path: '/l/a.txt' }), { code: -32005 });
    });

    t.test('show_parsed is accepted', async (t) => {
      t.same(await d.call('list', { path: '/l/sub/deeper', show_parsed: false }), ['/l/sub/deeper/d.txt']);
    });
  });

  t.test('directory rename moves the whole subtree, versions included', async (t) => {
    await d.call('write', { path: '/proj/src/main.ts', content: bytes('v1') });
    await d.call('write', { path: '/proj/src/main.ts', content: bytes('v2') });
    await d.call('write', { path: '/proj/README.md', content: bytes('readme') });
    await d.call('mkdir', { path: '/proj/empty' });

    t.same(await d.call('rename', { old_path: '/proj', new_path: '/archive/proj-2026' }), { success: true });
    t.same(await d.call('exists', { path: '/proj' }), { exists: false });
    t.same(await d.call('exists', { path: '/proj/src/main.ts' }), { exists: false });
    t.same(await d.call('list', { path: '/archive/proj-2026' }), [
      '/archive/proj-2026/README.md', '/archive/proj-2026/empty/', '/archive/proj-2026/src/', '/archive/proj-2026/src/main.ts',
    ]);
    t.equal(unbytes(await d.call('read', { path: '/archive/proj-2026/src/main.ts' })).toString(), 'v2');

    const versions = await d.call('list_versions', { path: '/archive/proj-2026/src/main.ts' });
    t.same(versions.map((v: { version: number }) => v.version), [2, 1]);
    t.equal(unbytes(await d.call('get_version', { path: '/archive/proj-2026/src/main.ts', version: 1 })).toString(), 'v1');
    await t.rejects(d.call('list_versions', { path: '/proj/src/main.ts' }), { code: -32000 });

    const next = await d.call('write', { path: '/archive/proj-2026/src/main.ts', content: bytes('v3') });
    t.equal(next.version, 3, 'the version counter moved with the file');
  });

  t.test('a directory cannot move into itself', async (t) => {
    await d.call('mkdir', { path: '/self/inner', parents: true });
    const env = await d.rpc('rename', { old_path: '/self', new_path: '/self/inner/self' });
    t.ok(env.error);
    t.not(env.error?.code, -32603);
    t.same(await d.call('is_directory', { path: '/self/inner' }), { is_directory: true });
  });

  t.test('renaming a directory onto an existing one is -32001', async (t) => {
    await d.call('mkdir', { path: '/dira' });
    await d.call('write', { path: '/dirb/x.txt', content: bytes('x') });
    await t.rejects(d.call('rename', { old_path: '/dira', new_path: '/dirb' }), { code: -32001 });
    t.same(await d.call('list', { path: '/dirb' }), ['/dirb/x.txt']);
  });
});
