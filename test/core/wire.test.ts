import t from 'tap';
import { z } from 'zod';
import {
  bytesParam, datetimeParam, timedeltaParam, encodeValue, decodeValue, decodeBase64, wireBytes,
} from '../../src/core/wire.js';
import { defineMethod, parseParams } from '../../src/core/method.js';

const bytesObj = (data: string) => ({ __type__: 'bytes', data });

// A method as the fs table declares it, to see the -32602 a client gets.
const echo = defineMethod({
  name: 'echo', access: 'user', description: 'test',
  params: z.strictObject({ content: bytesParam, at: datetimeParam.optional(), ttl: timedeltaParam.optional() }),
  handler: (p) => p,
});

t.test('bytes: the object form decodes to a Buffer', async (t) => {
  const out = bytesParam.parse(bytesObj(Buffer.from('hello').toString('base64')));
  t.ok(Buffer.isBuffer(out));
  t.equal(out.toString(), 'hello');
  t.equal(bytesParam.parse(bytesObj('')).length, 0, 'empty content is valid');
  const binary = Buffer.from([0, 1, 2, 253, 254, 255]);
  t.same(bytesParam.parse(bytesObj(binary.toString('base64'))), binary);
});

t.test('bytes: Buffers and Uint8Arrays from in-process callers pass through', async (t) => {
  const buf = Buffer.from('abc');
  t.equal(bytesParam.parse(buf), buf, 'the same Buffer, not a copy');
  const u8 = new Uint8Array([104, 105]);
  const out = bytesParam.parse(u8);
  t.ok(Buffer.isBuffer(out));
  t.equal(out.toString(), 'hi');
});

t.test('bytes: a bare string fails with the spec text and shows the bytes form', async (t) => {
  const res = bytesParam.safeParse('aGVsbG8=');
  t.notOk(res.success);
  t.match(res.error?.issues[0]?.message, /encoded before hashing/);

  // Through parseParams, as a client sees it.
  t.throws(() => parseParams(echo, { content: 'aGVsbG8=' }), {
    code: -32602,
    message: /encoded before hashing/,
    data: { param: 'content' },
  });
  t.throws(() => parseParams(echo, { content: 'plain text' }), { message: /"__type__":"bytes"/ });
});

t.test('bytes: invalid base64 is refused', async (t) => {
  const bad = [
    'abc', // length not a multiple of 4
    'aGVsbG8', // missing padding
    'ab!d', // stray character
    'ab d', // space
    'ab=c', // padding in the middle
    'a===', // too much padding
    '====',
    'ab-_', // url-safe alphabet is not the wire alphabet
  ];
  for (const data of bad) {
    t.equal(decodeBase64(data), undefined, `decodeBase64 ${JSON.stringify(data)}`);
    t.throws(() => parseParams(echo, { content: bytesObj(data) }), {
      code: -32602, message: /base64/i, data: { param: 'content' },
    }, JSON.stringify(data));
  }
  t.same(decodeBase64('aGk='), Buffer.from('hi'));
  t.same(decodeBase64('aGk+/w=='), Buffer.from('hi>\xff', 'latin1'));
});

t.test('bytes: other shapes are refused', async (t) => {
  for (const v of [42, null, true, [], {}, { __type__: 'bytes' }, { __type__: 'bytes', data: 5 }, { __type__: 'datetime', data: 'aGk=' }]) {
    t.notOk(bytesParam.safeParse(v).success, JSON.stringify(v));
  }
});

t.test('bytes: a missing bytes parameter is reported as missing', async (t) => {
  t.throws(() => parseParams(echo, {}), { code: -32602, message: /missing required parameter 'content'/, data: { param: 'content' } });
});

