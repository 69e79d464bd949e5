import type { FairShare } from "./fair-share.ts";
import { shownConversation } from "./grants.ts";
import { idleExpiry, type ModelTable } from "./models.ts";
import type { SwapBook } from "./swaps.ts";
import type { WaitLine } from "./wait-line.ts";
import { heldWait, type Queued } from "./waiter.ts";

/** What the scheduler's read-only snapshot is made from. */
export interface SnapshotParts {
  models: ModelTable;
  queue: WaitLine;
  swaps: SwapBook;
  fair: FairShare;
  /** Granted requests not yet done. */
  inflight: number;
  now: number;
}

/** The scheduler's state for status pages, metrics and tests; never used to gate a decision. */
export function schedulerSnapshot(p: SnapshotParts) {
  const { models, queue, swaps, fair, now } = p;
  const queuedFor = new Map<string, Record<string, number>>();
  const count = (q: Queued) => {
    let keys = queuedFor.get(q.spec.model);
    if (!keys) {
      keys = {};
      queuedFor.set(q.spec.model, keys);
    }
    keys[q.key.name] = (keys[q.key.name] ?? 0) + 1;
  };
  for (const q of queue) count(q);
  for (const q of swaps.waiters()) count(q);
  const total = (keys: Record<string, number> | undefined) => {
    let n = 0;
    for (const k in keys) n += keys[k]!;
    return n;
  };
  return {
    models: models.all().map((m) => ({
      id: m.id,
      state: m.state,
      inflight: m.inflight,
      queued: total(queuedFor.get(m.id)),
      /** Who waits for it: per key, how many. */
      queuedKeys: queuedFor.get(m.id) ?? {},
      lastError: m.lastError,
      unloadPending: m.unloadPending,
      heldUntil: m.heldUntil > now ? m.heldUntil : null,
      /** The key whose hold it is (null: none, or not known). */
      heldFor: m.heldUntil > now ? (m.holdKey?.name ?? null) : null,
      hold:
        m.hold !== null && m.heldUntil > now
          ? {
              conversation: shownConversation(m.hold.conversation),
              gapMs: m.hold.typicalMs,
              windowMs: m.hold.windowMs,
              swapBackMs: m.hold.swapBackMs,
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
    /** Keys with work or debt: priority, requests in flight, share (design.md, "Fair share"). */
    keys: fair.snapshot(),
  };
}
