import t from 'tap';
import { execFileSync } from 'node:child_process';
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { open as openLmdb } from 'lmdb';
import { DROP_BEHIND_BYTES, isLmdbCommitFailure, LmdbStore, PIECE_BYTES } from '../../src/store/lmdb/index.js';
import { cacheDropper } from '../../src/native/fuse.js';
import { StoreWriteError } from '../../src/store/types.js';
import { smallDisk, smallDiskSkipReason } from '../helpers/small-disk.js';
import { metadataStoreSuite, type StoreFixture } from './metadata.suite.js';

function open(dir: string): StoreFixture {
  const store = new LmdbStore(dir);
  let closed = false;
  const close = async () => {
    if (!closed) await store.close();
    closed = true;
  };
  return {
    store,
    blobs: store.blobs,
    reopen: async () => (await close(), open(dir)),
    destroy: async () => {
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

metadataStoreSuite(t, async () => open(mkdtempSync(join(tmpdir(), 'svc-lmdb-'))));

t.test('lmdb: describe() reports the embedded store and its location', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lmdb-'));
  const fx = open(dir);
  t.teardown(() => fx.destroy());
  t.equal(fx.store.describe().type, 'lmdb');
  t.match(fx.store.describe().instance, dir);
  t.equal(fx.blobs.describe().type, 'lmdb-cas');
});

t.test('lmdb: a commit the full disk cannot take fails with ENOSPC; the store goes on', { skip: smallDiskSkipReason() }, async (t) => {
  const dir = join(smallDisk(t, 24), 'db');
  const store = new LmdbStore(dir);
  t.teardown(() => store.close().catch(() => undefined));
  const table = store.table<{ n: number }>('t');
  await store.transact(() => table.put('kept', { n: 1 }));
  let failure: unknown;
  for (let i = 0; i < 12 && !failure; i++) {
    const bytes = randomBytes(4 * 1024 * 1024);
    await store.transact(() => store.blobs.put(`chunk${i}`, bytes), { durable: i % 2 === 0 }).catch((err: unknown) => (failure = err));
  }
  t.ok(failure instanceof StoreWriteError, 'the failure is a StoreWriteError');
  t.match(failure, { code: 'ENOSPC', message: /disk .* is full/ });
  t.same(table.get('kept'), { n: 1 }, 'what was committed before is there');
  await store.transact(() => table.put('after', { n: 2 }));
  t.same(table.get('after'), { n: 2 }, 'a small commit still goes through');
  t.notOk(isLmdbCommitFailure(new Error('something else')));
});

t.test('lmdb: drop-behind drops what the data file grew by, once flushed, every 64 MiB', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lmdb-'));
  const drops: [number, number, number][] = [];
  const store = new LmdbStore(dir, { dropCached: async (fd, offset, length) => (drops.push([fd, offset, length]), 0) });
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const size = () => statSync(join(dir, 'db', 'data.mdb')).size;
  const start = size();
  const put = async (mib: number) => {
    for (let i = 0; i < mib; i++) await store.transact(() => store.blobs.put(`c${drops.length}-${i}-${Math.random()}`, randomBytes(1 << 20)));
    await store.flushed();
  };
  await put(8);
  t.same(drops, [], 'nothing dropped after 8 MiB');
  await put(DROP_BEHIND_BYTES / (1 << 20));
  t.equal(drops.length, 1, 'one drop once the file grew by 64 MiB');
  t.equal(drops[0]![1], start, 'from where the file ended when the store opened');
  t.ok(drops[0]![2] >= DROP_BEHIND_BYTES, `at least 64 MiB (${drops[0]![2]} bytes)`);
  t.ok(drops[0]![1] + drops[0]![2] <= size(), 'not past where the file ends');
  await put(2);
  t.equal(drops.length, 1, 'and nothing more for the next 2 MiB');
});

t.test('lmdb: without a dropper nothing is opened or dropped', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lmdb-'));
  const store = new LmdbStore(dir);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (let i = 0; i < 70; i++) await store.transact(() => store.blobs.put(`c${i}`, randomBytes(1 << 20)));
  await store.close();
  t.pass('writes and closes');
});