t.test('datetime: ISO strings, the tagged form and Dates', async (t) => {
  const iso = '2026-11-22T03:14:15.926Z';
  t.equal(datetimeParam.parse(iso).toISOString(), iso);
  t.equal(datetimeParam.parse({ __type__: 'datetime', data: iso }).toISOString(), iso);
  t.equal(datetimeParam.parse('2026-11-22T04:14:15.926+01:00').toISOString(), iso, 'offsets are honoured');
  const d = new Date(iso);
  t.equal(datetimeParam.parse(d).getTime(), d.getTime());
  for (const v of ['not a date', '', null, {}, { __type__: 'datetime', data: 'garbage' }, { __type__: 'datetime' }]) {
    t.notOk(datetimeParam.safeParse(v).success, JSON.stringify(v));
  }
  t.throws(() => parseParams(echo, { content: bytesObj(''), at: 'yesterday' }), { code: -32602, data: { param: 'at' } });
});

t.test('timedelta: seconds, or the tagged form', async (t) => {
  t.equal(timedeltaParam.parse(3600), 3600);
  t.equal(timedeltaParam.parse(0), 0);
  t.equal(timedeltaParam.parse(1.5), 1.5);
  t.equal(timedeltaParam.parse({ __type__: 'timedelta', seconds: 90 }), 90);
  for (const v of [-1, Number.NaN, Number.POSITIVE_INFINITY, '60', null, {}, { __type__: 'timedelta', seconds: '1' }]) {
    t.notOk(timedeltaParam.safeParse(v).success, String(v));
  }
  t.throws(() => parseParams(echo, { content: bytesObj(''), ttl: -5 }), { code: -32602, data: { param: 'ttl' } });
});

t.test('encodeValue: Buffers become bytes objects, Dates ISO strings, nested', async (t) => {
  const when = new Date('2026-01-02T03:04:05.006Z');
  const value = {
    content: Buffer.from('hi'),
    list: [Buffer.from([255]), when, [1, 'two', null, { deep: when }]],
    u8: new Uint8Array([1, 2, 3]),
    n: null, s: 'x', b: false, num: 1.5,
    gone: undefined,
  };
  t.same(encodeValue(value), {
    content: { __type__: 'bytes', data: 'aGk=' },
    list: [{ __type__: 'bytes', data: '/w==' }, '2026-01-02T03:04:05.006Z', [1, 'two', null, { deep: '2026-01-02T03:04:05.006Z' }]],
    u8: { __type__: 'bytes', data: 'AQID' },
    n: null, s: 'x', b: false, num: 1.5,
  });
  t.notOk('gone' in (encodeValue(value) as object), 'undefined members are dropped, as JSON would');
  t.equal(encodeValue(null), null);
  t.equal(encodeValue('s'), 's');
  t.same(encodeValue(Buffer.alloc(0)), { __type__: 'bytes', data: '' });
});

t.test('wireBytes encodes only the view of a shared buffer', async (t) => {
  const pool = Buffer.from('xxhelloxx');
  t.same(wireBytes(pool.subarray(2, 7)), { __type__: 'bytes', data: Buffer.from('hello').toString('base64') });
});

t.test('encode → JSON → decode round-trips', async (t) => {
  const when = new Date('2026-11-22T03:14:15.926Z');
  const original = {
    a: Buffer.from('round trip'),
    nested: { list: [Buffer.from([0, 255, 128]), { inner: [Buffer.alloc(0)] }], when },
    plain: [1, 'x', true, null],
  };
  const wire = JSON.parse(JSON.stringify(encodeValue(original)));
  const back = decodeValue(wire) as typeof original;
  t.ok(Buffer.isBuffer(back.a));
  t.same(back.a, original.a);
  t.same(back.nested.list[0], original.nested.list[0]);
  t.same((back.nested.list[1] as { inner: Buffer[] }).inner[0], Buffer.alloc(0));
  t.equal(back.nested.when as unknown, when.toISOString(), 'datetimes stay ISO strings on the client');
  t.same(back.plain, original.plain);
  t.same(decodeValue([{ __type__: 'bytes', data: 'aGk=' }]), [Buffer.from('hi')]);
  t.equal(decodeValue(7), 7);
  t.same(decodeValue({ __type__: 'other', data: 'aGk=' }), { __type__: 'other', data: 'aGk=' }, 'other tags are left alone');
});
