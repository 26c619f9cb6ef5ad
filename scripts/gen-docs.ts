/**
 * @module scripts/gen-docs
 * `npm run docs`: write docs/methods.md and docs/errors.md from the code (src/docs/generate.ts).
 * test/docs/docs.test.ts fails until the written files are committed alongside the change.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { generateDocs } from '../src/docs/generate.js';

const docsDir = fileURLToPath(new URL('../docs/', import.meta.url));
mkdirSync(docsDir, { recursive: true });
for (const [name, text] of Object.entries(await generateDocs())) {
  writeFileSync(docsDir + name, text);
  console.log(`wrote docs/${name}`);
}
