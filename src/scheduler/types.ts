import type { KeyPriority } from "../config/types.ts";
import type { QmError } from "../shared/errors.ts";
import type { StopReason, SwapAbortReason } from "./stop-reason.ts";

/**
 * `sleeping`: an `evict = "sleep"` model put to sleep over its server's sleep API: its process
 * lives, its GPU memory is let go of; the next request wakes it (a swap with `wake`).
 */
export type ModelState = "stopped" | "starting" | "ready" | "stopping" | "failed" | "sleeping";

/** What a caller asks for. `model` is already resolved from aliases by the edge. */
export interface RequestSpec {
  id: number;
  model: string;
  /** Idle-grace hold this request asks for once it drains (`X-QM-Hold-Ms`); default `hold_ms`. */
  holdMs?: number | undefined;
  /** How long this request honours other models' holds (`X-QM-Patience-Ms`); default `patience_ms`. */
  patienceMs?: number | undefined;
  /**
   * How long the model stays loaded once idle after this request, in place of its `ttl_s`
   * until a later request asks otherwise (Ollama's `keep_alive`): `0` stops it once it is idle,
   * negative keeps it resident; absent leaves the model's current setting.
   */
  keepAliveMs?: number | undefined;
  /**
   * The conversation it belongs to (a client's session id, or a hash of its first messages):
   * whose tool gaps the cost policy learns. Absent: the model's requests count as one.
   */
  conversation?: string | undefined;
  /**
   * The request carries a tool result (a `tool` message, a `tool_result` block, a Responses
   * `*_call_output` item): its conversation is an agent loop that runs its tools (design.md,
   * "Evidence of a loop"). Absent: not known, taken as carrying one.
   */
  toolResult?: boolean | undefined;
  /**
   * The key it was made with (`[keys.NAME]`, resolved by the edge): who it is charged to when
   * keys share the GPU (design.md, "Fair share"). Absent: the key `anonymous`, priority
   * `normal`, no cap. `maxConcurrency`: most of its requests in flight at once; 0 = no cap.
   */
  key?: RequestKey | undefined;
}

/** What the scheduler is told of a request's key. */
export interface RequestKey {
  name: string;
  priority: KeyPriority;
  maxConcurrency: number;
}

/** A swap: stop `evict` (in parallel), start `target`, wait until it is ready. */
export interface Swap {
  id: number;
  target: string;
  evict: string[];
  /** The part of `evict` stopped to fit a memory budget (the rest: the groups' swap rules). */
  budget?: string[];
  /** The part of `evict` put to sleep rather than stopped (`evict = "sleep"` models). */
  sleep?: string[];
  /** The target is sleeping: wake it (and start it cold should that fail), not a cold start. */
  wake?: boolean;
  /** Several GPUs: the card(s) the target is placed on (the policy's choice). Absent: the box. */
  gpus?: number[];
}

/**
 * How a swap ended. `asleep`: the evictees that really went to sleep (a subset of
 * `Swap.sleep`; one that failed to sleep was stopped instead and is not in it).
 */
export type SwapResult =
  | { ok: true; asleep?: string[] }
  | { ok: false; error: QmError; asleep?: string[] };

/**
 * What happened to a model's idle-grace hold: `granted` (its last request drained and earned
 * one, a renewal included), `expired` (its deadline passed while the model was still up: with
 * `hold_policy = "cost"`, its expected gap is spent), `preempted` (a waiter past its patience
 * evicted it while held) or `dropped` (`hold_policy = "cost"`: a waiter evicted it because
 * holding cost more than swapping, or because it reached its fairness bound; or a waiter of a
 * higher-priority key evicted it; `HoldWhy.reason`).
 */
export type HoldChange = "granted" | "expired" | "preempted" | "dropped";

/**
 * Why a hold was dropped (`HoldChange` `dropped`): by the cost verdict (`cost`, `fairness`),
 * or for a waiter of a higher-priority key (`priority`).
 */
export type HoldDropReason = "cost" | "fairness" | "priority";

/**
 * The figures a hold is weighed by (`hold_policy = "cost"`), reported with `granted` and
 * `dropped`: the tool gap expected (typical; for `dropped`, what was left of it) and what
 * swapping the model back would cost.
 */
export interface HoldWhy {
  gapMs: number;
  swapMs: number;
  reason?: HoldDropReason;
}

/** How a served request ended, as far as the scheduler cares. */
export interface ServeOutcome {
  /** The response ended in tool calls (an agent loop will likely come back). */
  toolCalls: boolean;
}

/**
 * The scheduler's only window onto the world. Every method returns at once; slow work is
 * started here and comes back later as an event. Implementations must not call back into the
 * scheduler synchronously (the scheduler tolerates it, but defers the call).
 */
export interface Effects {
  /**
   * Hand the request to its caller. Returns false when the caller has gone: the request
   * is then over (no serveDone will follow) and is not counted in flight.
   */
  grant(requestId: number, model: string): boolean;
  /** End the request with an error. */
  fail(requestId: number, error: QmError): void;
  /** Begin a swap; report back with `swapDone(swap.id, result)`. */
  startSwap(swap: Swap): void;
  /**
   * Abort swap `swapId` in progress: its target must not start, or is stopped if it has; the
   * swap then reports `swapDone(swapId, { ok: false, error })` once the target is down — and
   * no `stopped()` follows.
   */
  abortSwap(swapId: number, reason: SwapAbortReason): void;
  /** Stop models outside any swap (TTL, unload); report each with `stopped(model)`. */
  stopModels(models: string[], reason: StopReason): void;
  /**
   * Put `evict = "sleep"` models to sleep outside any swap (TTL, keep_alive 0, memory
   * pressure); report each with `slept(model, asleep)`: false when it could not sleep and
   * was stopped instead.
   */
  sleepModels(models: string[], reason: StopReason): void;
  /** A queued request's position changed (1-based), or it left the queue (0). */
  position(requestId: number, position: number): void;
  /** The swap this request waits for has started. */
  loading(requestId: number, model: string): void;
  /** Arm the single wake timer for this clock time (replacing any earlier one); null disarms. */
  wakeAt(atMs: number | null): void;
  /**
   * A model's hold changed; `untilMs` is the hold's deadline (clock time); `why`, under
   * `hold_policy = "cost"`, the figures it was weighed by. For metrics, events and status.
   */
  holdChanged(model: string, change: HoldChange, untilMs: number, why?: HoldWhy): void;
  /** A model's state changed (for logs, `/api/events`, metrics). */
  stateChanged(model: string, state: ModelState, detail?: string): void;
}
