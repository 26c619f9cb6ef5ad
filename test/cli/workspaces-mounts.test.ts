import t from 'tap';
import { mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDaemon, svc } from './harness.js';

const d = await startDaemon(t);
const host = mkdtempSync(join(tmpdir(), 'svc-cli-host-'));
t.teardown(() => rmSync(host, { recursive: true, force: true }));
writeFileSync(join(host, 'a.txt'), 'one\n');

t.test('svc mounts: add, list, info, write-through, save/saved/load/delete-saved, remove', async (t) => {
  const add = await svc(['mounts', 'add', '/h', '--data-dir', host], { url: d.url });
  t.equal(add.code, 0, add.stderr);
  t.equal(add.out, 'mounted /h\n');
  const list = await svc(['mounts', 'list', '--json'], { url: d.url });
  t.same(JSON.parse(list.out), [{ mount_point: '/h', priority: 0, readonly: false, backend_type: 'LocalBackend', data_dir: host }]);
  t.equal((await svc(['cat', '/h/a.txt'], { url: d.url })).out, 'one\n');
  t.equal((await svc(['write', '/h/b.txt'], { url: d.url, input: 'two\n' })).code, 0);
  t.equal(readFileSync(join(host, 'b.txt'), 'utf8'), 'two\n');
  t.match((await svc(['mounts', 'info', '/h'], { url: d.url })).out, /backend_type:\s+LocalBackend/);
  const missing = await svc(['mounts', 'info', '/nope'], { url: d.url });
  t.equal(missing.code, 1);
  const unavailable = await svc(['mounts', 'add', '/x', '--type', 'cas_bucket', '--config', '{"bucket":"b","project_id":"p"}'], { url: d.url });
  t.equal(unavailable.code, 1);
  t.match(unavailable.stderr, /-32005.*not available yet/);
  const noDir = await svc(['mounts', 'add', '/x'], { url: d.url });
  t.equal(noDir.code, 2);

  const save = await svc(['mounts', 'save', '/s', '--data-dir', host, '--owner', 'alice', '--json'], { url: d.url });
  t.equal(save.code, 0, save.stderr);
  t.match(JSON.parse(save.out), /^[0-9a-f-]{36}$/);
  t.match((await svc(['mounts', 'saved', '--owner', 'alice'], { url: d.url })).out, /\/s\s+local/);
  t.equal((await svc(['mounts', 'saved', '--owner', 'bob', '--json'], { url: d.url })).out, '[]\n');
  t.equal((await svc(['mounts', 'load', '/s'], { url: d.url })).out, 'mounted /s (LocalBackend)\n');
  const loadMissing = await svc(['mounts', 'load', '/zzz'], { url: d.url });
  t.equal(loadMissing.stderr, 'svc: error -32000: Mount not found in database: /zzz\n');
  t.equal((await svc(['mounts', 'delete-saved', '/s'], { url: d.url })).out, 'deleted saved mount /s\n');
  t.equal((await svc(['mounts', 'remove', '/s'], { url: d.url })).out, 'removed /s\n');
  t.equal((await svc(['mounts', 'remove', '/h'], { url: d.url })).out, 'removed /h\n');
});

t.test('svc workspace: register, snapshot, log, diff, restore, info, unregister', async (t) => {
  const reg = await svc(['workspace', 'register', '/ws', '--name', 'W', '--tag', 'a', '--tag', 'b', '--metadata', '{"k":1}'], { url: d.url });
  t.equal(reg.code, 0, reg.stderr);
  await svc(['write', '/ws/f.txt'], { url: d.url, input: 'v1' });
  t.equal((await svc(['workspace', 'snapshot', '/ws', '-m', 'first'], { url: d.url })).out, 'snapshot #1 of /ws: 1 files, 2 bytes\n');
  await svc(['write', '/ws/f.txt'], { url: d.url, input: 'v2!' });
  await svc(['write', '/ws/g.txt'], { url: d.url, input: 'new' });
  await svc(['workspace', 'snapshot', '/ws'], { url: d.url });
  const log = JSON.parse((await svc(['workspace', 'log', '/ws', '--json'], { url: d.url })).out);
  t.same(log.map((s: { snapshot_number: number }) => s.snapshot_number), [2, 1]);
  t.equal((await svc(['workspace', 'diff', '/ws', '1', '2'], { url: d.url })).out, 'A /ws/g.txt\nM /ws/f.txt\n1 added, 1 modified, 0 deleted\n');
  t.equal((await svc(['workspace', 'restore', '/ws', '1'], { url: d.url })).out, 'restored /ws to snapshot #1: 1 files restored, 1 deleted\n');
  t.equal((await svc(['cat', '/ws/f.txt'], { url: d.url })).out, 'v1');
  const info = JSON.parse((await svc(['workspace', 'info', '/ws', '--json'], { url: d.url })).out);
  t.match(info, { path: '/ws', name: 'W', tags: ['a', 'b'], metadata: { k: 1 } });
  t.match((await svc(['workspace', 'list'], { url: d.url })).out, /\/ws\s+W/);
  const bad = await svc(['workspace', 'register', '/ws2', '--metadata', '[1]'], { url: d.url });
  t.equal(bad.code, 2);
  const dup = await svc(['workspace', 'register', '/ws'], { url: d.url });
  t.match(dup.stderr, /-32001/);
  t.equal((await svc(['workspace', 'unregister', '/ws'], { url: d.url })).out, 'unregistered /ws\n');
  const gone = await svc(['workspace', 'snapshot', '/ws'], { url: d.url });
  t.equal(gone.stderr, 'svc: error -32000: Workspace not registered: /ws\n');
});
