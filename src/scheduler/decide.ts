import type { Eviction } from "../policy/types.ts";
import { QmError } from "../shared/errors.ts";
import type { HoldVerdict } from "./hold-cost.ts";
import type { HoldBreak } from "./holds.ts";
import type { ModelEntry } from "./models.ts";
import type { RequestKey } from "./types.ts";

/** What `decide` needs to know about one request. Step 1 (unknown model) is the caller's. */
export interface DecideRequest {
  model: string;
  /** It has waited past its patience: it no longer honours other models' holds. */
  patienceSpent: boolean;
  /** The request's id, its conversation and its time waited behind idle holds (cost policy). */
  id?: number;
  conversation?: string | null;
  heldWaitMs?: number;
  /** Its key (absent: `anonymous`). */
  key?: RequestKey;
  /**
   * Its key has waited past this request's patience for a turn on its model (design.md, "Fair
   * share", 4): what lets it break the holds of a higher-priority key.
   */
  turnPatienceSpent?: boolean;
}

/**
 * The waiter's key against the keys holding the models it must evict: `above` every one of
 * them, `below` one of them, else `peer`.
 */
export type HoldRank = "above" | "below" | "peer";

/** A read-only window onto the scheduler's state, as of the moment of the decision. */
export interface DecideView {
  model(
    id: string,
  ): Readonly<Pick<ModelEntry, "state" | "inflight" | "unloadPending" | "draining">>;
  /** Below its `concurrency_limit`. */
  hasSlot(id: string): boolean;
  /** The swap bringing `id` in, if any; `abortedFor` is set while it is being aborted. */
  swapFor(id: string): { readonly abortedFor: string | null } | undefined;
  /** Being stopped outside any swap (TTL, unload, shedding). */
  stopping(id: string): boolean;
  /** Another swap's target or evict set, or a stop in progress. */
  inTransition(id: string): boolean;
  /** Under an idle-grace hold right now. */
  held(id: string): boolean;
  /**
   * Step 5b under `hold_policy = "cost"`: whether `req` may break the holds on `evict` now
   * (hold-cost.ts). Null under `"fixed"`: holds stand until the waiter's patience.
   */
  holdVerdict(req: DecideRequest, evict: readonly string[]): HoldVerdict | null;
  /**
   * Step 5a with keys sharing the GPU: another key ahead of this waiter's (a higher priority, or
   * a better claim) still waits for one of `evict`, and this waiter's key has not waited its
   * patience for a turn (absent: never).
   */
  wanted?(req: DecideRequest, evict: readonly string[]): boolean;
  /** Step 5b with keys sharing the GPU: how the waiter ranks against the holders (absent: peer). */
  holdRank?(req: DecideRequest, evict: readonly string[]): HoldRank;
  /** The eviction policy's answer for bringing `id` in (asked only when the tree gets there). */
  evictionFor(id: string): Eviction;
  /**
   * Room in RAM held by sleeping models: `"freeing"` while one is being stopped for it, else
   * the least-recently-used idle sleeper that holds RAM (level 1, `est_ram_gb`), or null.
   */
  ramSleeper(): string | null;
}

/**
 * Why a request has to wait; `busy` and `held` name the evict set that blocks it; `held`
 * under the cost policy also carries the waiter's fairness quantum, and when time alone may
 * turn the verdict (`reviewMs`, hold-cost.ts).
 */
export type QueueReason =
  | { why: "aborting" | "unavailable" | "full" | "stopping" | "collision" | "freeing" }
  /** Its key has `maxConcurrency` requests in flight (step 1b, the scheduler's). */
  | { why: "key_limit" }
  | { why: "busy" | "wanted"; evict: string[] }
  | { why: "held"; evict: string[]; quantumMs?: number; reviewMs?: number | null };

export type Decision =
  | { kind: "join" }
  | { kind: "grant" }
  | ({ kind: "queue" } & QueueReason)
  | { kind: "fail"; error: QmError }
  /** Stop this sleeping model to free the RAM it holds; the request waits meanwhile. */
  | { kind: "freeRam"; sleeper: string }
  /** `breaks`: it evicts held models, and why it may (patience, or the cost verdict). */
  | { kind: "swap"; evict: string[]; budget: string[]; gpus?: number[]; breaks?: HoldBreak };

/** Steps 2–6 of the decision tree (design.md) for one request. Pure: it only reads `view`. */
export function decide(req: DecideRequest, view: DecideView): Decision {
  const id = req.model;
  // 2. already being swapped in → join its waiters; one being aborted must end first, so the
  //    request waits for it and then starts the model afresh.
  const joining = view.swapFor(id);
  if (joining) return joining.abortedFor === null ? { kind: "join" } : queue("aborting");
  // 3. ready → serve now, unless at its concurrency limit (then wait, never 429).
  const m = view.model(id);
  if (m.state === "ready") {
    if (m.unloadPending || m.draining || view.stopping(id)) return queue("unavailable");
    return view.hasSlot(id) ? { kind: "grant" } : queue("full");
  }
  if (m.state === "stopping") return queue("stopping");
  const plan = view.evictionFor(id);
  if (!plan.ok) {
    // 3b. short of RAM that sleeping models hold → stop one (least recently used) and wait.
    const sleeper = plan.pool === "RAM" ? view.ramSleeper() : null;
    if (sleeper === "freeing") return queue("freeing");
    if (sleeper !== null) return { kind: "freeRam", sleeper };
    return { kind: "fail", error: new QmError("cannot_fit", plan.reason) };
  }
  const { evict } = plan;
  // 4. the swap collides with one in flight (or a stop in progress) → queue.
  if (evict.some((v) => view.inTransition(v))) return queue("collision");
  // 5. it would evict a model that is still busy → queue.
  if (evict.some((v) => view.model(v).inflight > 0)) return { kind: "queue", why: "busy", evict };
  // 5a. keys ahead of this one's (fair share) still wait for a model it would evict → queue.
  if (view.wanted?.(req, evict)) return { kind: "queue", why: "wanted", evict };
  // 5b. it would evict a model under an idle-grace hold → queue, until this waiter's patience
  //     runs out; then it preempts (and becomes the incumbent itself). Under the cost policy
  //     it also breaks the holds when holding costs more than the swap there and back, or
  //     once it has waited its fairness quantum behind them.
  //     With keys, the holders' priority comes first: a higher one breaks them at once, a lower
  //     one only once its key has waited its patience for a turn.
  let breaks: HoldBreak | undefined;
  if (evict.some((v) => view.held(v))) {
    const rank = view.holdRank?.(req, evict) ?? "peer";
    if (rank === "above") {
      breaks = "priority";
    } else if (rank === "below") {
      if (!req.turnPatienceSpent) return { kind: "queue", why: "held", evict };
      breaks = "patience";
    } else if (req.patienceSpent) {
      breaks = "patience";
    } else {
      const verdict = view.holdVerdict(req, evict);
      if (verdict === null) return { kind: "queue", why: "held", evict };
      if (verdict.kind === "hold") {
        const { quantumMs, reviewMs } = verdict;
        return { kind: "queue", why: "held", evict, quantumMs, reviewMs };
      }
      breaks = verdict.reason;
    }
  }
  // 6. start the swap.
  return {
    kind: "swap",
    evict,
    budget: plan.budget ?? [],
    ...(plan.gpus === undefined ? {} : { gpus: plan.gpus }),
    ...(breaks === undefined ? {} : { breaks }),
  };
}

function queue(
  why: "aborting" | "unavailable" | "full" | "stopping" | "collision" | "freeing",
): Decision {
  return { kind: "queue", why };
}
