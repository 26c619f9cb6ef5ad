import t from 'tap';
import {
  normalizePath, normalizeFilePath, parentOf, baseName, ancestorsOf, isWithin, relativeTo,
  MAX_NAME_BYTES, MAX_PATH_BYTES,
} from '../../src/core/paths.js';
import { toErrno, type SvcError } from '../../src/core/errors.js';

t.test('normalises the WIRE.md way', async (t) => {
  t.equal(normalizePath(' workspace//x2.txt/ '), '/workspace/x2.txt');
  t.equal(normalizePath('/'), '/');
  const cases: [string, string][] = [
    ['a', '/a'], // leading slash added
    ['a/b/c', '/a/b/c'],
    ['/a/b/', '/a/b'], // trailing slash dropped
    ['//a///b//', '/a/b'], // runs of slashes collapsed
    ['\t /a/b \n', '/a/b'], // surrounding whitespace trimmed
    ['///', '/'],
    ['/a b/c d.txt', '/a b/c d.txt'], // inner spaces are fine
    ['/.hidden/..dots/a.', '/.hidden/..dots/a.'], // dots are only refused as whole segments
    ['/a/...', '/a/...'],
  ];
  for (const [input, want] of cases) t.equal(normalizePath(input), want, JSON.stringify(input));
});

t.test('normalisation is idempotent', async (t) => {
  for (const p of ['/a/b', 'x//y/', ' /é/😀 ']) {
    const once = normalizePath(p);
    t.equal(normalizePath(once), once, p);
  }
});

t.test('rejects hostile paths with -32002', async (t) => {
  const bad = [
    '', '  ', '\t\n',
    '/a/../b', '/a/./b', '..', '.', '/..', '/a/..', './a', '../a',
    '/a\u0000b', '/a\nb', '/a\rb', '/a\tb', '/a\u001bb', '/a\u007fb',
    '/ a/b', '/a /b', '/a/ b/c', '/a/b /c',
    '/' + 'x'.repeat(10000),
  ];
  for (const p of bad) {
    t.throws(() => normalizePath(p), { code: -32002 }, JSON.stringify(p.slice(0, 20)));
    t.throws(() => normalizeFilePath(p), { code: -32002 }, `file: ${JSON.stringify(p.slice(0, 20))}`);
  }
});

t.test('a rejection carries the offending input and a readable message', async (t) => {
  const err = catchErr(() => normalizePath('/a/../b'));
  t.equal(err.code, -32002);
  t.same(err.data, { path: '/a/../b' });
  t.match(err.message, /\.\./);
  t.match(catchErr(() => normalizePath('   ')).message, /empty/i);
  t.match(catchErr(() => normalizePath('/a\u0000b')).message, /control/i);
  t.match(catchErr(() => normalizePath('/a /b')).message, /space/i);
});

t.test('a non-string path is -32002, not a crash', async (t) => {
  for (const v of [undefined, null, 42, {}, ['/a']]) {
    t.throws(() => normalizePath(v as unknown as string), { code: -32002 }, String(v));
  }
});

t.test('the root is a directory, never a file path', async (t) => {
  t.equal(normalizePath('/'), '/');
  t.equal(normalizePath('//'), '/');
  t.throws(() => normalizeFilePath('/'), { code: -32002 });
  t.throws(() => normalizeFilePath(' // '), { code: -32002 });
  t.equal(normalizeFilePath('a/'), '/a');
});

