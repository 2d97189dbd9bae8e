/**
 * Edit distance between two strings: insertions, deletions, substitutions and swaps of two
 * neighbouring characters each cost 1 (the optimal string alignment distance), so `prot`
 * is one edit from `port`.
 */
export function editDistance(a: string, b: string): number {
  // rows[i][j]: the distance between the first i characters of a and the first j of b.
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const same = a[i - 1] === b[j - 1];
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (same ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, at(i - 2, j - 2) + 1);
      const row = rows[i];
      if (row !== undefined) row[j] = best;
    }
  }
  return at(a.length, b.length);
}

/**
 * The candidate `name` was most likely meant to be, or undefined when none is close: at
 * most a third of the candidate's length away (at least one edit), ignoring case, so a
 * typo or a missing unit suffix finds its key and an unrelated word finds nothing. The
 * first of equally close candidates wins.
 */
export function closestName(name: string, candidates: Iterable<string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    const allowed = Math.max(1, Math.floor(candidate.length / 3));
    if (distance <= allowed && (best === undefined || distance < best.distance))
      best = { name: candidate, distance };
  }
  return best?.name;
}
