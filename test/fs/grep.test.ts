// grep runs on worker threads (src/fs/grep.ts): runaway regexes are stopped, batching never changes results.
import t from 'tap';
import { makeFs, b } from './fixture.js';
import { CHUNK_SIZE } from '../../src/fs/service.js';
import { Grepper, type GrepFile } from '../../src/fs/grep.js';

const EVIL = 'a'.repeat(40) + '!';

t.test('a pattern that backtracks exponentially ends at once when the linear engine can take it', async (t) => {
  const { fs } = makeFs(t);
  await fs.write('/r/a.txt', b(`${EVIL}\nplain\n`));
  t.same(await fs.grep({ pattern: '(a+)+$' }), []);
  t.same(await fs.grep({ pattern: '^(\\w+\\s?)*$', path: '/r' }).then((h) => h.map((x) => x.line)), [2]);
});

t.test('one the linear engine cannot take is stopped after the stall budget with -32602, and grep goes on working', async (t) => {
  const { fs } = makeFs(t, { grep: { stallMs: 300 } });
  await fs.write('/r/a.txt', b(`${EVIL}\n`));
  await fs.write('/r/b.txt', b('needle\n'));
  let turns = 0;
  const tick = setInterval(() => turns++, 10);
  await t.rejects(fs.grep({ pattern: '(a+)+$', ignoreCase: true }), {
    code: -32602, data: { param: 'pattern' }, message: /stopped after 300 ms.*backtracks/,
  });
  clearInterval(tick);
  t.ok(turns >= 5, `the event loop kept turning while the worker backtracked (${turns} turns)`);
  t.same(await fs.grep({ pattern: 'NEEDLE', ignoreCase: true }), [{ file: '/r/b.txt', line: 1, content: 'needle', match: 'needle' }]);
  // Backreferences are never linear: the same budget applies.
  await t.rejects(fs.grep({ pattern: '^(a+)+\\1!$x' }), { code: -32602 });
});

t.test('tiny batches give exactly the results of the default ones', async (t) => {
  const big = makeFs(t);
  const tiny = makeFs(t, { grep: { batchBytes: 1 } });
  const files: [string, Buffer][] = [
    ['/a.txt', b('x one\nno\nx two\n')],
    ['/b/c.txt', b('nothing here\n')],
    ['/b/d.bin', Buffer.from([0x78, 0x20, 0xff, 0xfe, 0x0a])],
    // Two chunks: a line straddles the boundary; a match on each side.
    ['/big.txt', Buffer.concat([b('x head\n'), Buffer.alloc(CHUNK_SIZE - 10, 0x2e), b('\nx tail\n')])],
    ['/crlf.txt', b('x crlf\r\nlast x')],
    ['/z.txt', b('x\nx\nx\n')],
  ];
  for (const fx of [big, tiny]) for (const [p, c] of files) await fx.fs.write(p, c);
  for (const max of [1, 2, 3, 4, 5, 8, 9, 100]) {
    const want = await big.fs.grep({ pattern: '^x|x$', maxResults: max });
    t.same(await tiny.fs.grep({ pattern: '^x|x$', maxResults: max }), want, `max_results ${max}`);
    t.equal(want.length, Math.min(max, 9));
  }
  t.same((await tiny.fs.grep({ pattern: 'tail' })).map((h) => [h.file, h.line]), [['/big.txt', 3]]);
});

t.test('a file that goes away while grep reads it is left out, the others are not', async (t) => {
  const grepper = new Grepper({ batchBytes: 1 });
  t.teardown(() => grepper.close());
  const file = (path: string, chunks: string[], goneAfter?: number): GrepFile => ({
    path,
    chunkCount: chunks.length,
    chunkSize: (i) => Buffer.byteLength(chunks[i]!),
    chunkInto: (i, target, at) => goneAfter === undefined || i < goneAfter ? (target.set(Buffer.from(chunks[i]!), at), true) : false,
  });
  const hits = await grepper.run({
    pattern: 'hit', ignoreCase: false, max: 100, maxLine: 1 << 20,
    files: [file('/a', ['hit 1\n', 'hit 2\n']), file('/gone', ['hit 3\n', 'hit 4\n'], 1), file('/c', ['hit 5\n'])],
  });
  t.same(hits.map((h) => h.file), ['/a', '/a', '/c']);
});

t.test('greps beyond the worker limit wait their turn, also behind one that is stopped', async (t) => {
  const { fs } = makeFs(t, { grep: { stallMs: 300, maxWorkers: 1 } });
  await fs.write('/r/a.txt', b(`${EVIL}\n`));
  await fs.write('/r/b.txt', b('needle one\nneedle two\n'));
  const evil = fs.grep({ pattern: '(a+)+$', ignoreCase: true });
  const fine = Array.from({ length: 5 }, (_, i) => fs.grep({ pattern: 'needle', maxResults: 1 + (i % 2) }));
  await t.rejects(evil, { code: -32602 });
  const results = await Promise.all(fine);
  t.same(results.map((r) => r.length), [1, 2, 1, 2, 1], 'each queued grep ran, with its own max_results');
  t.same(await fs.grep({ pattern: 'two' }), [{ file: '/r/b.txt', line: 2, content: 'needle two', match: 'two' }]);
});

t.test('reads of other files while a grep waits for its worker do not change what it searches', async (t) => {
  // Small batches: grep waits for its worker between chunks, and reads run meanwhile. Each chunk
  // must be copied when it goes into a batch, not looked at earlier and copied after the wait.
  const { fs } = makeFs(t, { grep: { batchBytes: 4096 } });
  const lines = (word: string, n: number) => b(Array.from({ length: n }, (_, i) => `${word} ${i}\n`).join(''));
  for (let i = 0; i < 12; i++) await fs.write(`/g/f${i}.txt`, lines('needle', 400));
  await fs.write('/other.txt', lines('decoy!', 400));
  let reading = true;
  const reader = (async () => {
    while (reading) {
      fs.read('/other.txt');
      await new Promise((r) => setImmediate(r));
    }
  })();
  const hits = await fs.grep({ pattern: '^needle', path: '/g', maxResults: 10_000 });
  reading = false;
  await reader;
  t.equal(hits.length, 12 * 400, 'every line of every file');
  t.notOk(hits.some((h) => !h.content.startsWith('needle')), 'no bytes of the file read meanwhile');
});
