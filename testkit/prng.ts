/**
 * prng: mulberry32, a small seeded pseudo-random generator for generated tests: the same seed
 * gives the same inputs, so a failure replays. Numbers in [0, 1), as Math.random gives them.
 */
export function prng(seed: number): () => number {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
