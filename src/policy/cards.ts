/**
 * Placement across several GPUs (src/policy/design.md, "several GPUs"). Pure: the caller
 * passes the cards' ceilings now and the residents least-recently-used first.
 */

/** One card as admission sees it now. */
export interface Card {
  index: number;
  /** The live ceiling of this card (its budget, tightened by the reading), GB. */
  ceilingGb: number;
}

export interface PlacedResident {
  id: string;
  /** Its `est_vram_gb` (0 = unknown). */
  estGb: number;
  /**
   * The cards it runs on; empty = not placed (it started before the cards were known, and
   * sees them all): charged in full on every card, and evicting it frees every card.
   */
  gpus: readonly number[];
  persistent: boolean;
}

export type Placement =
  | { kind: "fits"; gpus: number[]; evict: string[] }
  | { kind: "cannot"; reason: string };

/** How many N-card sets are tried beyond the N roomiest, at most. */
const MAX_SETS = 256;

const gb = (n: number) => `${Math.round(n * 100) / 100} GB`;

/**
 * Which card(s) `target` runs on, and which residents on them must stop first. `want`: the
 * number of cards, or the fixed cards. `needGb` ≤ 0 (unknown): the least loaded card(s), no
 * evictions (the groups' rules decide those).
 */
export function placeOnCards(o: {
  target: string;
  needGb: number;
  want: number | readonly number[];
  cards: readonly Card[];
  residents: readonly PlacedResident[];
}): Placement {
  const { cards, residents } = o;
  // Per card, by index (arrays: this runs on every decision).
  let size = 0;
  for (const c of cards) size = Math.max(size, c.index + 1);
  const ceiling = new Float64Array(size).fill(Number.NaN);
  const charged = new Float64Array(size);
  const count = new Uint32Array(size);
  for (const c of cards) ceiling[c.index] = c.ceilingGb;
  const has = (g: number) => g >= 0 && g < size && !Number.isNaN(ceiling[g]!);
  for (const r of residents) {
    if (r.gpus.length === 0) {
      for (const c of cards) {
        charged[c.index]! += r.estGb;
        count[c.index]! += 1;
      }
      continue;
    }
    const share = r.estGb / r.gpus.length;
    for (const g of r.gpus) {
      if (!has(g)) continue;
      charged[g]! += share;
      count[g]! += 1;
    }
  }
  const room = (c: Card) => c.ceilingGb - charged[c.index]!;
  let sets: Iterable<number[]>;
  if (typeof o.want !== "number") {
    const missing = o.want.filter((g) => !has(g));
    if (missing.length > 0) {
      return {
        kind: "cannot",
        reason: `model "${o.target}" runs on GPU ${missing.join(", ")}, which this box does not have (cards: ${cards.map((c) => c.index).join(", ")})`,
      };
    }
    sets = [[...o.want]];
  } else {
    const n = Math.max(1, o.want);
    if (n > cards.length) {
      return {
        kind: "cannot",
        reason: `model "${o.target}" needs ${n} GPUs but this box has ${cards.length}`,
      };
    }
    // Least loaded first: most room, then fewest residents, then the lower index.
    const order = [...cards]
      .sort((a, b) => room(b) - room(a) || count[a.index]! - count[b.index]! || a.index - b.index)
      .map((c) => c.index);
    sets = n === 1 ? order.map((g) => [g]) : combinations(order, n, MAX_SETS);
  }
  let best: string | null = null;
  for (const set of sets) {
    if (o.needGb <= 0) return { kind: "fits", gpus: sorted(set), evict: [] };
    const share = o.needGb / set.length;
    const fit = fitOn(set, share, ceiling, charged, residents);
    if (fit.ok) return { kind: "fits", gpus: sorted(set), evict: fit.evict };
    best ??= fit.reason(o.target, share);
  }
  return { kind: "cannot", reason: best! };
}

type Fit =
  | { ok: true; evict: string[] }
  | { ok: false; reason: (target: string, share: number) => string };

/** Evict LRU residents on `set` (unknown ones first) until `share` fits on each of its cards. */
function fitOn(
  set: readonly number[],
  share: number,
  ceiling: Float64Array,
  charged: Float64Array,
  residents: readonly PlacedResident[],
): Fit {
  const tooBig = set.find((g) => share > ceiling[g]!);
  if (tooBig !== undefined) {
    const c = ceiling[tooBig]!;
    return {
      ok: false,
      reason: (t, s) =>
        `model "${t}" needs ${gb(s)} on GPU ${tooBig} but its ceiling is ${gb(c)}: it cannot fit even alone`,
    };
  }
  const used = new Float64Array(charged.length);
  const inSet = new Uint8Array(charged.length);
  for (const g of set) {
    used[g] = charged[g]!;
    inSet[g] = 1;
  }
  const fits = () => {
    for (const g of set) if (used[g]! + share > ceiling[g]!) return false;
    return true;
  };
  const on = (r: PlacedResident) => {
    if (r.gpus.length === 0) return true;
    for (const g of r.gpus) if (g < inSet.length && inSet[g] === 1) return true;
    return false;
  };
  const evict: string[] = [];
  const gone = (r: PlacedResident) => {
    evict.push(r.id);
    if (r.gpus.length === 0) {
      for (const g of set) used[g]! -= r.estGb;
      return;
    }
    const each = r.estGb / r.gpus.length;
    for (const g of r.gpus) if (g < inSet.length && inSet[g] === 1) used[g]! -= each;
  };
  for (const r of residents) if (r.estGb <= 0 && !r.persistent && on(r)) gone(r);
  for (const r of residents) {
    if (fits()) break;
    if (r.persistent || r.estGb <= 0 || !on(r)) continue;
    gone(r);
  }
  if (fits()) return { ok: true, evict };
  const full = set.find((g) => used[g]! + share > ceiling[g]!)!;
  const kept = residents
    .filter((r) => (r.gpus.length === 0 || r.gpus.includes(full)) && !evict.includes(r.id))
    .map((r) => r.id);
  const usedThere = used[full]!;
  return {
    ok: false,
    reason: (t, s) =>
      `model "${t}" needs ${gb(s)} on GPU ${full}; ${gb(usedThere)} stays in use there by models that cannot be evicted (${kept.join(", ")}) and its ceiling is ${gb(ceiling[full]!)}`,
  };
}

/**
 * `n`-element subsets of `order`, the first `n` first, in lexicographic order of positions;
 * at most `cap`. Lazy: most placements take the first.
 */
function* combinations(order: readonly number[], n: number, cap: number): Generator<number[]> {
  const pick = Array.from({ length: n }, (_, i) => i);
  for (let made = 0; made < cap; made++) {
    yield pick.map((i) => order[i]!);
    // The next combination: bump the rightmost position that can still move.
    let k = n - 1;
    while (k >= 0 && pick[k] === order.length - n + k) k--;
    if (k < 0) return;
    pick[k]!++;
    for (let j = k + 1; j < n; j++) pick[j] = pick[j - 1]! + 1;
  }
}

function sorted(set: readonly number[]): number[] {
  return [...set].sort((a, b) => a - b);
}
