#!/usr/bin/env node
/**
 * `npm run build` step after tsc: bundle the tsc output (dist/cli/main.js and everything it imports)
 * into one CommonJS file, dist/svc.bundle.cjs, which bin/svc loads. Why (docs/performance.md,
 * "Start-up and memory"): Node 20's ESM loader pays for every module file (resolve, stat, read,
 * link) and `svc serve` loaded ~300 of them; and one large file loads faster as CommonJS than as
 * ESM (no UTF-8 decode through TextDecoder, cheaper compile): ~90 ms less CPU for the same code.
 *
 * The bundle sits in dist/ next to the files it replaces, so the `import.meta.url`-relative paths
 * in them (version.ts reads ../package.json; createRequire for yaml and fuse-native) resolve the
 * same: import.meta.url is defined as the bundle's own file URL. yargs' ESM shim finds its message
 * translations relative to its own file, and the parsed views start their worker from its file,
 * so there it is the URL of that file as installed here (ownFileUrl).
 * Native packages stay external and load from node_modules at run time: lmdb (and msgpackr through
 * it), fuse-native. Dynamic imports (the daemon for `serve`, yargs and the client commands, the
 * FUSE layer for `mount`, jose) are inlined but stay lazy: each module is wrapped in an init
 * function that runs on first import.
 */
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = `${ROOT}dist`;

/**
 * Files whose import.meta.url must stay their own file's URL, not the bundle's: yargs' platform
 * shim (its message translations sit next to it), and the parsed views' service, which starts its
 * converter worker from dist/views/worker.js (the worker and its converters are not bundled: they
 * load only when a view is first read).
 */
const ownFileUrl = {
  name: 'own-file-url',
  setup(b) {
    b.onLoad({ filter: /([\\/]yargs[\\/]lib[\\/]platform-shims[\\/]esm\.mjs|[\\/]dist[\\/]views[\\/]views\.js)$/ }, async (args) => {
      const rel = relative(DIST, args.path).split(/[\\/]/).join('/');
      const src = await readFile(args.path, 'utf8');
      return { contents: src.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, __svcMetaUrl).href`), loader: 'js' };
    });
  },
};

/**
 * zod's `locales` namespace (z.locales, ~400 KB of 40+ languages' error messages) is reachable from
 * `z`, so it is bundled and evaluated although svc never uses it (messages come from the default,
 * English, which zod's classic entry loads itself): the bundle carries English only.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, () => ({
      contents: 'export { default as en } from "./en.js";', loader: 'js',
    }));
  },
};

await build({
  absWorkingDir: ROOT,
  entryPoints: ['dist/cli/main.js'],
  outfile: 'dist/svc.bundle.cjs',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['lmdb', 'fuse-native'],
  define: { 'import.meta.url': '__svcMetaUrl' },
  banner: { js: "var __svcMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  plugins: [ownFileUrl, zodEnglishOnly],
  // A linked map chained to tsc's maps (so to src/*.ts): used only under `node --enable-source-maps`.
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
});
