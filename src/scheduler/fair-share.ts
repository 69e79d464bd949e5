import type { FairShareConfig } from "../config/types.ts";
import { arrangeLine, charge, fairOrder, type ModelTags } from "./fair-order.ts";
import type { RequestKey } from "./types.ts";
import type { Queued } from "./waiter.ts";

/** A request made without a key. */
export const ANONYMOUS: RequestKey = { name: "anonymous", priority: "normal", maxConcurrency: 0 };

export const DEFAULT_FAIR_SHARE: FairShareConfig = {
  enabled: true,
  weights: { interactive: 4, normal: 2, batch: 1 },
};

interface KeyState {
  /** As the latest request of this key described it (a reload may change it). */
  key: RequestKey;
  /** Its requests in flight, on the whole box, and waiting. */
  inflight: number;
  waiting: number;
  /** Its share `g`: one `1/weight` per grant, from its entry at the floor (design.md, 3). */
  share: number;
}

/** One model's WFQ tags, who waits for it and who runs on it, and each key's last grant. */
interface ModelBook extends ModelTags {
  lastGrant: Map<string, number>;
  /** Requests of each key in flight on the model. */
  inflight: Map<string, number>;
  /** Requests of each key waiting for the model (queued, or on its swap). */
  waiting: Map<string, number>;
}

/**
 * Who is charged for what when keys share the GPU (design.md, "Fair share between keys"):
 * each key's requests waiting and in flight (its cap), its box-wide share, and per model the
 * WFQ tags. Plain book-keeping, kept as requests enter and leave the waiting line and end,
 * touched only from scheduler events. With fair share off it keeps the caps only.
 */
export class FairShare {
  private config: FairShareConfig = DEFAULT_FAIR_SHARE;
  private readonly keys = new Map<string, KeyState>();
  private readonly books = new Map<string, ModelBook>();
  /** `G`: no key re-enters below it (monotone). */
  private floor = 0;

  constructor(config?: FairShareConfig) {
    this.configure(config);
  }

  configure(config: FairShareConfig | undefined): void {
    this.config = config ?? DEFAULT_FAIR_SHARE;
  }

  /** Keys share by priority (else: first come, first served, caps kept). */
  get on(): boolean {
    return this.config.enabled;
  }

  /**
   * More than one key has been seen: only then is there anything to share. (Keys are never
   * forgotten: the edge passes only configured keys and `anonymous`, so the table is bounded.)
   */
  get contested(): boolean {
    return this.on && this.keys.size > 1;
  }

  weight(key: RequestKey): number {
    return this.config.weights[key.priority];
  }

  /** The weight of a key by name, as its latest request described it (unknown: `normal`). */
  weightOf(name: string): number {
    return this.weight(this.keys.get(name)?.key ?? ANONYMOUS);
  }

  /**
   * A request of `key` arrived. Its key's description is refreshed; a key with nothing waiting
   * and nothing in flight (re-)enters at the floor, the least share of the keys that have work,
   * so it banks no credit while idle.
   */
  arrived(key: RequestKey): void {
    const s = this.keys.get(key.name);
    if (s && (s.inflight > 0 || s.waiting > 0)) {
      s.key = key;
      return;
    }
    let least = Number.POSITIVE_INFINITY;
    for (const k of this.keys.values()) {
      if (k.inflight > 0 || k.waiting > 0) least = Math.min(least, k.share);
    }
    if (least !== Number.POSITIVE_INFINITY) this.floor = Math.max(this.floor, least);
    if (s) {
      s.key = key;
      s.share = Math.max(s.share, this.floor);
    } else {
      this.keys.set(key.name, { key, inflight: 0, waiting: 0, share: this.floor });
    }
  }

  /** `q` starts waiting (queued, or on a swap). */
  enter(q: Queued): void {
    if (q.counted) return;
    q.counted = true;
    this.state(q.key).waiting++;
    const w = this.book(q.spec.model).waiting;
    w.set(q.key.name, (w.get(q.key.name) ?? 0) + 1);
  }

  /** `q` stops waiting: granted, failed, cancelled (nothing when it never waited). */
  leave(q: Queued): void {
    if (!q.counted) return;
    q.counted = false;
    const s = this.keys.get(q.key.name);
    if (s) s.waiting--;
    const book = this.books.get(q.spec.model);
    if (book) {
      decrement(book.waiting, q.key.name);
      this.tidy(q.spec.model, book, q.key.name);
    }
  }

  /** Its key has `maxConcurrency` requests in flight: `q` must wait (never refused). */
  atCap(q: Queued): boolean {
    return this.room(q.key.name) <= 0;
  }

  /** How many more requests of `name` may be in flight now (Infinity: no cap). */
  room(name: string): number {
    const s = this.keys.get(name);
    const cap = s?.key.maxConcurrency ?? 0;
    return cap > 0 ? cap - (s?.inflight ?? 0) : Number.POSITIVE_INFINITY;
  }

