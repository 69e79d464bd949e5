import type { FairShare } from "./fair-share.ts";
import type { GapBook } from "./gaps.ts";
import { shownConversation } from "./grants.ts";
import { idleExpiry, type ModelTable } from "./models.ts";
import type { SwapBook } from "./swaps.ts";
import type { WaitLine } from "./wait-line.ts";
import { heldWait } from "./waiter.ts";

/** What the scheduler's read-only snapshot is made from. */
export interface SnapshotParts {
  models: ModelTable;
  queue: WaitLine;
  swaps: SwapBook;
  fair: FairShare;
  gaps: GapBook;
  /** Granted requests not yet done. */
  inflight: number;
  now: number;
}

/** The scheduler's state for status pages, metrics and tests; never used to gate a decision. */
export function schedulerSnapshot(p: SnapshotParts) {
  const { models, queue, swaps, fair, gaps, now } = p;
  const queuedFor = new Map<string, number>();
  for (const q of queue) queuedFor.set(q.spec.model, (queuedFor.get(q.spec.model) ?? 0) + 1);
  for (const q of swaps.waiters()) {
    queuedFor.set(q.spec.model, (queuedFor.get(q.spec.model) ?? 0) + 1);
  }
  return {
    models: models.all().map((m) => ({
      id: m.id,
      state: m.state,
      inflight: m.inflight,
      queued: queuedFor.get(m.id) ?? 0,
      /** Who waits for it: per key, how many. */
      queuedKeys: fair.waitingKeys(m.id),
      lastError: m.lastError,
      unloadPending: m.unloadPending,
      heldUntil: m.heldUntil > now ? m.heldUntil : null,
      /** The key whose hold it is (null: none, or not known). */
      heldFor: m.heldUntil > now ? (m.holdKey?.name ?? null) : null,
      /**
       * The key whose agent loop, last held here, is in a tool gap (its hold may have run out):
       * lower keys leave the model to it (design.md, "Fair share", 4).
       */
      loopOf:
        m.state === "ready" && m.holdConversation !== null && gaps.inGap(m.holdConversation, now)
          ? (m.holdKey?.name ?? null)
          : null,
      hold:
        m.hold !== null && m.heldUntil > now
          ? {
              conversation: shownConversation(m.hold.conversation),
              gapMs: m.hold.typicalMs,
              windowMs: m.hold.windowMs,
              swapBackMs: m.hold.swapBackMs,
              /** `prior`: no gap measured yet; the figures are the configured window's. */
              measured: m.hold.source !== "prior",
            }
          : null,
      holdEnded: m.holdEnded,
      keepAliveMs: m.keepAliveMs,
      idleExpiry: idleExpiry(m),
      gpus: m.gpus,
    })),
    queueDepth: queue.length,
    /** Queued requests held back by other models' holds (cost policy), with their bounds. */
    heldBack: [...queue]
      .filter((q) => q.quantumAt !== null)
      .map((q) => ({
        id: q.spec.id,
        model: q.spec.model,
        heldWaitMs: heldWait(q, now),
        quantumAt: q.quantumAt!,
      })),
    swaps: swaps.snapshot(),
    inflight: p.inflight,
    /** Keys seen: priority, requests waiting and in flight, share (design.md, "Fair share"). */
    get keys() {
      return fair.snapshot();
    },
  };
}