/** Pages of `file` in the page cache (mincore through Python's ctypes), or undefined without python3. */
function residentPages(file: string): number | undefined {
  const script = [
    'import ctypes, os, sys',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'libc.mmap.restype = ctypes.c_void_p',
    'libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]',
    'libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]',
    'fd = os.open(sys.argv[1], os.O_RDONLY); size = os.fstat(fd).st_size',
    'page = os.sysconf("SC_PAGE_SIZE"); vec = ctypes.create_string_buffer((size + page - 1) // page)',
    'addr = libc.mmap(None, size, 1, 1, fd, 0)',
    'assert libc.mincore(addr, size, vec) == 0',
    'print(sum(b & 1 for b in vec.raw))',
  ].join('\n');
  try {
    return Number(execFileSync('python3', ['-c', script, file]).toString().trim());
  } catch {
    return undefined;
  }
}

const drop = cacheDropper();
t.test('the native dropper takes a file\'s clean pages out of the page cache', { skip: drop ? false : 'svc\'s native addon is not built here' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-drop-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'f');
  const fd = openSync(file, 'w+');
  t.teardown(() => closeSync(fd));
  writeSync(fd, randomBytes(16 << 20));
  fsyncSync(fd);
  const before = residentPages(file);
  if (before === undefined) {
    t.comment('python3 is not installed (it counts the pages): only the answers are checked');
    t.equal(await drop!(fd, 0, 0), 0);
    return;
  }
  t.ok(before > 0, `written and synced: ${before} pages cached`);
  t.equal(await drop!(fd, 4 << 20, 8 << 20), 0, 'posix_fadvise answers 0');
  const after = residentPages(file)!;
  t.ok(after <= before - (8 << 20) / 4096, `the 8 MiB asked for are gone: ${after} pages cached`);
  t.ok(after >= before - (8 << 20) / 4096 - 16, 'and only those');
  t.equal(await drop!(1 << 30, 0, 0), osConstants.errno.EBADF, 'a descriptor not open: EBADF');
  t.throws(() => drop!(-1, 0, 0), TypeError, 'a negative number: a TypeError');
});

t.test('lmdb: has() answers by key alone: the next key is not a match, and a put in the same transaction counts', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lmdb-'));
  const store = new LmdbStore(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const [a, b, c] = ['a', 'b', 'c'].map((x) => x.repeat(64));
  await store.transact(() => store.blobs.put(b!, randomBytes(1 << 20)));
  t.same([store.blobs.has(a!), store.blobs.has(b!), store.blobs.has(c!), store.blobs.has(b!.slice(0, 63))], [false, true, false, false]);
  const inside = await store.transact(() => {
    store.blobs.put(c!, randomBytes(10));
    return store.blobs.has(c!);
  });
  t.equal(inside, true, 'seen inside the transaction that put it');
});

t.test('lmdb: a chunk is stored in 64 KiB pieces, and a store written before pieces (one value a chunk) still reads, ranges included, and deletes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lmdb-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const fresh = randomBytes(1 << 20);
  const old = randomBytes((1 << 20) - 5);
  const [a, b] = ['a', 'b'].map((x) => x.repeat(64)) as [string, string];
  let store = new LmdbStore(dir);
  await store.transact(() => store.blobs.put(a, fresh));
  await store.close();
  // What an earlier release wrote: the whole chunk as one value under its hash.
  const raw = openLmdb({ path: join(dir, 'db'), compression: false, maxDbs: 64, mapSize: 2 ** 40 });
  const chunks = raw.openDB<Buffer, string>({ name: 'chunks', encoding: 'binary' });
  t.same([...chunks.getKeys({})], [a, ...Array.from({ length: 15 }, (_, p) => `${a}.${(p + 1).toString(16).padStart(4, '0')}`)], 'the new chunk: sixteen pieces');
  t.equal(chunks.get(a)!.length, PIECE_BYTES);
  await chunks.put(b, old);
  await raw.close();
  store = new LmdbStore(dir);
  t.teardown(() => store.close());
  t.same([...store.blobs.hashes()], [a, b]);
  t.ok(store.blobs.get(b)!.equals(old), 'get of the one-value chunk');
  for (const [from, to] of [[0, 10], [70_000, 200_000], [old.length - 3, old.length + 9], [old.length + 1, old.length + 9]] as const) {
    const target = Buffer.alloc(to - from);
    const n = store.blobs.readRange(b, from, to, target, 0);
    t.ok(target.subarray(0, n).equals(old.subarray(from, to)) && n === Math.max(0, Math.min(to, old.length) - from), `readRange ${from}..${to}`);
  }
  t.equal(await store.transact(() => store.blobs.putIfAbsent(b, old)), false, 'stored already: left as it is');
  await store.transact(() => store.blobs.delete(b));
  t.equal(store.blobs.get(b), undefined);
  t.ok(store.blobs.get(a)!.equals(fresh), 'the other chunk untouched');
});
