/**
 * @module test/fuse/permissions
 * A remote mount acts as its API key's subject and every operation is checked by the daemon's one
 * permission function: another user's files answer EACCES in the mount, the caller's own work.
 */
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fuseSkipReason, sh, shOk, startMountedDaemon, startRemoteMount, tempDir } from './harness.js';
import { bytes } from '../helpers/daemon.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

const KEYS = { alice: 'sk-fuse-alice-0123456789abcdef0001', bob: 'sk-fuse-bob-0123456789abcdef000002', root: 'sk-fuse-root-0123456789abcdef00003' };
const as = (key: string) => ({ Authorization: `Bearer ${key}` });

t.test('permission denials surface as EACCES in a remote mount', { skip }, async (t) => {
  const cfgDir = tempDir('svc-fuse-auth-');
  t.teardown(() => sh(`rm -rf '${cfgDir}'`));
  const cfg = join(cfgDir, 'auth.json');
  await writeFile(cfg, JSON.stringify({
    api_keys: { [KEYS.alice]: { user_id: 'alice' }, [KEYS.bob]: { user_id: 'bob' }, [KEYS.root]: { user_id: 'root', is_admin: true } },
  }));
  const d = await startMountedDaemon(t, { extraArgs: ['--auth-type', 'static', '--auth-config', cfg] });
  for (const u of ['alice', 'bob']) {
    await d.rpc('mkdir', { path: `/home/${u}`, parents: true, exist_ok: true }, as(KEYS.root));
    await d.rpc('rebac_create', { subject: ['user', u], relation: 'direct_owner', object: ['file', `/home/${u}`] }, as(KEYS.root));
  }
  await d.rpc('write', { path: '/home/bob/secret.txt', content: bytes('bob only\n') }, as(KEYS.bob));
  const r = await startRemoteMount(t, d.url, ['--api-key', KEYS.alice]);
  const m = r.mnt;
  await shOk(`echo mine > '${m}/home/alice/a.txt'`);
  t.equal(await shOk(`cat '${m}/home/alice/a.txt'`), 'mine\n', 'alice works in her home');
  t.match((await sh(`cat '${m}/home/bob/secret.txt'`)).stderr, /Permission denied/, 'reading bob\'s file: EACCES');
  t.match((await sh(`echo x > '${m}/home/bob/new.txt'`)).stderr, /Permission denied/, 'creating in bob\'s home: EACCES');
  t.match((await sh(`rm '${m}/home/bob/secret.txt'`)).stderr, /Permission denied|No such file/, 'deleting bob\'s file refused');
  const secret = await d.rpc('read', { path: '/home/bob/secret.txt' }, as(KEYS.bob));
  t.equal(Buffer.from(secret.data, 'base64').toString(), 'bob only\n', 'bob\'s file untouched');
});
