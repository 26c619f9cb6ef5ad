/**
 * @module native/sha256
 * svc's SHA-256 addon (native/sha256/svc_sha256.c, built by scripts/build-native.mjs): SHA-256 on
 * the CPU's SHA extensions, feeding the same bytes to two hashes in one pass. A content's etag and
 * its chunks' addresses are both SHA-256 of the same bytes (docs/operations.md), so they are
 * computed together: about two thirds of the time of two node:crypto passes (docs/performance.md).
 *
 * Optional like every addon: where it is not built, does not load, or the CPU lacks the SHA
 * extensions, {@link EtagAndChunks} hashes with node:crypto and gives the same answers.
 * `SVC_SHA256=node` rules the addon out (to compare, or should it ever be suspected).
 */
import { createHash, type Hash } from 'node:crypto';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The addon's exports (see its header). A state is a 112-byte Buffer; copying it copies the hash. */
export interface Sha256Addon {
  supported(): boolean;
  init(): Buffer;
  update(a: Buffer, b: Buffer | null, bytes: NodeJS.TypedArray): void;
  digest(state: Buffer): string;
}

/** Where scripts/build-native.mjs puts the addon, from src/native, dist/native or the bundle in dist/. */
const CANDIDATES = ['../../native/build/svc_sha256.node', '../native/build/svc_sha256.node'];

/**
 * The addon and its file where it is built, loads and this CPU has the SHA extensions, unless `env`
 * says `SVC_SHA256=node`; null otherwise. Uncached (tests); {@link sha256Addon} caches it.
 */
export function loadSha256Addon(env: NodeJS.ProcessEnv = process.env): { addon: Sha256Addon; path: string } | null {
  if (env.SVC_SHA256 === 'node') return null;
  const path = CANDIDATES.map((rel) => fileURLToPath(new URL(rel, import.meta.url))).find((f) => existsSync(f));
  if (!path) return null;
  try {
    const addon = createRequire(import.meta.url)(path) as Sha256Addon;
    return addon.supported() ? { addon, path } : null;
  } catch {
    return null; // not loadable here (another platform's build): node:crypto it is
  }
}

let loaded: { addon: Sha256Addon; path: string } | null | undefined;
const load = () => (loaded === undefined ? (loaded = loadSha256Addon()) : loaded);

/** The addon, where it is built, loads and this CPU has the SHA extensions; null elsewhere. */
export function sha256Addon(): Sha256Addon | null {
  return load()?.addon ?? null;
}

/** The addon's file, for a worker thread to load it itself (undefined where {@link sha256Addon} is null). */
export function sha256AddonPath(): string | undefined {
  return load()?.path;
}

/**
 * The etag of a content fed piece by piece, and the SHA-256 of each piece that asks for its own
 * (its chunk address): one pass over the bytes with the addon, two with node:crypto.
 */
export class EtagAndChunks {
  readonly #addon: Sha256Addon | null;
  readonly #whole: Buffer | Hash;

  /** `addon`: null hashes with node:crypto. */
  constructor(addon: Sha256Addon | null = sha256Addon()) {
    this.#addon = addon;
    this.#whole = addon ? addon.init() : createHash('sha256');
  }

  /** Append `data` to the content; with `own`, also return `data`'s own SHA-256. */
  add(data: Uint8Array, own: true): string;
  add(data: Uint8Array, own?: false): undefined;
  add(data: Uint8Array, own = false): string | undefined {
    const addon = this.#addon;
    if (addon) {
      const piece = own ? addon.init() : null;
      addon.update(this.#whole as Buffer, piece, data);
      return piece ? addon.digest(piece) : undefined;
    }
    (this.#whole as Hash).update(data);
    return own ? createHash('sha256').update(data).digest('hex') : undefined;
  }

  /** The etag of everything added (the object is done with). */
  etag(): string {
    return this.#addon ? this.#addon.digest(this.#whole as Buffer) : (this.#whole as Hash).digest('hex');
  }
}
