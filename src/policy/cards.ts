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
  /** The cards it runs on; empty = none of them (charged nowhere). */
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
  const byIndex = new Map(cards.map((c) => [c.index, c]));
  const charged = new Map<number, number>();
  const count = new Map<number, number>();
  for (const c of cards) {
    charged.set(c.index, 0);
    count.set(c.index, 0);
  }
  for (const r of residents) {
    if (r.gpus.length === 0) continue;
    const share = r.estGb / r.gpus.length;
    for (const g of r.gpus) {
      if (!charged.has(g)) continue;
      charged.set(g, charged.get(g)! + share);
      count.set(g, count.get(g)! + 1);
    }
  }
  const room = (c: Card) => c.ceilingGb - charged.get(c.index)!;
  let sets: Iterable<number[]>;
  if (typeof o.want !== "number") {
    const missing = o.want.filter((g) => !byIndex.has(g));
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
      .sort(
        (a, b) =>
          room(b) - room(a) || count.get(a.index)! - count.get(b.index)! || a.index - b.index,
      )
      .map((c) => c.index);
    sets = n === 1 ? order.map((g) => [g]) : combinations(order, n, MAX_SETS);
  }
  let best: string | null = null;
  for (const set of sets) {
    if (o.needGb <= 0) return { kind: "fits", gpus: sorted(set), evict: [] };
    const share = o.needGb / set.length;
    const fit = fitOn(set, share, byIndex, charged, residents);
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
  byIndex: ReadonlyMap<number, Card>,
  charged: ReadonlyMap<number, number>,
  residents: readonly PlacedResident[],
): Fit {
  const used = new Map(set.map((g) => [g, charged.get(g)!]));
  const tooBig = set.find((g) => share > byIndex.get(g)!.ceilingGb);
  if (tooBig !== undefined) {
    const c = byIndex.get(tooBig)!;
    return {
      ok: false,
      reason: (t, s) =>
        `model "${t}" needs ${gb(s)} on GPU ${c.index} but its ceiling is ${gb(c.ceilingGb)}: it cannot fit even alone`,
    };
  }
  const fits = () => set.every((g) => used.get(g)! + share <= byIndex.get(g)!.ceilingGb);
  const on = (r: PlacedResident) => r.gpus.some((g) => used.has(g));
  const evict: string[] = [];
  const gone = (r: PlacedResident) => {
    evict.push(r.id);
    const each = r.estGb / r.gpus.length;
    for (const g of r.gpus) if (used.has(g)) used.set(g, used.get(g)! - each);
  };
  for (const r of residents) if (on(r) && r.estGb <= 0 && !r.persistent) gone(r);
  for (const r of residents) {
    if (fits()) break;
    if (!on(r) || r.persistent || r.estGb <= 0) continue;
    gone(r);
  }
  if (fits()) return { ok: true, evict };
  const full = set.find((g) => used.get(g)! + share > byIndex.get(g)!.ceilingGb)!;
  const kept = residents
    .filter((r) => r.gpus.includes(full) && !evict.includes(r.id))
    .map((r) => r.id);
  return {
    ok: false,
    reason: (t, s) =>
      `model "${t}" needs ${gb(s)} on GPU ${full}; ${gb(used.get(full)!)} stays in use there by models that cannot be evicted (${kept.join(", ")}) and its ceiling is ${gb(byIndex.get(full)!.ceilingGb)}`,
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