  /** `q` was granted on `model` at `now`: counted in flight, charged its share and its tags. */
  granted(q: Queued, model: string, now: number): void {
    const name = q.key.name;
    const s = this.state(q.key);
    s.inflight++;
    const book = this.book(model);
    book.inflight.set(name, (book.inflight.get(name) ?? 0) + 1);
    book.lastGrant.set(name, now);
    // Shares and tags weigh keys against each other: with one key there is nothing to weigh,
    // and a key that comes along starts level with it.
    if (!this.contested) return;
    const w = this.weight(q.key);
    s.share += 1 / w;
    charge(book, name, w);
  }

  /** A granted request of `name` on `model` ended. */
  finished(name: string, model: string): void {
    const s = this.keys.get(name);
    if (s && s.inflight > 0) s.inflight--;
    const book = this.books.get(model);
    if (book) {
      decrement(book.inflight, name);
      this.tidy(model, book, name);
    }
  }

  /** The line with each model's waiters in their fair order (unchanged with fair share off). */
  arrange(line: readonly Queued[]): Queued[] {
    if (!this.contested) return [...line];
    return arrangeLine(line, (model, waiters) => this.order(model, waiters));
  }

  /**
   * One model's waiters in the order they are to be granted: in arrival order within each key
   * (a later request may have started or joined a swap first), keys by their tags.
   */
  order(model: string, waiters: readonly Queued[]): Queued[] {
    if (!this.contested) return [...waiters];
    const arrived = [...waiters].sort((a, b) => a.seq - b.seq);
    return fairOrder(arrived, this.books.get(model), {
      weight: (q) => this.weight(q.key),
      room: (name) => this.room(name),
    });
  }

  /** A key's claim: where its next request falls in a box-wide WFQ, `g + 1/w`. */
  claim(name: string): number {
    const s = this.keys.get(name);
    return (s?.share ?? this.floor) + 1 / this.weightOf(name);
  }

  /** The keys `model`'s pending work is charged to: in flight on it, or waiting for it. */
  keysWanting(model: string): Set<string> {
    const book = this.books.get(model);
    return new Set([...(book?.inflight.keys() ?? []), ...(book?.waiting.keys() ?? [])]);
  }

  /** The keys waiting for `model` (queued, or on its swap). */
  keysWaitingFor(model: string): Iterable<string> {
    return this.books.get(model)?.waiting.keys() ?? [];
  }

  /** The highest weight among the keys wanting `model` (0: none). */
  topWeight(model: string): number {
    let top = 0;
    for (const name of this.keysWanting(model)) top = Math.max(top, this.weightOf(name));
    return top;
  }

  /**
   * Since when `q`'s key has waited for its turn on `q`'s model: its last grant there, or
   * `q`'s arrival if later. What a lower-priority waiter's patience counts from.
   */
  turnSince(q: Queued): number {
    const last = this.books.get(q.spec.model)?.lastGrant.get(q.key.name) ?? 0;
    return Math.max(q.arrivedAt, last);
  }

  /** Per key waiting for `model` (queued, or on its swap): how many. */
  waitingKeys(model: string): Record<string, number> {
    const waiting = this.books.get(model)?.waiting;
    return waiting === undefined || waiting.size === 0 ? {} : Object.fromEntries(waiting);
  }

  /** Keys known now: their priority, requests waiting and in flight, and share. */
  snapshot() {
    return [...this.keys.values()].map((s) => ({
      name: s.key.name,
      priority: s.key.priority,
      waiting: s.waiting,
      inflight: s.inflight,
      share: s.share,
    }));
  }

  private state(key: RequestKey): KeyState {
    let s = this.keys.get(key.name);
    if (!s) {
      s = { key, inflight: 0, waiting: 0, share: this.floor };
      this.keys.set(key.name, s);
    }
    return s;
  }

  private book(model: string): ModelBook {
    let b = this.books.get(model);
    if (!b) {
      b = {
        virtual: 0,
        finish: new Map(),
        lastGrant: new Map(),
        inflight: new Map(),
        waiting: new Map(),
      };
      this.books.set(model, b);
    }
    return b;
  }

  /**
   * `name` has nothing waiting for or running on `model`: its last grant there no longer
   * matters, nor its tag once `v(M)` has passed it; a model with nothing left is forgotten.
   */
  private tidy(model: string, book: ModelBook, name: string): void {
    if (book.waiting.has(name) || book.inflight.has(name)) return;
    book.lastGrant.delete(name);
    if ((book.finish.get(name) ?? 0) <= book.virtual) book.finish.delete(name);
    if (book.finish.size + book.inflight.size + book.waiting.size + book.lastGrant.size === 0) {
      this.books.delete(model);
    }
  }
}

function decrement(counts: Map<string, number>, name: string): void {
  const n = counts.get(name) ?? 0;
  if (n > 1) counts.set(name, n - 1);
  else counts.delete(name);
}
