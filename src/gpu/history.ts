/**
 * What the GPU held over the last half hour, for `GET /api/history` and the dashboard's charts:
 * one memory sample per probe reading (each card: used, each of qm's models, other programs,
 * the budget and the ceiling), when each model was loading and resident, and each swap with its
 * cause. Bounded twice: by age (the window) and by count, so a probe every 100 ms or a model that
 * thrashes cannot grow it without end. Pure: every time is passed in (ms since the epoch).
 */
import { RingBuffer } from "../shared/ring-buffer.ts";
import type { CardReading } from "./types.ts";

/** One card in one sample, as `/api/history` answers it (GB). */
export interface CardSample {
  index: number;
  used_gb: number;
  /** Each of qm's models on the card, by id. */
  models: Record<string, number>;
  foreign_gb: number;
  budget_gb: number;
  ceiling_gb: number;
}

export interface MemorySample {
  t: number;
  cards: CardSample[];
}

export type ResidencyState = "loading" | "resident";

export interface Residency {
  model: string;
  state: ResidencyState;
  from: number;
  /** null while it lasts. */
  to: number | null;
}

export interface SwapRecord {
  t: number;
  /** The model loaded; null for a stop outside any swap (TTL, unload, memory pressure). */
  loaded: string | null;
  evicted: string[];
  reason: string;
}

export interface HistoryJson {
  memory: MemorySample[];
  residency: Residency[];
  swaps: SwapRecord[];
}

/** How far back the history reaches, and the most a request may ask for. */
export const HISTORY_MINUTES = 30;
/** At most this many memory samples (30 min at a reading every 0.4 s). */
const MAX_SAMPLES = 4500;
/** At most this many residency intervals and swaps (a model swapped every 2 s for 30 min). */
const MAX_EVENTS = 2000;

const round = (gb: number) => Math.round(gb * 100) / 100;

export class GpuHistory {
  readonly #memory = new RingBuffer<MemorySample>(MAX_SAMPLES);
  readonly #swaps = new RingBuffer<SwapRecord>(MAX_EVENTS);
  #residency: Residency[] = [];
  readonly #windowMs: number;

  constructor(minutes = HISTORY_MINUTES) {
    this.#windowMs = minutes * 60_000;
  }

  /** One probe reading's cards. */
  memory(t: number, cards: CardSample[]): void {
    this.#memory.push({ t, cards });
  }

  /**
   * A model's state changed: `starting` opens a loading bar, `ready` turns it resident, and
   * anything that lets its memory go (`stopped`, `failed`, `sleeping`) ends the bar.
   */
  state(t: number, model: string, state: string): void {
    const open = this.#residency.findLast((r) => r.model === model && r.to === null);
    const next: ResidencyState | null =
      state === "starting" ? "loading" : state === "ready" ? "resident" : null;
    if (state === "stopping" || (open && open.state === next)) return;
    if (open) open.to = t;
    if (next) this.#residency.push({ model, state: next, from: t, to: null });
    this.#prune(t);
  }

  swap(t: number, loaded: string | null, evicted: readonly string[], reason: string): void {
    this.#swaps.push({ t, loaded, evicted: [...evicted], reason });
  }

  /** The last `minutes` (1 to the window; more is read as the window) up to `now`. */
  since(now: number, minutes: number): HistoryJson {
    const from = now - Math.min(this.#windowMs, Math.max(0, minutes) * 60_000);
    return {
      memory: this.#memory.toArray().filter((s) => s.t >= from),
      residency: this.#residency
        .filter((r) => r.to === null || r.to >= from)
        .map((r) => ({ ...r })),
      swaps: this.#swaps.toArray().filter((s) => s.t >= from),
    };
  }

  #prune(now: number): void {
    const from = now - this.#windowMs;
    let keep = this.#residency.filter((r) => r.to === null || r.to >= from);
    if (keep.length > MAX_EVENTS) keep = keep.slice(keep.length - MAX_EVENTS);
    this.#residency = keep;
  }
}

/** A card's budget and ceiling in force when it was read. */
export interface CardLimits {
  budgetGb: number;
  ceilingGb: number;
}

/** The cards of one reading as history keeps them. */
export function cardSamples(
  cards: readonly CardReading[],
  models: ReadonlyMap<number, ReadonlyMap<string, number>>,
  limits: (index: number) => CardLimits,
): CardSample[] {
  return cards.map((c) => {
    const { budgetGb, ceilingGb } = limits(c.index);
    const on: Record<string, number> = {};
    for (const [id, gb] of models.get(c.index) ?? []) on[id] = round(gb);
    return {
      index: c.index,
      used_gb: round(c.usedGb),
      models: on,
      foreign_gb: round(c.foreignGb),
      budget_gb: round(budgetGb),
      ceiling_gb: round(ceilingGb),
    };
  });
}

/**
 * Why a swap evicted what it did, in a word: `load` (nothing evicted), `memory` (evicted to fit
 * a memory budget), `group` (a group's swap or exclusive rule).
 */
export function swapCause(evicted: readonly string[], forBudget: readonly string[]): string {
  if (evicted.length === 0) return "load";
  return forBudget.length > 0 ? "memory" : "group";
}

/**
 * Why models were stopped outside a swap, in a word, from the scheduler's reason: `ttl`,
 * `unload`, `keep_alive`, `shed` (the GPU's memory ran short), `budget` (a sleeping model's RAM
 * wanted), else `other`.
 */
export function stopCause(reason: string): string {
  if (reason === "ttl" || reason === "unload") return reason;
  if (reason.startsWith("keep_alive")) return "keep_alive";
  if (reason.startsWith("RAM for ")) return "budget";
  if (reason.includes("memory")) return "shed";
  return "other";
}
