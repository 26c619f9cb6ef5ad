import t from 'tap';
import JSZip from 'jszip';
import { checkZipExpansion } from '../../src/views/zipcheck.js';

const zip = async (files: Record<string, Buffer>, compression: 'STORE' | 'DEFLATE' = 'DEFLATE') => {
  const z = new JSZip();
  for (const [k, v] of Object.entries(files)) z.file(k, v);
  return z.generateAsync({ type: 'nodebuffer', compression });
};

t.test('zip expansion is bounded across all entries, stored or deflated', async (t) => {
  const two = await zip({ a: Buffer.alloc(600, 1), b: Buffer.alloc(600, 2) });
  t.doesNotThrow(() => checkZipExpansion(two, 1200));
  t.throws(() => checkZipExpansion(two, 1199), /expands to more than 1199 bytes/);
  const stored = await zip({ a: Buffer.alloc(600, 1) }, 'STORE');
  t.throws(() => checkZipExpansion(stored, 599), /expands to more than/);
  t.throws(() => checkZipExpansion(Buffer.from('not a zip at all, just text'), 1e6), /not a zip file/);
  // An entry whose header claims less than it inflates to.
  const liar = Buffer.from(two);
  const cd = liar.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
  liar.writeUInt32LE(10, cd + 24);
  t.throws(() => checkZipExpansion(liar, 1e6), /size does not match/);
});
