// The local backend on its own, with the disk look of its watcher held mid-way, so the race
// between an outside-change import and an svc change is exercised deterministically.
import t from 'tap';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildServices } from '../../src/daemon.js';
import { LocalBackend } from '../../src/mounts/local.js';
import { isWithin } from '../../src/core/paths.js';

t.test('a late watcher event does not bring back what svc removed while it looked at the disk', async (t) => {
  const db = mkdtempSync(join(tmpdir(), 'svc-local-db-'));
  const host = mkdtempSync(join(tmpdir(), 'svc-local-host-'));
  const services = buildServices(db, pino({ level: 'silent' }));
  t.teardown(async () => {
    await services.store.close();
    rmSync(db, { recursive: true, force: true });
    rmSync(host, { recursive: true, force: true });
  });
  const { fs } = services;

  let armed = true;
  let seen!: () => void;
  const looking = new Promise<void>((r) => (seen = r));
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const probe = async (p: string) => {
    const st = await lstat(p).catch(() => undefined);
    if (armed && p === join(host, 'd1', 'd2')) {
      armed = false;
      seen();
      await held; // the disk has moved on by the time this answer is used
    }
    return st;
  };
  const backend = new LocalBackend('/x', host, {
    fs, log: pino({ level: 'silent' }), probe,
    ownership: { owns: (p) => isWithin(p, '/x'), holdsOther: () => false },
  });
  fs.addCommitHook(async (events) => {
    for (const e of events) if (isWithin(e.path, '/x') && e.path !== '/x') await backend.apply(e);
  });
  await backend.prepare();
  await backend.start();

  await fs.mkdir('/x/d1/d2', { parents: true });
  t.ok(existsSync(join(host, 'd1', 'd2')));
  await looking; // the watcher saw d1/d2 on disk and is holding that answer
  await fs.rmdir('/x/d1', { recursive: true });
  t.notOk(existsSync(join(host, 'd1')), 'removed on disk');
  release();
  await backend.stop(); // waits for the watcher's queue
  t.notOk(fs.exists('/x/d1'), 'not brought back in svc');
  t.notOk(existsSync(join(host, 'd1')), 'not brought back on disk');
});
