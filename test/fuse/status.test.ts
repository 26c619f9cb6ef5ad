/**
 * @module test/fuse/status
 * The status answer names the daemon's own FUSE mount and the binding serving it (GET
 * /api/nfs/status and `svc status`), so a person can tell which binding a mount uses.
 */
import t from 'tap';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuseBinding } from '../../src/native/fuse.js';
import { fuseSkipReason, shOk, startMountedDaemon } from './harness.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

t.test('status names the mount and its binding', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const status = (await (await fetch(`${d.url}/api/nfs/status`)).json()) as { fuse_mount?: { dir: string; binding: string } };
  t.same(status.fuse_mount, { dir: d.mnt, binding: fuseBinding() }, 'GET /api/nfs/status');
  const out = await shOk(`node '${join(ROOT, 'bin', 'svc')}' status --url ${d.url}`);
  t.match(out, new RegExp(`FUSE mount:\\s+${d.mnt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(${fuseBinding()}\\)`), 'svc status');
});
