/**
 * @module test/helpers/random
 * A seedable random source for the randomized tests (the same seed, the same sequence of steps).
 */

/** mulberry32: small, seedable, good enough to pick operations; numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), a | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
