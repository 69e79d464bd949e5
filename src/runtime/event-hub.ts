import type { QmEvent } from "../api/gateway.ts";
import { RingBuffer } from "../shared/ring-buffer.ts";

/** Events kept for `Last-Event-ID` resumes. */
export const KEPT_EVENTS = 1000;

/**
 * Fan-out of state changes to `/api/events` subscribers. Slow subscribers are never awaited.
 * Each event gets the next id (1, 2, …); the last `KEPT_EVENTS` are kept, so a client that
 * lost its connection can ask for what it missed (`since`).
 */
export class EventHub {
  private readonly subscribers = new Set<(e: QmEvent, id: number) => void>();
  private readonly kept: RingBuffer<{ id: number; event: QmEvent }>;
  private seq = 0;

  constructor(keep = KEPT_EVENTS) {
    this.kept = new RingBuffer(keep);
  }

  /** The id of the last event published (0: none yet). */
  get lastId(): number {
    return this.seq;
  }

  subscribe(fn: (e: QmEvent, id: number) => void): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  /** Someone is subscribed (an event costs nothing to build when nobody is). */
  get listening(): boolean {
    return this.subscribers.size > 0;
  }

  /**
   * The events after `id`, oldest first; null when some of them are no longer kept (or `id`
   * was never given out), so the caller must start afresh.
   */
  since(id: number): { id: number; event: QmEvent }[] | null {
    if (!Number.isInteger(id) || id < 0 || id > this.seq) return null;
    if (id === this.seq) return [];
    const all = this.kept.toArray();
    const first = all[0];
    if (!first || first.id > id + 1) return null;
    return all.filter((e) => e.id > id);
  }

  publish(event: QmEvent): void {
    const id = ++this.seq;
    this.kept.push({ id, event });
    for (const fn of this.subscribers) {
      try {
        fn(event, id);
      } catch {
        // A broken subscriber must not break the scheduler's effect that published.
      }
    }
  }
}
