import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, readFileSync, existsSync, symlinkSync, mkdirSync, lstatSync, readlinkSync, readdirSync, statSync } from 'node:fs';
import { writeFile, unlink, symlink } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { smallDisk, smallDiskSkipReason } from '../helpers/small-disk.js';
import { buildServices, type Services } from '../../src/daemon.js';

const enc = (s: string) => Buffer.from(s);
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

function tmp(t: Test, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function open(t: Test, dataDir = tmp(t, 'svc-mnt-db-')): Services {
  const services = buildServices(dataDir, pino({ level: 'silent' }));
  t.teardown(async () => {
    await services.mounts.close();
    await services.store.close();
  });
  return services;
}

/** Poll (bounded) until `check` passes. */
async function eventually(check: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

t.test('local mount: svc writes are plain files; outside edits become versions', async (t) => {
  const { fs, mounts } = open(t);
  const host = tmp(t, 'svc-mnt-host-');
  await writeFile(join(host, 'pre.txt'), 'was here');
  t.equal(await mounts.add({ mount_point: '/data', backend_type: 'local', backend_config: { data_dir: host } }), '/data');
  t.equal(fs.read('/data/pre.txt').content.toString(), 'was here', 'existing files imported');
  t.equal(fs.read('/data/pre.txt').record.etag, sha('was here'));

  await fs.write('/data/sub/a.txt', enc('from svc'));
  t.equal(readFileSync(join(host, 'sub', 'a.txt'), 'utf8'), 'from svc', 'written before the answer');

  await writeFile(join(host, 'sub', 'a.txt'), 'edited outside');
  t.ok(await eventually(() => fs.stat('/data/sub/a.txt')?.kind === 'file' && fs.read('/data/sub/a.txt').content.toString() === 'edited outside'));
  t.equal(fs.read('/data/sub/a.txt').record.etag, sha('edited outside'));
  t.equal(fs.listVersions('/data/sub/a.txt').length, 2, 'an outside edit is a new version');

  await writeFile(join(host, 'new.txt'), 'new outside');
  t.ok(await eventually(() => fs.exists('/data/new.txt')));
  await unlink(join(host, 'new.txt'));
  t.ok(await eventually(() => !fs.exists('/data/new.txt')), 'outside delete shows up');

  await fs.rename('/data/sub/a.txt', '/data/b.txt');
  t.notOk(existsSync(join(host, 'sub', 'a.txt')));
  t.equal(readFileSync(join(host, 'b.txt'), 'utf8'), 'edited outside');
  await fs.delete('/data/b.txt');
  t.notOk(existsSync(join(host, 'b.txt')));
  await fs.mkdir('/data/d1/d2', { parents: true });
  t.ok(existsSync(join(host, 'd1', 'd2')));
  await fs.rmdir('/data/d1', { recursive: true });
  t.notOk(existsSync(join(host, 'd1')));

  t.same(mounts.list(), [{ mount_point: '/data', priority: 0, readonly: false, backend_type: 'LocalBackend', data_dir: host }]);
  t.ok(mounts.has('/data'));
  t.equal(mounts.get('/nope'), null);
  await t.rejects(mounts.add({ mount_point: '/data', backend_type: 'local', backend_config: { data_dir: host } }), { code: -32001 });
  t.equal(await mounts.remove('/data'), true);
  t.equal(await mounts.remove('/data'), false);
  t.equal(readFileSync(join(host, 'pre.txt'), 'utf8'), 'was here', 'host files untouched by remove');
});

t.test('read-only mounts refuse every change with -32004 naming the path', async (t) => {
  const { fs, mounts, workspaces } = open(t);
  const host = tmp(t, 'svc-mnt-ro-');
  await writeFile(join(host, 'f.txt'), 'x');
  await mounts.add({ mount_point: '/ro', backend_type: 'local', backend_config: { data_dir: host }, readonly: true });
  t.equal(fs.read('/ro/f.txt').content.toString(), 'x');
  await t.rejects(fs.write('/ro/f.txt', enc('y')), { code: -32004, message: /\/ro\/f.txt/ });
  await t.rejects(fs.write('/ro/new.txt', enc('y')), { code: -32004 });
  await t.rejects(fs.delete('/ro/f.txt'), { code: -32004 });
  await t.rejects(fs.rename('/ro/f.txt', '/ro/g.txt'), { code: -32004 });
  await t.rejects(fs.mkdir('/ro/d'), { code: -32004 });
  await t.rejects(fs.rmdir('/ro', { recursive: true }), { code: -32004 });
  await t.rejects(fs.rollback('/ro/f.txt', 1), { code: -32004 });
  await fs.write('/other/x.txt', enc('1'));
  await t.rejects(fs.rename('/other/x.txt', '/ro/x.txt'), { code: -32004 });
  await workspaces.register('/ro');
  await workspaces.snapshot('/ro');
  await t.rejects(workspaces.restore('/ro', 1), { code: -32004 });
  // outside changes still arrive
  await writeFile(join(host, 'f.txt'), 'changed outside');
  t.ok(await eventually(() => fs.read('/ro/f.txt').content.toString() === 'changed outside'));
});

t.test('routing: highest priority wins, then the longest prefix; no silent boundary crossing', async (t) => {
  const { fs, mounts } = open(t);
  const a = tmp(t, 'svc-mnt-a-');
  const b = tmp(t, 'svc-mnt-b-');
  await mounts.add({ mount_point: '/m', backend_type: 'local', backend_config: { data_dir: a } });
  await mounts.add({ mount_point: '/m/inner', backend_type: 'local', backend_config: { data_dir: b } });
  t.equal(mounts.route('/m/inner/x')?.spec.mount_point, '/m/inner', 'longest prefix at equal priority');
  t.equal(mounts.route('/m/x')?.spec.mount_point, '/m');
  t.equal(mounts.route('/elsewhere'), undefined);
  await fs.write('/m/inner/x.txt', enc('inner'));
  t.ok(existsSync(join(b, 'x.txt')));
  await t.rejects(fs.rename('/m/inner/x.txt', '/m/x.txt'), { code: -32005, message: /mount boundary/ });
  await t.rejects(fs.rmdir('/m', { recursive: true }), { code: -32005, message: /mount point/ });
  await mounts.remove('/m/inner');
  await mounts.add({ mount_point: '/m/inner', backend_type: 'local', backend_config: { data_dir: b }, priority: -1 });
  t.equal(mounts.route('/m/inner/x')?.spec.mount_point, '/m', 'priority beats prefix length');
});

t.test('escape attempts are refused', async (t) => {
  const { fs, mounts } = open(t);
  const host = tmp(t, 'svc-mnt-esc-');
  const outside = tmp(t, 'svc-mnt-out-');
  await writeFile(join(outside, 'secret.txt'), 'secret');
  symlinkSync(outside, join(host, 'link'));
  mkdirSync(join(host, 'ok'));
  await mounts.add({ mount_point: '/e', backend_type: 'local', backend_config: { data_dir: host } });
  t.notOk(fs.exists('/e/link/secret.txt'), 'a symlink pointing outside is not followed');
  t.match(fs.stat('/e/link'), { kind: 'file', symlink: true }, 'it is imported as the link it is');
  t.equal(fs.read('/e/link').content.toString(), outside);
  await t.rejects(fs.write('/e/link/evil.txt', enc('x')));
  t.notOk(existsSync(join(outside, 'evil.txt')));
  // A link made there a moment ago, not imported yet: the guard still sees where a write would land.
  symlinkSync(outside, join(host, 'fresh'));
  await t.rejects(fs.write('/e/fresh/evil.txt', enc('x')), { code: -32004, message: /escapes/ });
  t.notOk(existsSync(join(outside, 'evil.txt')));
  await t.rejects(fs.write('/e/../etc/passwd', enc('x')), { code: -32002 });
  await fs.write('/e/ok/fine.txt', enc('fine'));
  t.ok(existsSync(join(host, 'ok', 'fine.txt')));
});

t.test('symlinks stay symlinks in both directions, wherever they point', async (t) => {
  const host = tmp(t, 'svc-mnt-link-');
  const outside = tmp(t, 'svc-mnt-link-out-');
  await writeFile(join(outside, 'secret.txt'), 'secret');
  {
    const { fs, mounts } = open(t);
    await mounts.add({ mount_point: '/l', backend_type: 'local', backend_config: { data_dir: host } });
    await fs.write('/l/target.txt', enc('hello'));
    await fs.write('/l/rel', enc('target.txt'), { symlink: true });
    await fs.write('/l/sub/abs', enc(join(outside, 'secret.txt')), { symlink: true });
    t.ok(lstatSync(join(host, 'rel')).isSymbolicLink(), 'an svc symlink is a host symlink');
    t.equal(readlinkSync(join(host, 'rel')), 'target.txt');
    t.equal(readFileSync(join(host, 'rel'), 'utf8'), 'hello', 'which a program there can follow');
    t.equal(readlinkSync(join(host, 'sub', 'abs')), join(outside, 'secret.txt'));

    // Retargeting and removing a link that points outside are changes of the link itself.
    await fs.write('/l/sub/abs', enc('../target.txt'), { symlink: true, force: true });
    t.equal(readlinkSync(join(host, 'sub', 'abs')), '../target.txt');
    t.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'secret', 'the old target is untouched');
    await fs.write('/l/sub/abs', enc(outside), { symlink: true, force: true });
    await fs.delete('/l/sub/abs');
    t.notOk(existsSync(join(host, 'sub', 'abs')));
    t.ok(existsSync(outside), 'removing a link to a directory leaves the directory');

    // A plain file with the same text replaces the link.
    await fs.write('/l/rel', enc('target.txt'), { force: true });
    t.notOk(lstatSync(join(host, 'rel')).isSymbolicLink());
    await fs.write('/l/rel', enc('target.txt'), { symlink: true, force: true });
    t.ok(lstatSync(join(host, 'rel')).isSymbolicLink(), 'and a link with the same text replaces the file');

    // A link another program makes is imported as a link, not as what it points at.
    await symlink(outside, join(host, 'made-outside'));
    t.ok(await eventually(() => fs.stat('/l/made-outside')?.kind === 'file'));
    t.match(fs.stat('/l/made-outside'), { symlink: true });
    t.equal(fs.read('/l/made-outside').content.toString(), outside);
    await unlink(join(host, 'made-outside'));
    t.ok(await eventually(() => !fs.exists('/l/made-outside')), 'and its removal too');
  }
  // Another svc (its own data directory) mounting the same directory sees the links as links.
  const { fs, mounts } = open(t);
  await mounts.add({ mount_point: '/again', backend_type: 'local', backend_config: { data_dir: host } });
  t.match(fs.stat('/again/rel'), { kind: 'file', symlink: true });
  t.equal(fs.read('/again/rel').content.toString(), 'target.txt');
  t.equal(fs.read('/again/target.txt').record.symlink, undefined, 'and files as files');
});

t.test('backend validation and unavailable backends', async (t) => {
  const { mounts } = open(t);
  await t.rejects(mounts.add({ mount_point: '/x', backend_type: 'local', backend_config: {} }), { code: -32602, data: { param: 'backend_config.data_dir' } });
  await t.rejects(mounts.add({ mount_point: '/x', backend_type: 'local', backend_config: { data_dir: 'relative/dir' } }), { code: -32602 });
  await t.rejects(mounts.add({ mount_point: '/x', backend_type: 'cas_bucket', backend_config: { bucket: 'b' } }), { code: -32602 });
  await t.rejects(mounts.add({ mount_point: '/x', backend_type: 'cas_bucket', backend_config: { bucket: 'b', project_id: 'p' } }), { code: -32005, message: /not available yet/ });
  await t.rejects(mounts.add({ mount_point: '/x', backend_type: 'cloud_drive', backend_config: { access_token: 'a', refresh_token: 'r' } }), { code: -32005 });
  t.same(mounts.list(), []);
});

t.test('saved mounts: save, list with filters, load, delete; activated again after a restart', async (t) => {
  const dataDir = tmp(t, 'svc-mnt-saved-');
  const host = tmp(t, 'svc-mnt-saved-host-');
  await writeFile(join(host, 'keep.txt'), 'kept');
  {
    const { mounts, store } = buildServices(dataDir, pino({ level: 'silent' }));
    const id = await mounts.save({ mount_point: '/saved', backend_type: 'local', backend_config: { data_dir: host }, owner_user_id: 'alice', tenant_id: 't1', description: 'mine' });
    t.match(id, /^[0-9a-f-]{36}$/);
    await t.rejects(mounts.save({ mount_point: '/saved', backend_type: 'local', backend_config: { data_dir: host } }), { code: -32001 });
    await mounts.save({ mount_point: '/other', backend_type: 'cas_bucket', backend_config: { bucket: 'b', project_id: 'p' }, owner_user_id: 'bob' });
    t.equal(mounts.has('/saved'), false, 'save does not activate');
    t.same(mounts.listSaved({ owner_user_id: 'alice' }).map((m) => m.mount_point), ['/saved']);
    t.same(mounts.listSaved({ tenant_id: 't1' }).map((m) => m.mount_id), [id]);
    t.equal(mounts.listSaved().length, 2);
    t.match(mounts.listSaved({ owner_user_id: 'alice' })[0], { description: 'mine', backend_type: 'local', priority: 0, readonly: false });
    await t.rejects(mounts.load('/missing'), { code: -32000, message: 'Mount not found in database: /missing' });
    t.match(await mounts.load('/saved'), { mount_point: '/saved', backend_type: 'LocalBackend' });
    await t.rejects(mounts.load('/saved'), { code: -32001 }, 'already active');
    t.equal(await mounts.remove('/saved'), true);
    t.same(mounts.listSaved({ owner_user_id: 'alice' }).map((m) => m.mount_id), [id], 'remove_mount leaves the saved configuration');
    t.match(await mounts.load('/saved'), { mount_point: '/saved' });
    await mounts.close();
    await store.close();
  }
  // restart: saved mounts are activated by the daemon at start
  const { Daemon } = await import('../../src/daemon.js');
  const { loadConfig } = await import('../../src/config.js');
  const daemon = new Daemon(loadConfig({ port: 0, dataDir, logLevel: 'silent' }, {}));
  await daemon.start();
  t.teardown(() => daemon.stop());
  t.ok(daemon.services.mounts.has('/saved'));
  t.notOk(daemon.services.mounts.has('/other'), 'an unavailable backend is logged, not fatal');
  t.equal(daemon.services.fs.read('/saved/keep.txt').content.toString(), 'kept');
  t.equal(await daemon.services.mounts.deleteSaved('/saved'), true);
  t.equal(await daemon.services.mounts.deleteSaved('/saved'), false);
  t.ok(daemon.services.mounts.has('/saved'), 'the active mount is untouched');
});

t.test('overlapping mounts: each backend holds only what routes to it', async (t) => {
  const { fs, mounts } = open(t);
  const outer = tmp(t, 'svc-mnt-outer-');
  const inner = tmp(t, 'svc-mnt-inner-');
  await writeFile(join(outer, 'o.txt'), 'outer file');
  mkdirSync(join(outer, 'in'));
  await writeFile(join(outer, 'in', 'shadowed.txt'), 'under the inner mount point, in the outer directory');
  await writeFile(join(inner, 'i.txt'), 'inner file');
  await mounts.add({ mount_point: '/m', backend_type: 'local', backend_config: { data_dir: outer } });
  await mounts.add({ mount_point: '/m/in', backend_type: 'local', backend_config: { data_dir: inner } });
  t.same(fs.list('/m').map((e) => e.path), ['/m/in/', '/m/in/i.txt', '/m/o.txt'], 'the inner directory replaces what the outer one had there');
  t.ok(existsSync(join(outer, 'in', 'shadowed.txt')), 'the inner mount\'s first sync did not touch the outer directory');

  await fs.write('/m/in/new.txt', enc('to inner'));
  t.equal(readFileSync(join(inner, 'new.txt'), 'utf8'), 'to inner');
  t.notOk(existsSync(join(outer, 'in', 'new.txt')), 'not mirrored into the outer directory');
  await fs.write('/m/top.txt', enc('to outer'));
  t.equal(readFileSync(join(outer, 'top.txt'), 'utf8'), 'to outer');

  // an outside change under the outer directory's in/ is shadowed: not imported
  await writeFile(join(outer, 'in', 'late.txt'), 'shadowed');
  await writeFile(join(outer, 'marker.txt'), 'm');
  t.ok(await eventually(() => fs.exists('/m/marker.txt')));
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(fs.exists('/m/in/late.txt'), 'a path another mount owns is not imported');

  // re-activating the outer mount keeps the inner mount's files
  await mounts.remove('/m');
  await mounts.add({ mount_point: '/m', backend_type: 'local', backend_config: { data_dir: outer } });
  t.equal(fs.read('/m/in/new.txt').content.toString(), 'to inner', 'outer first sync leaves the inner mount alone');
  t.equal(fs.read('/m/in/i.txt').content.toString(), 'inner file');
  t.notOk(fs.exists('/m/in/shadowed.txt'));

  // priority beats prefix length: the outer mount takes the inner area
  await mounts.remove('/m/in');
  t.equal(fs.read('/m/in/shadowed.txt').content.toString(), 'under the inner mount point, in the outer directory',
    'once the inner mount is gone, the outer directory is the truth there again');
  t.notOk(fs.exists('/m/in/new.txt'));
  await mounts.remove('/m');
  await mounts.add({ mount_point: '/m', backend_type: 'local', backend_config: { data_dir: outer }, priority: 5 });
  await mounts.add({ mount_point: '/m/in', backend_type: 'local', backend_config: { data_dir: inner } });
  t.equal(mounts.route('/m/in/x')?.spec.mount_point, '/m');
  await fs.write('/m/in/prio.txt', enc('p'));
  t.ok(existsSync(join(outer, 'in', 'prio.txt')), 'written to the higher-priority mount');
  t.notOk(existsSync(join(inner, 'prio.txt')));
  t.equal(fs.read('/m/in/shadowed.txt').content.toString(), 'under the inner mount point, in the outer directory');
});

t.test('quick svc changes are not undone by late watcher events', async (t) => {
  const { fs, mounts } = open(t);
  const host = tmp(t, 'svc-mnt-race-');
  await mounts.add({ mount_point: '/r', backend_type: 'local', backend_config: { data_dir: host } });
  // Pauses of every length between the changes, so that some svc change commits while the
  // watcher is looking at the disk for an earlier one (the race this guards against).
  for (let i = 0; i < 15; i++) {
    await fs.mkdir('/r/d1/d2', { parents: true });
    await fs.write('/r/d1/d2/f.txt', enc(`round ${i}`));
    await fs.write('/r/keep.txt', enc(`keep ${i}`));
    await new Promise((r) => setTimeout(r, i * 12));
    await fs.rmdir('/r/d1', { recursive: true });
    await fs.write('/r/gone.txt', enc('x'));
    await fs.delete('/r/gone.txt');
  }
  // let every late event arrive, then svc and the directory must agree
  await new Promise((r) => setTimeout(r, 800));
  t.ok(await eventually(() => !existsSync(join(host, 'd1')) && !fs.exists('/r/d1')), 'removed directory stays removed');
  t.notOk(fs.exists('/r/gone.txt'));
  t.notOk(existsSync(join(host, 'gone.txt')));
  t.equal(fs.read('/r/keep.txt').content.toString(), 'keep 14');
  t.equal(readFileSync(join(host, 'keep.txt'), 'utf8'), 'keep 14');
});

t.test('a host directory that fills up keeps no half-written temp file', { skip: smallDiskSkipReason() }, async (t) => {
  const { fs, mounts } = open(t);
  const host = smallDisk(t, 4);
  await mounts.add({ mount_point: '/small', backend_type: 'local', backend_config: { data_dir: host } });
  await fs.write('/small/a.bin', Buffer.alloc(3 * 1024 * 1024, 1));
  await t.rejects(fs.write('/small/b.bin', Buffer.alloc(3 * 1024 * 1024, 2)), { code: 'ENOSPC' });
  t.same(readdirSync(host), ['a.bin'], 'only the file that fitted');
});

t.test('a local mount whose host directory is gone refuses changes as missing (-32000, ENOENT), not as an escape', async (t) => {
  const { fs, mounts } = open(t);
  const host = tmp(t, 'svc-mnt-gone-');
  await writeFile(join(host, 'f.txt'), 'x');
  await mounts.add({ mount_point: '/gone', backend_type: 'local', backend_config: { data_dir: host } });
  rmSync(host, { recursive: true, force: true });
  await t.rejects(fs.write('/gone/new.txt', enc('y')), { code: -32000, message: /host directory .* is missing/ });
  await t.rejects(fs.write('/gone/sub/deeper.txt', enc('y')), { code: -32000 });
  mkdirSync(host); // made again
  symlinkSync(tmpdir(), join(host, 'out'));
  await t.rejects(fs.write('/gone/out/escape.txt', enc('y')), { code: -32004 }, 'a link out of the directory made again is still an escape');
});

t.test('a host file replaced by a directory tree is imported, and what is made in it afterwards too', async (t) => {
  // chokidar reports a file replaced by a directory as a change of the file, nothing more, and
  // went on watching it as a file: svc kept the old file, and nothing made in the directory came
  // in (30 times out of 30 before the fix).
  const { fs, mounts } = open(t);
  const host = tmp(t, 'svc-mnt-kind-');
  await writeFile(join(host, 'g'), 'a file\n');
  await writeFile(join(host, 'f'), 'a file too\n');
  await mounts.add({ mount_point: '/k', backend_type: 'local', backend_config: { data_dir: host } });
  const text = (p: string) => (fs.stat(p)?.kind === 'file' ? fs.read(p).content.toString() : undefined);
  rmSync(join(host, 'g'));
  mkdirSync(join(host, 'g', 'deeper'), { recursive: true });
  await writeFile(join(host, 'g', 'deeper', 'in'), 'deep\n');
  rmSync(join(host, 'f'));
  mkdirSync(join(host, 'f'));
  await writeFile(join(host, 'f', 'in'), 'in\n');
  t.ok(await eventually(() => text('/k/g/deeper/in') === 'deep\n' && text('/k/f/in') === 'in\n', 5000),
    `the directories' trees are imported: ${JSON.stringify(fs.list('/k', { recursive: true }).map((e) => e.path))}`);
  t.equal(fs.stat('/k/g')?.kind, 'dir');
  // Watched as the directories they are now.
  await writeFile(join(host, 'g', 'deeper', 'in2'), 'more\n');
  mkdirSync(join(host, 'g', 'x'));
  await writeFile(join(host, 'g', 'x', 'y'), 'y\n');
  t.ok(await eventually(() => text('/k/g/deeper/in2') === 'more\n' && text('/k/g/x/y') === 'y\n', 5000), 'later files in them are imported');
  // And back to a file.
  rmSync(join(host, 'g'), { recursive: true });
  await writeFile(join(host, 'g'), 'a file again\n');
  t.ok(await eventually(() => text('/k/g') === 'a file again\n', 5000), 'a directory replaced by a file');
  // svc's changes still reach the host below the directory that was a file.
  await fs.write('/k/f/from-svc', enc('svc\n'));
  t.equal(readFileSync(join(host, 'f', 'from-svc'), 'utf8'), 'svc\n');
});

t.test('a host directory removed for a while, then made again, is watched again, whatever its inode number', async (t) => {
  // ext4 may give the new directory the removed one's inode number: told apart by device and inode
  // alone, it passed for the directory already watched, whose watcher had stopped with it, and
  // nothing made in the new one was imported (a CI run of stop 24). Made again at once, chokidar
  // follows by itself; gone for longer than a look at it (ROOT_POLL_MS), it does not. Whether the
  // number comes back depends on the allocator: the test says which it saw.
  const { fs, mounts } = open(t);
  const host = tmp(t, 'svc-mnt-again-');
  await writeFile(join(host, 'a'), 'a');
  await mounts.add({ mount_point: '/again', backend_type: 'local', backend_config: { data_dir: host } });
  const ino = statSync(host).ino;
  rmSync(host, { recursive: true, force: true });
  await new Promise((r) => setTimeout(r, 600));
  mkdirSync(host);
  t.comment(statSync(host).ino === ino ? 'the inode number was given again' : 'another inode number');
  await writeFile(join(host, 'b'), 'b');
  t.ok(await eventually(() => fs.exists('/again/b'), 3000), 'a file made in the new directory is imported');
  await fs.write('/again/c', enc('c'));
  t.equal(readFileSync(join(host, 'c'), 'utf8'), 'c', "and svc's writes reach it");
});
