/**
 * Fair share across models (design.md, "Fair share between keys", 3 and 4): how a waiter ranks
 * against the keys holding or wanting the models it must evict, and which busy models a key
 * that is owed its share drains. Pure reads of the scheduler's books.
 */
import type { Decision, HoldRank } from "./decide.ts";
import type { FairShare } from "./fair-share.ts";
import type { GapBook } from "./gaps.ts";
import type { ModelTable } from "./models.ts";
import type { RequestKey } from "./types.ts";
import type { Queued } from "./waiter.ts";

/** What the cross-model rules read. */
export interface FairBooks {
  fair: FairShare;
  models: ModelTable;
  /** Which conversations are in a tool gap. */
  gaps: GapBook;
  now: number;
}

/** The weight of the key holding `id` now, or null when it is not held (or whose is unknown). */
function holderWeight(b: FairBooks, id: string): number | null {
  const m = b.models.get(id);
  if (!m || m.heldUntil <= b.now || m.holdKey === null) return null;
  return b.fair.weight(m.holdKey);
}

/** Step 5b: `key` against the keys holding the held models of `evict`. */
export function holdRank(b: FairBooks, key: RequestKey, evict: readonly string[]): HoldRank {
  if (!b.fair.contested) return "peer";
  const w = b.fair.weight(key);
  let held = 0;
  let below = 0;
  for (const v of evict) {
    const m = b.models.get(v);
    if (!m || m.heldUntil <= b.now) continue;
    held++;
    // A hold whose key is not known counts as a peer's.
    const hw = holderWeight(b, v) ?? w;
    if (hw > w) return "below";
    if (hw < w) below++;
  }
  return held > 0 && below === held ? "above" : "peer";
}

/** The weight a hold on one of `evict` must reach for `key`'s waiters to count against it. */
export function holdersWeight(b: FairBooks, evict: readonly string[]): number {
  let top = 0;
  for (const v of evict) top = Math.max(top, holderWeight(b, v) ?? 0);
  return top;
}

/**
 * `q` is blocked by a higher priority: a model of `evict` is held by, or wanted by (in flight on
 * it, or waiting for it), a key of a higher weight than `q`'s.
 */
export function outranked(b: FairBooks, q: Queued, evict: readonly string[]): boolean {
  if (!b.fair.contested) return false;
  const w = b.fair.weight(q.key);
  return evict.some((v) => (holderWeight(b, v) ?? 0) > w || b.fair.topWeight(v) > w);
}

/** `q`'s key has waited past `q`'s patience for a turn on its model. */
export function turnPatienceSpent(b: FairBooks, q: Queued): boolean {
  return b.now - b.fair.turnSince(q) >= q.patienceMs;
}

/**
 * Step 5a: a key ahead of `key` — a higher weight, or a better claim — waits for one of `evict`
 * (under its cap), or a higher-priority key's agent loop whose hold it was is in its tool gap
 * (its hold may have run out: the loop is still expected back). (The caller skips this once the
 * waiter's key has waited its patience for a turn.) The waiter's own key's other waiters do not
 * count: within a key, first come, first served, as without keys.
 */
export function wanted(b: FairBooks, key: RequestKey, evict: readonly string[]): boolean {
  const w = b.fair.weight(key);
  const claim = b.fair.claim(key.name);
  for (const v of evict) {
    const m = b.models.get(v);
    if (m?.holdKey && m.holdConversation !== null && b.fair.weight(m.holdKey) > w) {
      if (b.gaps.inGap(m.holdConversation, b.now)) return true;
    }
    for (const j of b.fair.keysWaitingFor(v)) {
      if (j === key.name || b.fair.room(j) <= 0) continue;
      if (b.fair.weightOf(j) > w || b.fair.claim(j) <= claim) return true;
    }
  }
  return false;
}

/**
 * Design 3: the models to drain for keys owed their share. For the head of each key's waiters
 * for a model that needs a swap, blocked by busy models (or about to evict idle ones others
 * want), none held by a higher key: when every key wanting those models has no higher weight
 * and a worse claim, they take no new work, so the swap comes before anything else there.
 */
export function shareDrains(
  b: FairBooks,
  line: Iterable<Queued>,
  needsSwap: (q: Queued) => boolean,
  decide: (q: Queued) => Decision,
): string[] {
  if (!b.fair.contested) return [];
  const heads = new Set<string>();
  const out = new Set<string>();
  for (const q of line) {
    if (!needsSwap(q)) continue;
    const head = `${q.spec.model}\u0000${q.key.name}`;
    if (heads.has(head)) continue;
    heads.add(head);
    if (b.fair.atCap(q)) continue;
    const d = decide(q);
    const blocked = d.kind === "queue" && d.why === "busy";
    if (!blocked && (d.kind !== "swap" || d.evict.length === 0)) continue;
    const w = b.fair.weight(q.key);
    if (d.evict.some((v) => (holderWeight(b, v) ?? 0) > w)) continue;
    if (!owed(b.fair, q.key, d.evict)) continue;
    for (const v of d.evict) out.add(v);
  }
  return [...out];
}

/** Every key wanting `evict` weighs no more than `key` and has a worse claim. */
function owed(fair: FairShare, key: RequestKey, evict: readonly string[]): boolean {
  const w = fair.weight(key);
  const claim = fair.claim(key.name);
  for (const v of evict) {
    for (const j of fair.keysWanting(v)) {
      if (j === key.name || fair.weightOf(j) > w || fair.claim(j) <= claim) return false;
    }
  }
  return true;
}
