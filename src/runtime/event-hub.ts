import type { QmEvent } from "../api/gateway.ts";

/** Fan-out of state changes to `/api/events` subscribers. Slow subscribers are never awaited. */
export class EventHub {
  private readonly subscribers = new Set<(e: QmEvent) => void>();

  subscribe(fn: (e: QmEvent) => void): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  /** Someone is subscribed (an event costs nothing to build when nobody is). */
  get listening(): boolean {
    return this.subscribers.size > 0;
  }

  publish(event: QmEvent): void {
    for (const fn of this.subscribers) {
      try {
        fn(event);
      } catch {
        // A broken subscriber must not break the scheduler's effect that published.
      }
    }
  }
}
