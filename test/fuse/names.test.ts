/**
 * @module test/fuse/names
 * Names that are not UTF-8, through the kernel. svc's paths are strings: the binding used to pass
 * such a name to JS with U+FFFD in place of its bad bytes, so `caf\xe8` opened (and `rm` removed)
 * the file created as `caf\xe9`, and listings showed a name other than the one created. They are
 * now refused with EILSEQ (create, lookup, rename onto, symlink target), as by file systems that
 * keep names in UTF-8; valid UTF-8 names of any script work as before.
 */
import t from 'tap';
import { fuseSkipReason, shOk, startMountedDaemon } from './harness.js';

const skip = fuseSkipReason();
if (skip) console.log(`# ${skip}`);

t.test('a name that is not UTF-8 is refused with EILSEQ and never reaches another file', { skip }, async (t) => {
  const d = await startMountedDaemon(t);
  const out = await shOk(`cd '${d.mnt}' && python3 -c "
import errno, os
def code(f):
    try:
        f(); return 'ok'
    except OSError as e:
        return errno.errorcode[e.errno]
open('caf\\u00e9', 'w').write('first')
print(code(lambda: open(b'caf\\xe9', 'wb')))
print(code(lambda: open(b'caf\\xe8', 'rb')))
print(code(lambda: os.mkdir(b'd\\xff')))
print(code(lambda: os.rename('caf\\u00e9', b'caf\\xe8')))
print(code(lambda: os.symlink(b'to\\xc0\\xaf', 'link')))
print(code(lambda: os.stat(b'\\xed\\xa0\\x80')))
print(open('caf\\u00e9').read(), sorted(os.listdir('.')))
"`);
  t.same(out.trim().split('\n'), [
    'EILSEQ', 'EILSEQ', 'EILSEQ', 'EILSEQ', 'EILSEQ', 'EILSEQ',
    "first ['café']",
  ], 'create, open, mkdir, rename onto, a symlink target, a surrogate: EILSEQ; the UTF-8 name is intact');
});
