/**
 * @module test/store/metadata.suite
 * The conformance suite of the storage seam (src/store/types.ts): every MetadataStore + BlobStore
 * adapter runs it (`test/store/<adapter>.test.ts`). It asserts only what the interfaces promise and
 * what the services rely on, never an adapter's internals, so the embedded LMDB store and a
 * PostgreSQL + object-store pair can both pass it.
 *
 * Values are JSON-compatible (objects, arrays, strings, finite numbers, booleans, null): that is
 * all the services store.
 */
import { randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import type { BlobStore, MetadataStore, RangeOptions, Table } from '../../src/store/types.js';

/** One adapter instance over storage of its own. */
export interface StoreFixture {
  readonly store: MetadataStore;
  readonly blobs: BlobStore;
  /** Close this store and open a new one over the same storage (a daemon restart). */
  reopen(): Promise<StoreFixture>;
  /** Close the store if still open and delete its storage. */
  destroy(): Promise<void>;
}

/** Builds a fixture over fresh, empty storage. */
export type MakeStore = () => Promise<StoreFixture>;

const KEYS = ['a', 'b', 'c', 'd', 'e'];

/** Register the suite's subtests on `t`. */
export function metadataStoreSuite(t: Test, makeStore: MakeStore): void {
  /** A fresh fixture, destroyed (in whatever reopened form) when the subtest ends. */
  async function fixture(t: Test): Promise<{ fx: () => StoreFixture; reopen: () => Promise<StoreFixture> }> {
    let current = await makeStore();
    t.teardown(() => current.destroy());
    return {
      fx: () => current,
      reopen: async () => (current = await current.reopen()),
    };
  }

  async function seeded(t: Test, keys = KEYS): Promise<{ fx: StoreFixture; table: Table<number> }> {
    const { fx } = await fixture(t);
    const table = fx().store.table<number>('seeded');
    await fx().store.transact(() => keys.forEach((k, i) => table.put(k, i)));
    return { fx: fx(), table };
  }

  const keysOf = (tbl: Table<unknown>, o: RangeOptions) => [...tbl.keys(o)];
  const rangeKeysOf = (tbl: Table<unknown>, o: RangeOptions) => [...tbl.range(o)].map((e) => e.key);

  t.test('get of an absent key is undefined', async (t) => {
    const { fx } = await fixture(t);
    const table = fx().store.table<string>('things');
    t.equal(table.get('nope'), undefined);
    t.same([...table.range({})], []);
    t.same([...table.keys({})], []);
  });

  t.test('a key too long to store is simply absent: get is undefined, remove a no-op, the transaction commits', async (t) => {
    const { fx } = await fixture(t);
    const { store } = fx();
    const table = store.table<number>('long-keys');
    for (const n of [3000, 10_000, 100_000]) {
      const key = 'k'.repeat(n);
      t.equal(table.get(key), undefined, `get, ${n} chars`);
      await t.resolves(store.transact(() => {
        table.remove(key);
        table.put('after', n);
      }), `remove, ${n} chars, inside a transaction that goes on writing`);
      t.equal(table.get('after'), n, 'the rest of the transaction committed');
    }
  });

  t.test('JSON-compatible values round-trip', async (t) => {
    const { fx } = await fixture(t);
    const table = fx().store.table<unknown>('values');
    const values: Record<string, unknown> = {
      string: 'hello',
      empty: '',
      unicode: 'é 😀 \u0000 日本',
      int: 42,
      negative: -7,
      zero: 0,
      float: 3.25,
      big: Number.MAX_SAFE_INTEGER,
      msTime: 1_790_000_000_123,
      yes: true,
      no: false,
      array: [1, 'two', [3], { four: 4 }],
      emptyArray: [],
      object: { kind: 'file', chunks: ['ab', 'cd'], nested: { n: null, list: [] }, size: 0 },
      emptyObject: {},
    };
    await fx().store.transact(() => {
      for (const [k, v] of Object.entries(values)) table.put(k, v);
    });
    for (const [k, v] of Object.entries(values)) t.same(table.get(k), v, k);
  });

  t.test('put overwrites, remove deletes, removing an absent key is a no-op', async (t) => {
    const { fx } = await fixture(t);
    const { store } = fx();
    const table = store.table<{ n: number }>('rw');
    await store.transact(() => table.put('k', { n: 1 }));
    await store.transact(() => table.put('k', { n: 2 }));
    t.same(table.get('k'), { n: 2 });
    t.same(keysOf(table, {}), ['k'], 'one key, not two');
    await store.transact(() => table.remove('k'));
    t.equal(table.get('k'), undefined);
    await t.resolves(store.transact(() => table.remove('never-there')));
    t.same(keysOf(table, {}), []);
  });

  t.test('a value read back is a copy: mutating it does not change the store', async (t) => {
    const { fx } = await fixture(t);
    const { store } = fx();
    const table = store.table<{ list: number[]; n: number }>('copies');
    await store.transact(() => table.put('k', { list: [1], n: 1 }));
    const v = table.get('k')!;
    v.n = 99;
    v.list.push(2);
    t.same(table.get('k'), { list: [1], n: 1 });
  });

  t.test('tables are separate namespaces; opening a table twice sees the same data', async (t) => {
    const { fx } = await fixture(t);
    const { store } = fx();
    const one = store.table<string>('one');
    const two = store.table<string>('two');
    await store.transact(() => {
      one.put('k', 'from one');
      two.put('k', 'from two');
    });
    t.equal(one.get('k'), 'from one');
    t.equal(two.get('k'), 'from two');
    t.equal(store.table<string>('one').get('k'), 'from one');
    await store.transact(() => one.remove('k'));
    t.equal(two.get('k'), 'from two', 'removing from one table leaves the other');
  });

  t.test('range forward: start inclusive, end exclusive, limit', async (t) => {
    const { table } = await seeded(t);
    const cases: [RangeOptions, string[]][] = [
      [{}, ['a', 'b', 'c', 'd', 'e']],
      [{ start: 'b' }, ['b', 'c', 'd', 'e']],
      [{ end: 'c' }, ['a', 'b']],
      [{ start: 'b', end: 'd' }, ['b', 'c']],
      [{ start: 'bb', end: 'dd' }, ['c', 'd'], ],
      [{ start: 'c', end: 'c' }, []],
      [{ start: 'z' }, []],
      [{ limit: 2 }, ['a', 'b']],
      [{ start: 'b', limit: 2 }, ['b', 'c']],
      [{ start: 'b', end: 'd', limit: 10 }, ['b', 'c']],
    ];
    for (const [o, want] of cases) {
      t.same(keysOf(table, o), want, `keys ${JSON.stringify(o)}`);
      t.same(rangeKeysOf(table, o), want, `range ${JSON.stringify(o)}`);
    }
    t.same([...table.range({ start: 'b', end: 'd' })], [{ key: 'b', value: 1 }, { key: 'c', value: 2 }], 'entries carry values');
  });

  t.test('range reverse: descending from start (inclusive) down to end (exclusive)', async (t) => {
    const { table } = await seeded(t);
    const cases: [RangeOptions, string[]][] = [
      [{ reverse: true }, ['e', 'd', 'c', 'b', 'a']],
      [{ reverse: true, start: 'd' }, ['d', 'c', 'b', 'a']],
      [{ reverse: true, end: 'b' }, ['e', 'd', 'c']],
      [{ reverse: true, start: 'd', end: 'b' }, ['d', 'c']],
      [{ reverse: true, start: 'dd', end: 'bb' }, ['d', 'c']],
      [{ reverse: true, limit: 2 }, ['e', 'd']],
      [{ reverse: true, start: 'd', end: 'a', limit: 2 }, ['d', 'c']],
      // The fs versions listing: everything under a prefix, newest (highest key) first.
      [{ reverse: true, start: 'c\u0001', end: 'c\u0000' }, []],
    ];
    for (const [o, want] of cases) {
      t.same(keysOf(table, o), want, `keys ${JSON.stringify(o)}`);
      t.same(rangeKeysOf(table, o), want, `range ${JSON.stringify(o)}`);
    }
    t.same([...table.range({ reverse: true, limit: 1 })], [{ key: 'e', value: 4 }]);
  });

  t.test('a prefix listed newest first (how fs lists versions)', async (t) => {
    // No key equals the bounds themselves: paths never contain \u0001 (core/paths refuses controls).
    const keys = ['/f', '/f\u00000000000001', '/f\u00000000000002', '/f\u00000000000010', '/f/x', '/f\u0001x', '/fa', '/e\u00000000000001'];
    const { table } = await seeded(t, keys);
    const start = '/f\u0000';
    const end = '/f\u0001';
    t.same(keysOf(table, { start, end }), ['/f\u00000000000001', '/f\u00000000000002', '/f\u00000000000010']);
    t.same(keysOf(table, { start: end, end: start, reverse: true }), ['/f\u00000000000010', '/f\u00000000000002', '/f\u00000000000001']);
  });

  t.test('keys order by UTF-8 bytes, NUL included', async (t) => {
    // UTF-16 order and UTF-8 byte order disagree above U+D7FF: '\ue000' < '😀' in UTF-8, not in UTF-16.
    const keys = [
      'a', 'a\u0000', 'a\u0000b', 'a\u0000z', 'a\u0001', 'a/', 'a/b', 'a0', 'aa', 'b', 'B', 'Z', '0', '/',
      'é', 'e\u0301', '\u00ff', '\u0100', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\uffef', '😀', '𝄞', '\u{10fffd}',
    ];
    const { table } = await seeded(t, [...keys].reverse());
    const utf8Order = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    t.same(keysOf(table, {}), utf8Order);
    t.same(keysOf(table, { reverse: true }), [...utf8Order].reverse());
    // Bounds compare the same way.
    t.same(keysOf(table, { start: '\ue000', end: '\u{10fffd}' }), ['\ue000', '\uffef', '𝄞', '😀']);
    t.same(keysOf(table, { start: '\u{10fffd}', end: '\ue000', reverse: true }), ['\u{10fffd}', '😀', '𝄞', '\uffef']);
    for (const k of keys) t.equal(table.get(k), [...keys].reverse().indexOf(k), `get ${JSON.stringify(k)}`);
  });

  t.test('NUL-separated prefix ranges select exactly one parent (fs key layout)', async (t) => {
    // entries keyed parent + NUL + name: '/d' children are [ '/d\0', '/d\u0001' ).
    const keys = ['/\u0000d', '/\u0000d.txt', '/d\u0000a', '/d\u0000b', '/d-x\u0000y', '/d/sub\u0000c', '/d0\u0000z', '/dé\u0000q'];
    const { table } = await seeded(t, keys);
    t.same(keysOf(table, { start: '/d\u0000', end: '/d\u0001' }), ['/d\u0000a', '/d\u0000b'], 'direct children of /d');
    t.same(keysOf(table, { start: '/d/', end: '/d0' }), ['/d/sub\u0000c'], 'deeper descendants of /d');
    t.same(keysOf(table, { start: '/\u0000', end: '/\u0001' }), ['/\u0000d', '/\u0000d.txt'], 'children of /');
    t.same(keysOf(table, { start: '/', end: '0' }), [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))), 'the whole tree');
  });

  t.test('transact returns the callback result', async (t) => {
    const { fx } = await fixture(t);
    const { store } = fx();
    t.equal(await store.transact(() => 42), 42);
    t.same(await store.transact(() => ({ a: [1, 2] })), { a: [1, 2] });
    t.equal(await store.transact(() => undefined), undefined);
    const table = store.table<number>('r');
    t.equal(await store.transact(() => (table.put('x', 1), 'written')), 'written');
  });

  t.test('a callback sees its own writes (get, range, keys, remove)', async (t) => {
    const { fx } = await fixture(t);
    const { store } = fx();
    const table = store.table<number>('own');
    await store.transact(() => table.put('gone', 0));
    const seen = await store.transact(() => {
      table.put('a', 1);
      table.put('b', 2);
      table.put('a', 3);
      table.remove('gone');
      return {
        a: table.get('a'),
        gone: table.get('gone'),
        keys: [...table.keys({})],
        range: [...table.range({ start: 'a', end: 'c' })],
      };
    });
    t.same(seen, { a: 3, gone: undefined, keys: ['a', 'b'], range: [{ key: 'a', value: 3 }, { key: 'b', value: 2 }] });
    t.same(keysOf(table, {}), ['a', 'b'], 'and so does everyone after the commit');
  });

  t.test('a callback that throws before writing rejects with its error and leaves no trace', async (t) => {
    const { fx } = await fixture(t);
    const { store, blobs } = fx();
    const table = store.table<number>('atomic');
    await store.transact(() => table.put('k', 1));
    class Refused extends Error {
      readonly code = 'REFUSED';
    }
    const thrown = new Refused('checks first');
    const err = await store.transact(() => {
      if (table.get('k') === 1) throw thrown;
      table.put('k', 2);
      table.put('other', 1);
      blobs.put('ab'.repeat(32), Buffer.from('never'));
    }).then(() => undefined, (e: unknown) => e);
    t.equal(err, thrown, 'the very error thrown (services rely on its class and code)');
    t.equal(table.get('k'), 1);
    t.equal(table.get('other'), undefined);
    t.notOk(blobs.has('ab'.repeat(32)));
    t.equal(await store.transact(() => (table.put('k', 3), 'still usable')), 'still usable');
    t.equal(table.get('k'), 3);
  });

  t.test('concurrent transact calls all commit, serialised', async (t) => {
    const { fx } = await fixture(t);
    const { store } = fx();
    const table = store.table<number>('counter');
    const n = 64;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => store.transact(() => {
      // Read-modify-write: lost updates would show as a count below n.
      table.put('count', (table.get('count') ?? 0) + 1);
      table.put(`item-${String(i).padStart(3, '0')}`, i);
      return i;
    })));
    t.same(results, Array.from({ length: n }, (_, i) => i), 'each caller gets its own result');
    t.equal(table.get('count'), n);
    t.equal(keysOf(table, { start: 'item-', end: 'item.' }).length, n);
  });

  t.test('concurrent conditional creates: exactly one wins', async (t) => {
    const { fx } = await fixture(t);
    const { store } = fx();
    const table = store.table<number>('claims');
    const settled = await Promise.allSettled(Array.from({ length: 16 }, (_, i) => store.transact(() => {
      if (table.get('claim') !== undefined) throw new Error('taken');
      table.put('claim', i);
      return i;
    })));
    const won = settled.filter((s) => s.status === 'fulfilled');
    t.equal(won.length, 1);
    t.equal(table.get('claim'), (won[0] as PromiseFulfilledResult<number>).value);
  });

  t.test('blobs: put, get, has, delete', async (t) => {
    const { fx } = await fixture(t);
    const { store, blobs } = fx();
    const hash = 'a'.repeat(64);
    t.notOk(blobs.has(hash));
    t.equal(blobs.get(hash), undefined);
    const data = Buffer.from([0, 1, 2, 0, 255, 0]);
    await store.transact(() => blobs.put(hash, data));
    t.ok(blobs.has(hash));
    const got = blobs.get(hash)!;
    t.ok(Buffer.isBuffer(got));
    t.same(got, data, 'bytes exact, zero bytes included');
    await store.transact(() => blobs.put('e'.repeat(64), new Uint8Array(0)));
    t.ok(blobs.has('e'.repeat(64)), 'an empty blob exists');
    t.equal(blobs.get('e'.repeat(64))?.length, 0);
    const big = Buffer.alloc(100_000, 7);
    await store.transact(() => blobs.put('c'.repeat(64), big));
    t.ok(blobs.get('c'.repeat(64))!.equals(big));
    await store.transact(() => blobs.delete(hash));
    t.notOk(blobs.has(hash));
    t.equal(blobs.get(hash), undefined);
    await t.resolves(store.transact(() => blobs.delete('f'.repeat(64))), 'deleting an absent blob is a no-op');
  });

  t.test('blobs: readRange copies any part of a chunk of any size; get and delete agree', async (t) => {
    const { fx } = await fixture(t);
    const { store, blobs } = fx();
    const sizes = [0, 1, 4095, 65535, 65536, 65537, 131072, 300_000, (1 << 20) - 1, 1 << 20];
    const stored = sizes.map((size, n) => ({ hash: n.toString(16).padStart(64, '0'), data: randomBytes(size) }));
    await store.transact(() => {
      for (const { hash, data } of stored) t.equal(blobs.putIfAbsent(hash, data), true);
    });
    t.same([...blobs.hashes()], stored.map((s) => s.hash), 'hashes() lists each chunk once');
    let seed = 7;
    const next = (n: number) => ((seed = (seed * 48271) % 2147483647) % (n + 1));
    for (const { hash, data } of stored) {
      t.ok(blobs.get(hash)!.equals(data), `get: ${data.length} bytes`);
      const ranges = [[0, data.length], [0, data.length + 10], [data.length, data.length + 5], [data.length + 70_000, data.length + 80_000]];
      for (let k = 0; k < 30; k++) {
        const from = next(data.length);
        ranges.push([from, from + next(data.length - from + 100)]);
      }
      for (const [from, to] of ranges) {
        const target = Buffer.alloc(to! - from! + 3, 0xee);
        const n = blobs.readRange(hash, from!, to!, target, 2);
        const want = data.subarray(Math.min(from!, data.length), Math.min(to!, data.length));
        t.equal(n, want.length, `readRange ${from}..${to} of ${data.length}: count`);
        if (!target.subarray(2, 2 + want.length).equals(want) || target[0] !== 0xee || target[1] !== 0xee || target[2 + want.length] !== 0xee) {
          t.fail(`readRange ${from}..${to} of ${data.length}: exactly those bytes, where asked`);
        }
      }
    }
    t.equal(blobs.readRange('f'.repeat(64), 0, 10, Buffer.alloc(10), 0), undefined, 'a missing chunk: undefined');
    await store.transact(() => {
      for (const { hash } of stored) blobs.delete(hash);
    });
    t.same([...blobs.hashes()], [], 'deleted whole: nothing left');
    for (const { hash } of stored) t.equal(blobs.readRange(hash, 70_000, 80_000, Buffer.alloc(10_000), 0), undefined);
  });

  t.test('blobs: putIfAbsent stores a new chunk, leaves a stored one alone, and says which', async (t) => {
    const { fx } = await fixture(t);
    const { store, blobs } = fx();
    const hash = 'c'.repeat(64);
    const first = Buffer.from('first bytes');
    t.equal(await store.transact(() => blobs.putIfAbsent(hash, first)), true, 'absent: stored');
    t.same(blobs.get(hash), first);
    t.equal(await store.transact(() => blobs.putIfAbsent(hash, Buffer.from('other bytes'))), false, 'present: refused');
    t.same(blobs.get(hash), first, 'the stored bytes are kept');
    // Within one transaction the second call sees the first one's put.
    const both = await store.transact(() => [blobs.putIfAbsent('d'.repeat(64), new Uint8Array([1])), blobs.putIfAbsent('d'.repeat(64), new Uint8Array([2]))]);
    t.same(both, [true, false]);
    t.same(blobs.get('d'.repeat(64)), Buffer.from([1]));
    t.equal(await store.transact(() => blobs.putIfAbsent('e'.repeat(64), new Uint8Array(0))), true, 'an empty chunk is stored');
    t.equal(blobs.get('e'.repeat(64))?.length, 0);
    // Bytes in shared memory (the FUSE mount's chunk buffers): lmdb-js would crash the process on them.
    const shared = Buffer.from(new SharedArrayBuffer(64 * 1024));
    shared.fill(9);
    const shared2 = Buffer.from(new SharedArrayBuffer(64 * 1024));
    shared2.fill(8);
    t.same(await store.transact(() => [blobs.putIfAbsent('f'.repeat(64), shared), blobs.putIfAbsent('0'.repeat(64), shared2)]), [true, true]);
    t.ok(blobs.get('f'.repeat(64))!.equals(Buffer.alloc(64 * 1024, 9)), 'shared-memory bytes stored intact');
    t.ok(blobs.get('0'.repeat(64))!.equals(Buffer.alloc(64 * 1024, 8)), 'and the next one too (the copy buffer is reused)');
  });

  t.test('blobs: hashes() lists every stored chunk in key order, and only those', async (t) => {
    const { fx } = await fixture(t);
    const { store, blobs } = fx();
    t.same([...blobs.hashes()], [], 'empty store');
    const [a, b, c] = ['3'.repeat(64), '1'.repeat(64), '2'.repeat(64)];
    await store.transact(() => {
      blobs.put(a, Buffer.from('a'));
      blobs.put(b, Buffer.from('b'));
      blobs.put(c, new Uint8Array(0));
      store.table<number>('not-a-chunk').put('0'.repeat(64), 1);
    });
    t.same([...blobs.hashes()], [b, c, a]);
    await store.transact(() => blobs.delete(c));
    t.same([...blobs.hashes()], [b, a], 'a deleted chunk is gone from the listing');
  });

  t.test('blobs: a view into a larger buffer stores only the view', async (t) => {
    const { fx } = await fixture(t);
    const { store, blobs } = fx();
    const pool = Buffer.from('....payload....');
    await store.transact(() => blobs.put('b'.repeat(64), pool.subarray(4, 11)));
    t.equal(blobs.get('b'.repeat(64))?.toString(), 'payload');
  });

  t.test('blobs: multi-MiB blobs round-trip, and a read is not overwritten by later reads', async (t) => {
    const { fx } = await fixture(t);
    const { store, blobs } = fx();
    const big = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4096) big.writeUInt32BE(i, i);
    const other = Buffer.alloc(1024 * 1024, 7);
    await store.transact(() => {
      blobs.put('c'.repeat(64), big);
      blobs.put('d'.repeat(64), other);
    });
    const first = blobs.get('c'.repeat(64))!;
    const second = blobs.get('d'.repeat(64))!;
    t.ok(first.equals(big), 'the big blob is exact');
    t.ok(second.equals(other));
    t.ok(blobs.get('c'.repeat(64))!.equals(big));
    t.ok(first.equals(big), 'an earlier result is still intact after other reads');
  });

  t.test('blobs and metadata written in one transact commit together', async (t) => {
    const { fx } = await fixture(t);
    const { store, blobs } = fx();
    const refs = store.table<number>('refs');
    const hash = '1'.repeat(64);
    await store.transact(() => {
      blobs.put(hash, Buffer.from('chunk'));
      refs.put(hash, 1);
    });
    t.ok(blobs.has(hash));
    t.equal(refs.get(hash), 1);
    await store.transact(() => {
      blobs.delete(hash);
      refs.remove(hash);
    });
    t.notOk(blobs.has(hash));
    t.equal(refs.get(hash), undefined);
  });

  t.test('committed data survives close and reopen', async (t) => {
    const { fx, reopen } = await fixture(t);
    const { store, blobs } = fx();
    const table = store.table<{ v: number }>('durable');
    const gone = store.table<number>('durable-removed');
    await store.transact(() => {
      table.put('k1', { v: 1 });
      table.put('k2', { v: 2 });
      gone.put('x', 1);
      blobs.put('9'.repeat(64), Buffer.from('persisted'));
    });
    await store.transact(() => gone.remove('x'));
    const again = await reopen();
    const table2 = again.store.table<{ v: number }>('durable');
    t.same([...table2.range({})], [{ key: 'k1', value: { v: 1 } }, { key: 'k2', value: { v: 2 } }]);
    t.equal(again.store.table<number>('durable-removed').get('x'), undefined, 'a removal is durable too');
    t.equal(again.blobs.get('9'.repeat(64))?.toString(), 'persisted');
    await again.store.transact(() => table2.put('k3', { v: 3 }));
    t.same(table2.get('k3'), { v: 3 }, 'the reopened store takes writes');
  });

  t.test('a non-durable commit is visible as soon as transact resolves, in order with durable ones', async (t) => {
    const { fx } = await fixture(t);
    const { store, blobs } = fx();
    const table = store.table<number>('lazy');
    // Many rounds: a commit observed a moment before readers could see it fails only now and then.
    for (let i = 0; i < 300; i++) {
      const r = await store.transact(() => {
        table.put(`k${String(i).padStart(3, '0')}`, i);
        if (i % 5 === 0) blobs.put(String(i % 10).repeat(64), Buffer.from(`chunk ${i}`));
        return i * 2;
      }, { durable: i % 3 !== 0 });
      if (r !== i * 2) t.fail(`commit ${i}: ${r} is not the callback result`);
      if (table.get(`k${String(i).padStart(3, '0')}`) !== i) t.fail(`commit ${i} not visible when transact resolved`);
    }
    t.equal(keysOf(table, {}).length, 300, 'every commit visible');
    t.equal(blobs.get('5'.repeat(64))?.toString(), 'chunk 295', 'chunks commit with it');
  });

  t.test('a non-durable callback that throws rejects with its error and writes nothing', async (t) => {
    const { fx } = await fixture(t);
    const { store } = fx();
    const table = store.table<number>('lazy-throw');
    const thrown = new Error('checks first');
    const err = await store.transact(() => {
      if (table.get('k') === undefined) throw thrown;
      table.put('k', 1);
    }, { durable: false }).then(() => undefined, (e: unknown) => e);
    t.equal(err, thrown);
    t.equal(table.get('k'), undefined);
    t.equal(await store.transact(() => (table.put('k', 2), 'usable'), { durable: false }), 'usable');
    t.equal(table.get('k'), 2);
  });

  t.test('flushed() waits for every commit made before it, durable or not', async (t) => {
    const { fx } = await fixture(t);
    const { store } = fx();
    const table = store.table<number>('flush');
    await store.flushed(); // nothing pending: resolves
    const settled: number[] = [];
    const pending = Array.from({ length: 8 }, (_, i) =>
      store.transact(() => table.put(`k${i}`, i), { durable: i % 2 === 0 }).then(() => settled.push(i)));
    await store.flushed();
    // A durable transact resolves after its flush; flushed() resolving first would leave it unsettled.
    await new Promise((resolve) => setImmediate(resolve)); // the callbacks chained on those promises
    t.same(settled.slice().sort(), [0, 1, 2, 3, 4, 5, 6, 7], 'every transaction before it has settled');
    await Promise.all(pending);
  });

  t.test('non-durable commits survive close and reopen (close flushes)', async (t) => {
    const { fx, reopen } = await fixture(t);
    const { store } = fx();
    const table = store.table<number>('lazy-reopen');
    for (let i = 0; i < 10; i++) await store.transact(() => table.put(`k${i}`, i), { durable: false });
    await store.transact(() => table.remove('k3'), { durable: false });
    const again = await reopen();
    t.same(keysOf(again.store.table<number>('lazy-reopen'), {}), ['k0', 'k1', 'k2', 'k4', 'k5', 'k6', 'k7', 'k8', 'k9']);
  });

  t.test('describe() names the adapter', async (t) => {
    const { fx } = await fixture(t);
    const m = fx().store.describe();
    t.type(m.type, 'string');
    t.ok(m.type.length > 0);
    t.type(m.instance, 'string');
    const b = fx().blobs.describe();
    t.type(b.type, 'string');
    t.ok(b.type.length > 0);
    t.type(b.location, 'string');
  });
}
