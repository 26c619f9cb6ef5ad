import t from 'tap';
import { startDaemon, svc } from './harness.js';

const { url, client } = await startDaemon(t);
const run = (args: string[]) => svc(args, { url });
const put = (path: string, content: string) => client.call('write', { path, content: Buffer.from(content) });

t.test('mv, rm, mkdir and rmdir confirm in one line; --json is {success:true}', async (t) => {
  await Promise.all([put('/m/old.txt', 'moving'), put('/m/del.txt', 'bye'), put('/m/keep.txt', 'k'), put('/full/x.txt', 'x')]);
  const [mv, onto, rmJson, gone, mkdir, noParent, notEmpty, mkdirJson] = await Promise.all([
    run(['mv', '/m/old.txt', '/m/new.txt']),
    run(['mv', '/m/keep.txt', '/full/x.txt']),
    run(['rm', '/m/del.txt', '--json']),
    run(['rm', '/m/never.txt']),
    run(['mkdir', '/d/x/y', '-p']),
    run(['mkdir', '/d2/a/b']),
    run(['rmdir', '/full']),
    run(['mkdir', '/d3', '--json']),
  ]);
  t.equal(mv.out, 'moved /m/old.txt -> /m/new.txt\n');
  t.equal((await client.call('read', { path: '/m/new.txt' })).toString(), 'moving');
  t.equal(onto.code, 1, onto.stderr);
  t.equal(onto.stderr, 'svc: error -32001: Destination path already exists: /full/x.txt\n');
  t.same(JSON.parse(rmJson.out), { success: true });
  t.same(await client.call('exists', { path: '/m/del.txt' }), { exists: false });
  t.equal(gone.code, 1, gone.stderr);
  t.equal(gone.stderr, 'svc: error -32000: File not found: /m/never.txt\n');
  t.equal(mkdir.out, 'created /d/x/y/\n');
  t.equal(noParent.code, 1, noParent.stderr);
  t.match(noParent.stderr, /^svc: error -32000: Parent directory not found/);
  t.equal(notEmpty.code, 1, notEmpty.stderr);
  t.equal(notEmpty.stderr, 'svc: error -32005: Directory not empty: /full\n');
  t.same(JSON.parse(mkdirJson.out), { success: true });

  const [mkdirP, again, rmdirR, rmdirJson] = await Promise.all([
    run(['mkdir', '/d/x/y', '-p']),
    run(['mkdir', '/d/x/y']),
    run(['rmdir', '/full', '-r']),
    run(['rmdir', '/d3', '--json']),
  ]);
  t.equal(mkdirP.code, 0, '-p tolerates an existing directory');
  t.equal(again.code, 1, again.stderr);
  t.equal(again.stderr, 'svc: error -32001: Directory already exists: /d/x/y\n');
  t.equal(rmdirR.out, 'removed /full/\n');
  t.same(await client.call('exists', { path: '/full/x.txt' }), { exists: false });
  t.same(JSON.parse(rmdirJson.out), { success: true });
});
