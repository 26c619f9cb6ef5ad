/**
 * @module test/fuse/posix-service
 * What the FUSE face needs from the fs service, in process (no kernel): writeChunks stores what
 * write stores, POSIX rename over an existing target (history kept, references balanced, the
 * right errno for each refusal), attributes on write/mkdir/setAttributes, symbolic links, the
 * guard pre-check, and the POSIX RPC methods' range reads.
 */
import t from 'tap';
import { makeFs, noise, rejection, sha256, b, thrown } from '../fs/fixture.js';
import { CHUNK_SIZE } from '../../src/fs/service.js';
import { toErrno, PermissionDeniedError } from '../../src/core/errors.js';
import { readRange, posixEntry } from '../../src/fs/posix.js';

const pieces = (data: Buffer) => {
  const out = [];
  for (let off = 0; off < data.length; off += CHUNK_SIZE) out.push({ data: data.subarray(off, off + CHUNK_SIZE) });
  return out;
};

t.test('writeChunks stores exactly what write stores', async (t) => {
  const f = makeFs(t);
  const data = noise(2.5 * CHUNK_SIZE, 7);
  const a = await f.fs.write('/a.bin', data);
  const c = await f.fs.writeChunks('/c.bin', pieces(data));
  t.equal(c.etag, a.etag, 'same etag');
  t.equal(c.size, data.length);
  t.same(f.fs.file('/c.bin').chunks, f.fs.file('/a.bin').chunks, 'same chunks, shared');
  for (const h of f.fs.file('/a.bin').chunks) t.equal(f.refs(h), 2, 'one reference per file');
  const empty = await f.fs.writeChunks('/e', []);
  t.equal(empty.etag, sha256(''), 'no pieces: the empty file');
  t.equal((await f.fs.write('/e2', b(''))).etag, empty.etag);
  const known = f.fs.file('/a.bin').chunks;
  const reused = await f.fs.writeChunks('/d.bin', pieces(data).map((p, i) => ({ ...p, hash: known[i] })));
  t.equal(reused.etag, a.etag, 'known hashes give the same result');
  await t.rejects(f.fs.writeChunks('/bad', [{ data: Buffer.alloc(10) }, { data: Buffer.alloc(10) }]), /chunks are/,
    'a short piece before the last is a programming error');
  t.equal(f.fs.stat('/bad'), undefined, 'and nothing is stored');
});

t.test('rename with overwrite replaces a file and the target keeps its history', async (t) => {
  const f = makeFs(t);
  await f.fs.write('/doc', b('v1'));
  await f.fs.write('/doc', b('v2'));
  await f.fs.write('/tmp', b('v3'), { attributes: { mode: 0o600 } });
  const code = (await rejection(f.fs.rename('/tmp', '/doc'))).code;
  t.equal(code, -32001, 'without overwrite: -32001 as before');
  f.take();
  await f.fs.rename('/tmp', '/doc', { overwrite: true });
  t.same(f.fs.listVersions('/doc').map((v) => v.version), [3, 2, 1]);
  t.equal(f.fs.read('/doc').content.toString(), 'v3');
  t.equal(f.fs.file('/doc').mode, 0o600, 'the moved file\'s attributes');
  t.equal(f.fs.stat('/tmp'), undefined);
  t.same(f.take().map((e) => [e.type, e.path, e.new_path]), [['rename', '/tmp', '/doc']]);
  // Small content lives in the rows themselves: no chunk, no reference (a larger file's chunks
  // move with it the same way: test/fs/chunks.test.ts).
  t.same(f.allRefs(), new Map(), 'no chunk references: every version holds its content inline');
  t.same([1, 2].map((n) => f.fs.getVersion('/doc', n).toString()), ['v1', 'v2'], 'the replaced file\'s history');
});

