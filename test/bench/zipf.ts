// Zipf's law over ranks 1..n, as the population's loads draw pairs: rank k (pair k - 1, the
// hottest first) with probability (1 / k^s) / H(n, s). The wrk script (measure.ts) draws the
// same way in Lua; the restart's load client draws here, from a seeded generator.

/** The cumulative shares of ranks 1..n: cdf[k - 1] = P(rank ≤ k); the last is 1. */
export function zipfCdf(n: number, exponent: number): Float64Array {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 1; k <= n; k += 1) {
    sum += 1 / k ** exponent;
    cdf[k - 1] = sum;
  }
  for (let i = 0; i < n; i += 1) cdf[i] = (cdf[i] ?? 0) / sum;
  return cdf;
}

/** The index (rank - 1) whose cumulative share first reaches `u` in [0, 1): binary search. */
export function zipfIndex(cdf: Float64Array, u: number): number {
  let low = 0;
  let high = cdf.length - 1;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((cdf[middle] ?? 1) < u) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The share of draws that fall on the `top` hottest of n ranks. */
export function zipfTopShare(n: number, exponent: number, top: number): number {
  if (top >= n) return 1;
  return zipfCdf(n, exponent)[top - 1] ?? 0;
}

/** mulberry32: a small seeded generator of uniform numbers in [0, 1) (not for secrets). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
