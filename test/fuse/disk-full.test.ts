/**
 * @module test/fuse/disk-full
 * A daemon whose data directory's disk fills up (a small tmpfs): the mount answers ENOSPC ("No space
 * left on device") for what cannot be stored, RPC answers -32603, and the daemon goes on serving
 * everything stored before. lmdb-js leaves promises of a failed commit unobserved; the daemon used
 * to end on them.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fuseSkipReason, sh, shOk, startMountedDaemon } from './harness.js';
import { smallDisk, smallDiskSkipReason } from '../helpers/small-disk.js';

const skip = fuseSkipReason() ?? smallDiskSkipReason();
if (skip) console.log(`# ${skip}`);

t.test('a full disk under the data directory', { skip }, async (t) => {
  const disk = smallDisk(t, 48);
  const d = await startMountedDaemon(t, { dataDir: join(disk, 'data') });
  const m = d.mnt;
  await shOk(`echo before > '${m}/before.txt'`);

  // Files of 16 MB of fresh bytes until one does not fit.
  let refused = '';
  for (let i = 0; i < 6 && !refused; i++) {
    const r = await sh(`head -c 16000000 /dev/urandom > '${m}/big${i}.bin'`);
    if (r.code !== 0) refused = r.stderr;
  }
  t.match(refused, /No space left on device/, 'the mount says ENOSPC, not EIO');
  t.equal(await shOk(`cat '${m}/before.txt'`), 'before\n', 'what was stored before reads back');
  t.match(await d.rpc('get_metadata', { path: '/before.txt' }), { size: 7 }, 'RPC still answers');

  let rpcError: unknown;
  for (let i = 0; i < 6 && !rpcError; i++) {
    await d.rpc('write', { path: `/rpc${i}.bin`, content: { __type__: 'bytes', data: randomBytes(6_000_000).toString('base64') } })
      .catch((err: unknown) => (rpcError = err));
  }
  t.match(rpcError, { code: -32603 }, 'an RPC write that cannot be stored is an internal error');
  t.equal((await sh(`ls '${m}'`)).code, 0, 'the mount still serves');
  t.equal(await d.stop(), 0, 'and the daemon stops cleanly');
});
