#!/usr/bin/env node
/**
 * `npm run build` step after tsc: bundle the tsc output (dist/cli/main.js and everything it imports)
 * into one ESM file, dist/svc.bundle.js, which bin/svc loads. Why: Node 20's ESM loader pays for every
 * module file (resolve, stat, read, link), and `svc serve` loaded ~300 of them; one file starts
 * the daemon much sooner (docs/performance.md, "Start-up and memory").
 *
 * The bundle sits in dist/ next to the files it replaces, so the `import.meta.url`-relative paths in
 * them (version.ts reads ../package.json; createRequire for yaml and fuse-native) resolve the same.
 * Native packages stay external and load from node_modules at run time: lmdb (and msgpackr through it),
 * fuse-native. Dynamic imports (the daemon for `serve`, the FUSE layer for `mount`, jose) are inlined
 * but stay lazy: esbuild wraps each module in an init function that runs on first import.
 */
import { build } from 'esbuild';

const ROOT = new URL('..', import.meta.url);

await build({
  absWorkingDir: ROOT.pathname,
  entryPoints: ['dist/cli/main.js'],
  outfile: 'dist/svc.bundle.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['lmdb', 'fuse-native'],
  // CommonJS dependencies in an ESM bundle call require() for Node built-ins; give them a real one.
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" },
  // A linked map chained to tsc's maps (so to src/*.ts): used only under `node --enable-source-maps`.
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
});