t.test('over-long names and paths are -32002 with errno ENAMETOOLONG', async (t) => {
  const longestName = 'n'.repeat(MAX_NAME_BYTES);
  t.equal(normalizePath('/' + longestName), '/' + longestName, 'a 255-byte name is fine');
  // Limits count UTF-8 bytes, not UTF-16 code units: 128 × 'é' is 128 chars but 256 bytes.
  const wideName = 'é'.repeat(128);
  t.equal(wideName.length, 128);
  for (const name of ['n'.repeat(MAX_NAME_BYTES + 1), wideName, '😀'.repeat(64)]) {
    const err = catchErr(() => normalizePath('/dir/' + name));
    t.equal(err.code, -32002);
    t.equal(err.data?.errno, 'ENAMETOOLONG');
    t.equal(toErrno(err), 'ENAMETOOLONG');
  }

  // A path of exactly MAX_PATH_BYTES is fine; one byte more is not.
  const segment = 'p'.repeat(99); // '/' + 99 = 100 bytes per segment
  const base = ('/' + segment).repeat(Math.floor(MAX_PATH_BYTES / 100) - 1); // 1800 bytes
  const fill = MAX_PATH_BYTES - Buffer.byteLength(base) - 1;
  const exact = base + '/' + 'q'.repeat(fill);
  t.equal(Buffer.byteLength(exact), MAX_PATH_BYTES);
  t.equal(normalizePath(exact), exact);
  const err = catchErr(() => normalizePath(exact + 'q'));
  t.equal(err.code, -32002);
  t.equal(err.data?.errno, 'ENAMETOOLONG');
  t.equal(toErrno(err), 'ENAMETOOLONG');
  // Slashes that normalisation collapses do not count against the limit.
  t.equal(normalizePath(exact.replaceAll('/', '//')), exact);
});

t.test('other rejections map to EINVAL for FUSE', async (t) => {
  t.equal(toErrno(catchErr(() => normalizePath('/a/../b'))), 'EINVAL');
});

t.test('unicode names are kept exactly as given (no NFC/NFD folding)', async (t) => {
  const nfc = '/caf\u00e9.txt';
  const nfd = '/cafe\u0301.txt';
  t.equal(normalizePath(nfc), nfc);
  t.equal(normalizePath(nfd), nfd);
  t.not(normalizePath(nfc), normalizePath(nfd), 'NFC and NFD spellings stay distinct names');
  for (const p of ['/日本語/ファイル.md', '/emoji/😀🎉', '/Ελληνικά/Ω', '/mixed/a\u200bb', '/rtl/שלום']) {
    t.equal(normalizePath(p), p, p);
  }
});

t.test('parentOf / baseName', async (t) => {
  t.equal(parentOf('/a/b/c'), '/a/b');
  t.equal(parentOf('/a'), '/');
  t.equal(parentOf('/'), '/');
  t.equal(baseName('/a/b/c.txt'), 'c.txt');
  t.equal(baseName('/a'), 'a');
  t.equal(baseName('/'), '');
});

t.test('ancestorsOf lists outermost first, without / and without the path itself', async (t) => {
  t.same(ancestorsOf('/a/b/c'), ['/a', '/a/b']);
  t.same(ancestorsOf('/a'), []);
  t.same(ancestorsOf('/'), []);
  t.same(ancestorsOf('/x y/é/😀/f'), ['/x y', '/x y/é', '/x y/é/😀']);
});

t.test('isWithin compares whole components', async (t) => {
  t.ok(isWithin('/a', '/a'), 'a directory is within itself');
  t.ok(isWithin('/a/b', '/a'));
  t.ok(isWithin('/a/b/c', '/a'));
  t.notOk(isWithin('/ab', '/a'), 'a sibling sharing a prefix is not inside');
  t.notOk(isWithin('/a', '/a/b'));
  t.notOk(isWithin('/b/a', '/a'));
  t.ok(isWithin('/', '/'));
  t.ok(isWithin('/anything/at/all', '/'));
});

t.test('relativeTo', async (t) => {
  t.equal(relativeTo('/a/b/c', '/a'), 'b/c');
  t.equal(relativeTo('/a', '/a'), '');
  t.equal(relativeTo('/a/b', '/'), 'a/b');
  t.equal(relativeTo('/', '/'), '');
});

function catchErr(fn: () => unknown): SvcError {
  try {
    fn();
  } catch (err) {
    return err as SvcError;
  }
  throw new Error('expected a throw');
}
