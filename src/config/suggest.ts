/** "Did you mean" hints: the closest candidate by edit distance, when it is close enough. */

function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost));
    }
    prev = row;
  }
  return prev[b.length]!;
}

export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const score = distance(lower, candidate.toLowerCase());
    if (score < bestScore) {
      best = candidate;
      bestScore = score;
    }
  }
  // A third of the word (at least 2 edits) catches `ttl`→`ttl_s` and `modles`→`models`
  // without proposing unrelated keys for a word that merely shares a few letters; a
  // candidate as far away as the word is long (`c`→`a`) shares nothing at all.
  const limit = Math.max(2, Math.floor(word.length / 3));
  return bestScore <= limit && bestScore < word.length ? best : undefined;
}

/** ` (did you mean "x"?)`, or "" when nothing is close. */
export function didYouMean(
  word: string,
  candidates: Iterable<string>,
  wrap = (s: string) => `"${s}"`,
): string {
  const hit = closest(word, candidates);
  return hit === undefined ? "" : ` (did you mean ${wrap(hit)}?)`;
}
