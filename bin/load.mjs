// What bin/svc runs: the single-file bundle (dist/svc.bundle.cjs, made by `npm run build` after
// tsc) when it is at least as new as the tsc output, else the tsc output itself (dist/cli/main.js):
// after a bare `tsc -p tsconfig.json` the bundle is stale and must not be run. The bundle starts
// much faster (docs/performance.md, "Start-up and memory").
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';

const dist = new URL('../dist/', import.meta.url);
const mtime = (name) => {
  try {
    return statSync(new URL(name, dist)).mtimeMs;
  } catch {
    return -1;
  }
};

/** The CLI module: exports main(argv). */
export function load() {
  const bundled = mtime('svc.bundle.cjs');
  if (bundled >= 0 && bundled >= mtime('cli/main.js')) return createRequire(import.meta.url)('../dist/svc.bundle.cjs');
  return import('../dist/cli/main.js');
}
