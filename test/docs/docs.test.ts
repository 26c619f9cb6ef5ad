/**
 * @module test/docs
 * The generated docs agree with the code: docs/methods.md with the method table and the
 * WebSocket-only methods, docs/errors.md with ErrorCode, the error classes and toErrno.
 * When this fails after a change to a method or an error, run `npm run docs` and commit the result.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { generateDocs, errorClasses } from '../../src/docs/generate.js';
import { ErrorCode } from '../../src/core/errors.js';

const onDisk = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');
const docs = await generateDocs();

t.test('docs/methods.md and docs/errors.md match what the code generates (run `npm run docs`)', async (t) => {
  for (const [name, text] of Object.entries(docs)) {
    t.equal(onDisk(name), text, `docs/${name} is up to date`);
  }
});

t.test('every error code has exactly one error class', async (t) => {
  const classes = errorClasses();
  for (const [name, code] of Object.entries(ErrorCode)) {
    t.equal(classes.get(code)?.length, 1, `${name} (${code})`);
  }
});

t.test('every dispatchable method and every error code has a section', async (t) => {
  for (const name of ['read', 'write', 'list', 'glob', 'grep', 'watch', 'unwatch']) {
    t.match(docs['methods.md'], new RegExp(`^## ${name}$`, 'm'), name);
  }
  for (const [name, code] of Object.entries(ErrorCode)) {
    t.match(docs['errors.md'], new RegExp(`^## ${code} ${name}$`, 'm'), name);
  }
});
