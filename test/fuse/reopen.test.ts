/**
 * @module test/fuse/reopen
 * A file opened again while the release of its last close is still under way (the kernel sends
 * the release after close(2) has returned): the new open must share the open file the release
 * keeps, not a copy the release lets go. Found by the tree test's remote variant (seed 438): the
 * open took the file the release was letting go, so the truncate made through it was unseen by
 * getattr, the kernel kept the old size, and an append then wrote over the truncated-in zeros.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { fuseSkipReason, shOk, startMountedDaemon, startRemoteMount } from './harness.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

for (const remote of [false, true]) {
  t.test(`truncate right after a close, then an append (${remote ? 'a remote mount' : 'the daemon\'s mount'})`, { skip }, async (t) => {
    const d = await startMountedDaemon(t);
    const mnt = remote ? (await startRemoteMount(t, d.url)).mnt : d.mnt;
    // Node's truncate(path) is open + ftruncate + close; writeFileSync's close is released just after.
    const out = await shOk(`node -e "
const fs = require('fs');
const sizes = [];
for (let i = 0; i < 10; i++) {
  const f = '${mnt}/f' + i;
  fs.writeFileSync(f, Buffer.alloc(2851, 1));
  fs.writeFileSync(f, Buffer.alloc(1365, 3));
  fs.truncateSync(f, 1465);
  const truncated = fs.lstatSync(f).size;
  const fd = fs.openSync(f, 'a');
  fs.writeSync(fd, Buffer.alloc(1712, 2));
  fs.closeSync(fd);
  sizes.push(truncated + '/' + fs.lstatSync(f).size);
}
console.log(sizes.join(' '));
"`);
    t.equal(out.trim(), Array(10).fill('1465/3177').join(' '), 'the size the truncate set, then that plus the append');
    const expected = createHash('sha256').update(Buffer.concat([Buffer.alloc(1365, 3), Buffer.alloc(100), Buffer.alloc(1712, 2)])).digest('hex');
    await shOk(`sync -f '${mnt}/f0'`);
    for (let i = 0; i < 10; i++) t.equal((await d.rpc('get_metadata', { path: `/f${i}` }))?.etag, expected, `f${i}: stored with the zeros the truncate added`);
  });
}
