import t from 'tap';
import { z } from 'zod';
import { defineMethod, buildTable, parseParams } from '../../src/core/method.js';
import { InvalidParamsError } from '../../src/core/errors.js';

const list = defineMethod({
  name: 'list', access: 'user', description: 'test',
  params: z.strictObject({
    path: z.string().default('/'),
    recursive: z.boolean().default(true),
    limit: z.number().int().min(1).default(100),
    prefix: z.string().optional(),
  }),
  handler: (p) => p,
});

const write = defineMethod({
  name: 'write', access: 'user', description: 'test',
  params: z.strictObject({
    path: z.string(),
    options: z.strictObject({ mode: z.number().int() }).optional(),
  }),
  handler: (p) => p,
});

t.test('defaults are applied and given values kept', async (t) => {
  t.same(parseParams(list, {}), { path: '/', recursive: true, limit: 100 });
  t.same(parseParams(list, undefined), { path: '/', recursive: true, limit: 100 }, 'absent params = {}');
  t.same(parseParams(list, { path: '/a', recursive: false, limit: 5, prefix: '/a/b' }),
    { path: '/a', recursive: false, limit: 5, prefix: '/a/b' });
  t.same(parseParams(write, { path: '/x' }), { path: '/x' }, 'an absent optional stays absent');
});

t.test('a missing required parameter is named in the message and data', async (t) => {
  t.throws(() => parseParams(write, {}), {
    code: -32602, message: "Invalid params: missing required parameter 'path'", data: { param: 'path' },
  });
  t.throws(() => parseParams(write, { path: undefined }), { code: -32602, data: { param: 'path' } });
  const err = catchErr(() => parseParams(write, {}));
  t.ok(err instanceof InvalidParamsError);
});

t.test('an unknown parameter is -32602 naming it', async (t) => {
  t.throws(() => parseParams(write, { path: '/x', colour: 'red' }), {
    code: -32602, message: /unknown parameter 'colour'/, data: { param: 'colour' },
  });
  t.match(catchErr(() => parseParams(write, { path: '/x', colour: 1 })).message, /write/, 'and the method');
  t.throws(() => parseParams(write, { path: '/x', options: { mode: 1, extra: true } }), {
    code: -32602, message: /unknown parameter 'options\.extra'/, data: { param: 'options.extra' },
  }, 'nested strict objects too, named by their dotted path');
});

t.test('a wrong type is -32602 naming the parameter', async (t) => {
  t.throws(() => parseParams(write, { path: 42 }), { code: -32602, message: /'path'/, data: { param: 'path' } });
  t.throws(() => parseParams(write, { path: null }), { code: -32602, data: { param: 'path' } }, 'null is not missing');
  t.throws(() => parseParams(list, { recursive: 'yes' }), { code: -32602, data: { param: 'recursive' } });
  t.throws(() => parseParams(list, { limit: 1.5 }), { code: -32602, data: { param: 'limit' } });
  t.throws(() => parseParams(list, { limit: 0 }), { code: -32602, data: { param: 'limit' } });
  t.throws(() => parseParams(write, { path: '/x', options: { mode: 'rw' } }), {
    code: -32602, message: /'options\.mode'/, data: { param: 'options.mode' },
  }, 'nested parameters are named by their dotted path');
  const msg = catchErr(() => parseParams(write, { path: 42 })).message;
  t.notMatch(msg, /missing/, 'a wrong type is not reported as missing');
});

t.test('params that are not an object are -32602', async (t) => {
  for (const raw of [null, [], ['/x'], 'path', 5, true]) {
    t.throws(() => parseParams(write, raw), { code: -32602, message: /must be an object/ }, JSON.stringify(raw));
  }
});

t.test('defineMethod freezes the definition', async (t) => {
  t.ok(Object.isFrozen(list));
  t.equal(list.name, 'list');
});

t.test('buildTable merges lists and refuses duplicate names', async (t) => {
  const other = defineMethod({ name: 'other', access: 'public', description: 'x', params: z.strictObject({}), handler: () => 1 });
  const table = buildTable([list, write], [other]);
  t.same(Object.keys(table).sort(), ['list', 'other', 'write']);
  t.equal(table.write, write);
  t.ok(Object.isFrozen(table));
  t.throws(() => buildTable([list, write], [list]), /duplicate method list/);
  t.throws(() => buildTable([write, write]), /duplicate method write/);
  t.same(Object.keys(buildTable()), [], 'an empty table is fine');
});

function catchErr(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}
