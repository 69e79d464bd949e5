import type { Timers } from "../../src/proxy/deadline.ts";

/** Timers on a clock that moves only when a test says so; due callbacks run in time order. */
export class FakeTimers implements Timers {
  private t = 0;
  private nextId = 1;
  private readonly due = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.t;
  }

  set(fn: () => void, ms: number): number {
    const id = this.nextId++;
    this.due.set(id, { at: this.t + ms, fn });
    return id;
  }

  clear(handle: unknown): void {
    this.due.delete(handle as number);
  }

  /** Pending timers (a finished deadline must leave none). */
  get pending(): number {
    return this.due.size;
  }

  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let first: [number, { at: number; fn: () => void }] | null = null;
      for (const entry of this.due)
        if (entry[1].at <= end && (!first || entry[1].at < first[1].at)) first = entry;
      if (!first) break;
      this.due.delete(first[0]);
      this.t = first[1].at;
      first[1].fn();
    }
    this.t = end;
  }
}

/**
 * Fake timers whose 0 ms timers (the event loop's next turn) wait in `turns` until `turn()`
 * runs the oldest: work done a slice per turn can be watched a turn at a time.
 */
export function turnTimers() {
  const timers = new FakeTimers();
  const turns = new Map<number, () => void>();
  let id = 1_000_000;
  const set = timers.set.bind(timers);
  const clear = timers.clear.bind(timers);
  timers.set = (fn, ms) => {
    if (ms !== 0) return set(fn, ms);
    turns.set(++id, fn);
    return id;
  };
  timers.clear = (h) => {
    turns.delete(h as number);
    clear(h);
  };
  const turn = () => {
    const [first] = turns;
    if (!first) throw new Error("no turn is due");
    turns.delete(first[0]);
    first[1]();
  };
  return { timers, turns, turn };
}
