/**
 * @module core/data-lock
 * One daemon per data directory: `<data-dir>/svc.pid` names the daemon using it. Two daemons on
 * one directory would share the LMDB environment (which allows it) and the FUSE journal (which
 * does not: each empties it once its own queue is applied, dropping the other's answered closes).
 * A pid file whose process is gone (kill -9) is taken over.
 */
import { mkdir, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export class DataDirInUseError extends Error {}

/** Whether `pid` runs, and (where /proc tells) runs svc: a pid reused after a reboot does not count. */
async function alive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
  return cmdline === undefined || /svc/.test(cmdline);
}

/** Claim `dataDir` for this process; resolves with the release function. */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  await mkdir(dataDir, { recursive: true });
  const file = join(dataDir, 'svc.pid');
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(file, 'wx', 0o644);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 3) throw err;
      const pid = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && (await alive(pid))) {
        throw new DataDirInUseError(`the data directory ${dataDir} is in use by another svc daemon (pid ${pid}): stop it first, or use another --data-dir`);
      }
      await unlink(file).catch(() => undefined); // left by a daemon that died, or by this process
    }
  }
  return async () => {
    const pid = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
    if (pid === process.pid) await unlink(file).catch(() => undefined);
  };
}
