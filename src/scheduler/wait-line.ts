import type { Effects } from "./types.ts";
import type { Queued } from "./waiter.ts";

/**
 * The waiting line: requests that could not proceed yet, oldest first. Each hears its position
 * (1-based) whenever it changes, and 0 once it leaves the line to go on.
 */
export class WaitLine implements Iterable<Queued> {
  private readonly queue: Queued[] = [];

  constructor(private readonly effects: Pick<Effects, "position">) {}

  get length(): number {
    return this.queue.length;
  }

  [Symbol.iterator](): Iterator<Queued> {
    return this.queue[Symbol.iterator]();
  }

  /** Requests in the line that `pred` accepts. */
  countWhere(pred: (q: Queued) => boolean): number {
    let n = 0;
    for (const q of this.queue) if (pred(q)) n++;
    return n;
  }

  push(q: Queued): void {
    this.queue.push(q);
  }

  /**
   * Puts the line in the order `arrange` gives it (the same requests): each model's waiters in
   * their fair order (fair-share.ts). Positions are announced by the next `drain`.
   */
  arrange(arrange: (line: readonly Queued[]) => Queued[]): void {
    const next = arrange(this.queue);
    this.queue.splice(0, this.queue.length, ...next);
  }

  /** Back to the head of the line, in order (a swap's waiters beyond the concurrency limit). */
  unshift(qs: Queued[]): void {
    this.queue.unshift(...qs);
  }

  /** Drops a request whose client left; undefined when it was not in the line. */
  remove(requestId: number): Queued | undefined {
    const i = this.queue.findIndex((q) => q.spec.id === requestId);
    if (i < 0) return undefined;
    return this.queue.splice(i, 1)[0];
  }

  /** Empties the line (shutdown). */
  takeAll(): Queued[] {
    return this.queue.splice(0);
  }

  /**
   * Offers every request to `proceed`, oldest first; those it takes (true) leave the line. A
   * request taken may change what an older one faces (a swap it started can be joined, a hold
   * it broke no longer blocks), so the line is offered again until a pass takes none. Then the
   * rest hear their new positions.
   */
  drain(proceed: (q: Queued) => boolean): void {
    for (let taken = true; taken; ) {
      taken = false;
      for (let i = 0; i < this.queue.length; ) {
        const q = this.queue[i]!;
        if (proceed(q)) {
          this.queue.splice(i, 1);
          if (q.reported > 0) this.effects.position(q.spec.id, 0);
          taken = true;
        } else {
          i++;
        }
      }
    }
    this.queue.forEach((q, i) => {
      if (q.reported !== i + 1) {
        q.reported = i + 1;
        this.effects.position(q.spec.id, i + 1);
      }
    });
  }
}
