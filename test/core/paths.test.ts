import t from 'tap';
import { normalizePath, normalizeFilePath } from '../../src/core/paths.js';

t.test('normalises the WIRE.md way', async (t) => {
  t.equal(normalizePath(' workspace//x2.txt/ '), '/workspace/x2.txt');
  t.equal(normalizePath('/'), '/');
});

t.test('rejects hostile paths with -32002', async (t) => {
  for (const bad of ['', '  ', '/a/../b', '/a/./b', '/a\u0000b', '/a\nb', '/ a/b', '/' + 'x'.repeat(10000)]) {
    t.throws(() => normalizeFilePath(bad), { code: -32002 }, JSON.stringify(bad.slice(0, 20)));
  }
});
