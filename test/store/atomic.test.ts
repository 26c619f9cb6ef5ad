/**
 * @module test/store/atomic
 * A transaction is all or nothing: a callback that throws leaves nothing of what it wrote, durable
 * or not, and the transactions batched with it are committed as usual; inside one, atomically()
 * undoes only what its own callback wrote (one refused item of a FUSE batch).
 */
import t from 'tap';
import { makeFs } from '../fs/fixture.js';

for (const durable of [true, false]) {
  t.test(`a ${durable ? 'durable' : 'non-durable'} transaction whose callback throws leaves nothing of what it wrote`, async (t) => {
    const { store } = makeFs(t);
    const table = store.table<number>('atomic');
    const before = store.transact(() => table.put('before', 1), { durable });
    const failed = t.rejects(store.transact(() => {
      table.put('a', 1);
      table.put('b', 2);
      throw new Error('half-way');
    }, { durable }), /half-way/);
    const after = store.transact(() => table.put('after', 3), { durable });
    await before;
    await failed;
    await after;
    t.equal(table.get('a'), undefined, 'the first put is rolled back');
    t.equal(table.get('b'), undefined, 'and the second');
    t.equal(table.get('before'), 1, 'the transaction queued before it is committed');
    t.equal(table.get('after'), 3, 'and the one after it');
  });
}

t.test('inside a transaction, atomically() undoes only what its own callback wrote when it throws', async (t) => {
  const { store } = makeFs(t);
  const table = store.table<number>('atomic');
  const out = await store.transact(() => {
    table.put('kept-before', 1);
    let refused: unknown;
    try {
      store.atomically(() => {
        table.put('half', 2);
        throw new Error('refused half-way');
      });
    } catch (err) {
      refused = err;
    }
    const value = store.atomically(() => {
      table.put('whole', 3);
      return 'done';
    });
    table.put('kept-after', 4);
    return { refused, value };
  });
  t.match(out.refused, /refused half-way/, 'the throw reaches the caller');
  t.equal(out.value, 'done', 'a callback that returns gives its value');
  t.equal(table.get('half'), undefined, 'what the refused callback wrote is undone');
  t.same([table.get('kept-before'), table.get('whole'), table.get('kept-after')], [1, 3, 4], 'the rest of the transaction is committed');
});
