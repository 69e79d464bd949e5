/**
 * `hold_policy = "cost"`: whether a request waiting behind other models' holds should wait on
 * or have them broken now. Pure. The rule, its fairness bound and why: design.md, "Hold or
 * yield by cost".
 */

/**
 * What the scheduler is told about swap costs (the runtime's load-time history). Both are
 * medians of measured durations; null when the model was never loaded (or woken).
 */
export interface SwapFacts {
  /** A cold start of `id`, from its swap's start until it is ready (the evictions' stops included). */
  loadMs(id: string): number | null;
  /** Waking `id` from sleep (`evict = "sleep"`), until it is ready. */
  wakeMs(id: string): number | null;
}

/** No facts at all: every swap costs the default. */
export const NO_FACTS: SwapFacts = { loadMs: () => null, wakeMs: () => null };

/** A swap's cost when no model ever loaded: what a mid-size model takes from a fast disk. */
export const DEFAULT_SWAP_MS = 10_000;

/**
 * The fairness quantum, in round trips: a waiter waits behind idle holds for at most this many
 * times what breaking them would cost (swapping its model in and the held one back).
 */
export const QUANTUM_ROUND_TRIPS = 3;

/**
 * Holding must beat the round trip by more than this share of it; on a near tie the waiter's
 * latency decides, and it yields.
 */
export const YIELD_SLACK = 0.05;

/**
 * A tool gap not measured yet (the first round, before any loop came back) that has lasted
 * `x` is taken to last this many times `x` in all, `x` more: with nothing to say what scale
 * gaps have, the moment it is seen at is as likely in the first half of the whole as in the
 * second (J. R. Gott, "Implications of the Copernican principle for our future prospects",
 * Nature 363, 1993). A short gap is learned within a short hold; a long one is not waited
 * through. Design: design.md, "The first round".
 */
export const UNMEASURED_WHOLE = 2;

/**
 * A sleep model's wake before one was measured, as a share of its cold load: a wake copies the
 * weights back from host memory and skips the rest of a start. vLLM reports wakes 18–200×
 * faster than a reload (blog.vllm.ai, "Zero-Reload Model Switching with vLLM Sleep Mode",
 * 2025-10-26); a tenth errs toward holding.
 */
export const WAKE_SHARE_GUESS = 0.1;

export interface HoldInput {
  /** How long this waiter has waited so far while the models it needs were idle and held. */
  heldWaitMs: number;
  /** Requests waiting for the waiter's model, itself included: each waits while the hold idles. */
  waiters: number;
  /**
   * The waiter's own typical tool gap (0 when it is not known to loop): once it is served and
   * off running its tools, the held model can come back without keeping anyone waiting.
   */
  waiterGapMs: number;
  /** Expected idle left in the holds it must break (the largest), from their typical gaps. */
  remainingMs: number;
  /** Bringing the waiter's model in: a cold load, or a wake. */
  swapInMs: number;
  /** Bringing the held models back afterwards, together. */
  swapBackMs: number;
  /**
   * How fast the expected idle grows as the holds go on, per ms: 0 when every hold's gap was
   * measured (time only shrinks what is left of it). A hold whose gap was never measured is
   * expected to last as long again as it has lasted (`UNMEASURED_WHOLE`), so what is left of
   * it grows with time for each waiter, and the waiter's own gap, when taken from it, grows
   * `UNMEASURED_WHOLE` times as fast. An upper bound is enough (it only sets `reviewMs`).
   */
  idleGrowth: number;
}

export type HoldVerdict =
  /**
   * Keep holding; `quantumMs`: the waiter's bound on waiting behind holds; `reviewMs` (while
   * the idle grows, else null): no sooner than this can time alone turn the verdict to yield.
   */
  | { kind: "hold"; quantumMs: number; reviewMs: number | null }
  /** Break the holds: holding costs more (`cost`), or the waiter reached its bound (`fairness`). */
  | { kind: "yield"; reason: "cost" | "fairness" };

/**
 * Yield when the idle the holds are expected to cost — the time left in them, for every request
 * waiting, plus the waiter's own coming gap, which hides the swap back — reaches the round trip
 * (less `YIELD_SLACK`); and in any case once the waiter has waited `QUANTUM_ROUND_TRIPS` round
 * trips behind idle holds.
 */
export function holdVerdict(i: HoldInput): HoldVerdict {
  const roundTrip = i.swapInMs + i.swapBackMs;
  const quantumMs = quantumOf(roundTrip);
  if (i.heldWaitMs >= quantumMs) return { kind: "yield", reason: "fairness" };
  const idle = i.waiters * i.remainingMs + i.waiterGapMs;
  const threshold = roundTrip * (1 - YIELD_SLACK);
  if (idle >= threshold) return { kind: "yield", reason: "cost" };
  // Whole milliseconds, never late: growing at most `idleGrowth`, the idle cannot reach the
  // threshold sooner; grown slower, the review finds it short and sets the next one.
  const reviewMs = i.idleGrowth > 0 ? Math.ceil((threshold - idle) / i.idleGrowth) : null;
  return { kind: "hold", quantumMs, reviewMs };
}

/** The fairness quantum for a round trip of `roundTripMs`. */
export function quantumOf(roundTripMs: number): number {
  return QUANTUM_ROUND_TRIPS * roundTripMs;
}

/**
 * Swap costs from the facts: a model never measured costs what the dearest measured model
 * costs (a guess that errs toward holding), or `DEFAULT_SWAP_MS` when none was measured.
 */
export class SwapCosts {
  constructor(
    private facts: SwapFacts,
    private readonly ids: () => Iterable<string>,
  ) {}

  setFacts(facts: SwapFacts): void {
    this.facts = facts;
  }

  /**
   * Bringing `id` in, as it recurs when models take turns: a wake when evicting it puts it to
   * sleep (`WAKE_SHARE_GUESS` of a load until one is measured), else a load. A sleep model's
   * first cold load is paid once whichever way a hold goes, so it does not weigh.
   */
  swap(id: string, sleepsWhenEvicted: boolean): number {
    if (sleepsWhenEvicted) {
      return this.facts.wakeMs(id) ?? Math.round(this.load(id) * WAKE_SHARE_GUESS);
    }
    return this.load(id);
  }

  private load(id: string): number {
    const own = this.facts.loadMs(id);
    if (own !== null) return own;
    let dearest: number | null = null;
    for (const other of this.ids()) {
      const ms = this.facts.loadMs(other);
      if (ms !== null && (dearest === null || ms > dearest)) dearest = ms;
    }
    return dearest ?? DEFAULT_SWAP_MS;
  }
}
