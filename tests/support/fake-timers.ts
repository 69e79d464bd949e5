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
