/**
 * @module views/zipcheck
 * A bound on what a zip-based document (docx, xlsx, pptx, odt, ods, odp, epub) expands to, checked
 * before any library opens it. The worker's heap limit does not cover ArrayBuffers, and a zip of a
 * few MiB can inflate to many GiB: every entry is inflated here once with node's zlib, whose
 * `maxOutputLength` stops at the remaining budget, and its output is thrown away at once. The
 * libraries then inflate the same bytes to the same, now known, sizes.
 */
import { inflateRawSync } from 'node:zlib';

/** Throws unless every entry of the zip in `data` inflates to at most `maxTotal` bytes in all. */
export function checkZipExpansion(data: Uint8Array, maxTotal: number): void {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const eocd = findEndOfDirectory(buf);
  let count = buf.readUInt16LE(eocd + 10);
  let offset = buf.readUInt32LE(eocd + 16);
  if (count === 0xffff || offset === 0xffffffff) {
    // ZIP64: the ZIP64 end of central directory record, found through its locator just before.
    const loc = eocd - 20;
    if (loc < 0 || buf.readUInt32LE(loc) !== 0x07064b50) throw new Error('not a zip file (bad ZIP64 locator)');
    const rec = Number(buf.readBigUInt64LE(loc + 8));
    if (rec + 56 > buf.length || buf.readUInt32LE(rec) !== 0x06064b50) throw new Error('not a zip file (bad ZIP64 record)');
    count = Number(buf.readBigUInt64LE(rec + 32));
    offset = Number(buf.readBigUInt64LE(rec + 48));
  }
  let left = maxTotal;
  for (let i = 0, p = offset; i < count; i++) {
    if (p + 46 > buf.length || buf.readUInt32LE(p) !== 0x02014b50) throw new Error('not a zip file (bad central directory)');
    const method = buf.readUInt16LE(p + 10);
    let compressed = buf.readUInt32LE(p + 20);
    let size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    let local = buf.readUInt32LE(p + 42);
    if (size === 0xffffffff || compressed === 0xffffffff || local === 0xffffffff) {
      ({ size, compressed, local } = zip64Sizes(buf, p + 46 + nameLen, extraLen, { size, compressed, local }));
    }
    p += 46 + nameLen + extraLen + commentLen;
    if (local + 30 > buf.length || buf.readUInt32LE(local) !== 0x04034b50) throw new Error('not a zip file (bad local header)');
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    if (start + compressed > buf.length) throw new Error('not a zip file (entry past the end)');
    let out: number;
    if (method === 0) out = compressed;
    else if (method === 8) {
      try {
        out = inflateRawSync(buf.subarray(start, start + compressed), { maxOutputLength: Math.max(1, left) }).length;
      } catch (err) {
        if (err instanceof RangeError) throw new Error(`it expands to more than ${maxTotal} bytes`);
        throw err;
      }
    } else continue; // A method the readers do not support either: they refuse the file themselves.
    if (out !== size) throw new Error('not a zip file (an entry\'s size does not match its header)');
    left -= out;
    if (left < 0) throw new Error(`it expands to more than ${maxTotal} bytes`);
  }
}

function findEndOfDirectory(buf: Buffer): number {
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) return i;
  }
  throw new Error('not a zip file');
}

/** The ZIP64 extended information extra field (0x0001): the 64-bit values, in order, of the fields set to 0xffffffff. */
function zip64Sizes(buf: Buffer, at: number, len: number, v: { size: number; compressed: number; local: number }) {
  for (let p = at; p + 4 <= at + len;) {
    const id = buf.readUInt16LE(p);
    const size = buf.readUInt16LE(p + 2);
    if (id === 0x0001) {
      let q = p + 4;
      const next = () => { const n = Number(buf.readBigUInt64LE(q)); q += 8; return n; };
      return {
        size: v.size === 0xffffffff ? next() : v.size,
        compressed: v.compressed === 0xffffffff ? next() : v.compressed,
        local: v.local === 0xffffffff ? next() : v.local,
      };
    }
    p += 4 + size;
  }
  throw new Error('not a zip file (ZIP64 sizes missing)');
}
