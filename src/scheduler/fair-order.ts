/**
 * Weighted fair queuing within one model's queue: start-time fair queuing (Goyal, Vin and Cheng,
 * "Start-time Fair Queueing", SIGCOMM 1996) with one request as the unit of work, FIFO within a
 * key. Pure. The rule, its bound and why: design.md, "Fair share between keys", 1.
 */
import type { Queued } from "./waiter.ts";

/** One model's WFQ state: its virtual time `v(M)` and each key's finish tag `F(k, M)`. */
export interface ModelTags {
  virtual: number;
  finish: Map<string, number>;
}

/** A key's start tag on a model: where its head request falls, `max(v(M), F(k, M))`. */
export function startTag(tags: ModelTags | undefined, key: string): number {
  if (tags === undefined) return 0;
  return Math.max(tags.virtual, tags.finish.get(key) ?? tags.virtual);
}

/** A grant of `key`'s head on the model: `F(k, M) = S + 1/w`, `v(M) = S`. */
export function charge(tags: ModelTags, key: string, weight: number): void {
  const s = startTag(tags, key);
  tags.finish.set(key, s + 1 / weight);
  tags.virtual = s;
}

export interface OrderFacts {
  /** The weight of the key `q` was made with. */
  weight(q: Queued): number;
  /** How many more of `key`'s requests may be granted now (its cap less its in flight). */
  room(key: string): number;
}

/**
 * The order in which `waiters` (one model's, oldest first) would be granted if nothing else
 * arrived: each next grant to the key with the least start tag (ties: the heavier weight, then
 * the older head), FIFO within a key; a key out of room (its cap) takes no more, and its
 * remaining waiters follow the rest in their own order.
 */
export function fairOrder(
  waiters: readonly Queued[],
  tags: ModelTags | undefined,
  facts: OrderFacts,
): Queued[] {
  const byKey = new Map<string, Queued[]>();
  for (const q of waiters) {
    const list = byKey.get(q.key.name);
    if (list) list.push(q);
    else byKey.set(q.key.name, [q]);
  }
  // One key: first come, first served, whatever its cap.
  if (byKey.size <= 1) return [...waiters];
  const place = new Map<Queued, number>(waiters.map((q, i) => [q, i]));
  const sim: ModelTags = { virtual: tags?.virtual ?? 0, finish: new Map(tags?.finish) };
  // Per key: its waiters, how many of them may be granted now, and how many the order took.
  const keys = [...byKey].map(([name, list]) => ({
    name,
    list,
    room: Math.min(list.length, facts.room(name)),
    taken: 0,
  }));
  const out: Queued[] = [];
  for (;;) {
    let best: { k: (typeof keys)[number]; s: number; w: number } | null = null;
    for (const k of keys) {
      if (k.taken >= k.room) continue;
      const head = k.list[k.taken]!;
      const s = startTag(sim, k.name);
      const w = facts.weight(head);
      if (
        best === null ||
        s < best.s ||
        (s === best.s &&
          (w > best.w ||
            (w === best.w && place.get(head)! < place.get(best.k.list[best.k.taken]!)!)))
      ) {
        best = { k, s, w };
      }
    }
    if (best === null) break;
    out.push(best.k.list[best.k.taken]!);
    charge(sim, best.k.name, best.w);
    best.k.taken++;
  }
  if (out.length === waiters.length) return out;
  const taken = new Set(out);
  for (const q of waiters) if (!taken.has(q)) out.push(q);
  return out;
}

/**
 * The waiting line with each model's waiters put in their fair order, in the places that
 * model's waiters held: what else is in the line, and where, does not move.
 */
export function arrangeLine(
  line: readonly Queued[],
  order: (model: string, waiters: readonly Queued[]) => Queued[],
): Queued[] {
  const byModel = new Map<string, Queued[]>();
  for (const q of line) {
    const list = byModel.get(q.spec.model);
    if (list) list.push(q);
    else byModel.set(q.spec.model, [q]);
  }
  const ordered = new Map<string, Queued[]>();
  for (const [model, list] of byModel) ordered.set(model, order(model, list));
  const taken = new Map<string, number>();
  return line.map((q) => {
    const i = taken.get(q.spec.model) ?? 0;
    taken.set(q.spec.model, i + 1);
    return ordered.get(q.spec.model)![i]!;
  });
}