t.test('rename with overwrite refuses what POSIX refuses', async (t) => {
  const f = makeFs(t);
  await f.fs.write('/file', b('x'));
  await f.fs.write('/full/child', b('y'));
  await f.fs.mkdir('/empty');
  await f.fs.mkdir('/dir');
  const errno = async (from: string, to: string) => toErrno(await rejection(f.fs.rename(from, to, { overwrite: true })));
  t.equal(await errno('/file', '/empty'), 'EISDIR', 'file over directory');
  t.equal(await errno('/dir', '/file'), 'ENOTDIR', 'directory over file');
  t.equal(await errno('/dir', '/full'), 'ENOTEMPTY', 'directory over a non-empty directory');
  await f.fs.write('/dir/inside', b('z'));
  await f.fs.rename('/dir', '/empty', { overwrite: true });
  t.equal(f.fs.read('/empty/inside').content.toString(), 'z', 'directory over an empty directory');
  t.equal(f.fs.stat('/dir'), undefined);
});

t.test('attributes: on write, on mkdir, setAttributes; kept by later versions', async (t) => {
  const f = makeFs(t);
  await f.fs.write('/a', b('1'), { attributes: { mode: 0o640, uid: 10, gid: 20 }, modified: 1000 });
  let rec = f.fs.file('/a');
  t.same([rec.mode, rec.uid, rec.gid, rec.modified], [0o640, 10, 20, 1000]);
  await f.fs.write('/a', b('2'));
  rec = f.fs.file('/a');
  t.same([rec.mode, rec.uid, rec.gid], [0o640, 10, 20], 'kept by a new version');
  t.ok(rec.modified > 1000, 'a write without a time stamps the commit time');
  await f.fs.setAttributes('/a', { mode: 0o4755, modified: 5000 });
  rec = f.fs.file('/a');
  t.same([rec.mode, rec.modified, rec.version], [0o4755, 5000, 2], 'no new version');
  await f.fs.mkdir('/d', { attributes: { mode: 0o700, uid: 1 } });
  t.same([f.fs.stat('/d')!.mode, f.fs.stat('/d')!.uid], [0o700, 1]);
  t.equal(toErrno(await rejection(f.fs.setAttributes('/missing', { mode: 0o600 }))), 'ENOENT');
  t.same(posixEntry('/d', f.fs.stat('/d')!).kind, 'dir');
});

t.test('symbolic links are files whose content is the target', async (t) => {
  const f = makeFs(t);
  await f.fs.write('/l', b('target/path'), { symlink: true, attributes: { uid: 3 } });
  t.equal(f.fs.file('/l').symlink, true);
  t.equal(posixEntry('/l', f.fs.stat('/l')!).kind, 'symlink');
  await f.fs.write('/l', b('now a file'));
  t.equal(f.fs.file('/l').symlink, undefined, 'writing content over a link makes a regular file');
});

t.test('checkChange runs the guards without changing anything', async (t) => {
  const f = makeFs(t);
  f.fs.addGuard((_kind, paths) => {
    if (paths[0]!.startsWith('/ro')) throw new PermissionDeniedError('read-only', { errno: 'EROFS' });
  });
  t.equal(toErrno(thrown(() => f.fs.checkChange('write', '/ro/x'))), 'EROFS');
  f.fs.checkChange('write', '/rw/x');
  t.equal(f.fs.stat('/rw'), undefined, 'nothing created');
});

t.test('readRange reads any byte range of a file or version chunk by chunk', async (t) => {
  const f = makeFs(t);
  const v1 = noise(3 * CHUNK_SIZE + 17, 3);
  await f.fs.write('/r', v1);
  await f.fs.write('/r', b('short'));
  for (const [off, len] of [[0, 10], [65_530, 20], [CHUNK_SIZE - 5, 10], [CHUNK_SIZE, CHUNK_SIZE], [CHUNK_SIZE - 3, CHUNK_SIZE + 6], [2 * CHUNK_SIZE + 1, 5 * CHUNK_SIZE], [0, v1.length], [v1.length - 1, 4], [v1.length, 4]]) {
    t.ok(readRange(f.fs, '/r', off!, len!, 1).equals(v1.subarray(off!, off! + len!)), `version 1 [${off}, +${len})`);
  }
  t.equal(readRange(f.fs, '/r', 1, 3).toString(), 'hor', 'the current version by default');
});
