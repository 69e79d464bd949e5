import { describe, expect, test } from "bun:test";
import { IdleMemory, QUIET_MS, SETTLE_MS } from "../../src/shared/idle-memory.ts";
import { Sweep, type Swept } from "../../src/shared/sweep.ts";
import { FakeTimers } from "../support/fake-timers.ts";

const entry = (): Swept => ({ sweep() {} });

function watched() {
  const timers = new FakeTimers();
  const work = new Sweep(timers);
  let released = 0;
  const idle = new IdleMemory(work, () => released++, timers);
  idle.start();
  return { timers, work, idle, released: () => released };
}

describe("IdleMemory", () => {
  test("what start-up left is given back once start-up has settled, and only once", () => {
    const w = watched();
    w.timers.advance(SETTLE_MS - 1);
    expect(w.released()).toBe(0);
    w.timers.advance(1);
    expect(w.released()).toBe(1);
    w.timers.advance(10 * QUIET_MS);
    expect(w.released()).toBe(1);
  });

  test("work begun before start-up settled: no release then; once qm has been quiet for a period", () => {
    const w = watched();
    const e = entry();
    w.work.add(e);
    w.work.delete(e);
    w.timers.advance(SETTLE_MS);
    expect(w.released()).toBe(0);
    w.timers.advance(QUIET_MS);
    expect(w.released()).toBe(0);
    w.timers.advance(QUIET_MS);
    expect(w.released()).toBe(1);
    w.timers.advance(10 * QUIET_MS);
    expect(w.released()).toBe(1);
  });

  test("never while work keeps coming; once after it stops", () => {
    const w = watched();
    w.timers.advance(2 * QUIET_MS); // the start-up's release
    expect(w.released()).toBe(1);
    for (let i = 0; i < 5; i++) {
      const e = entry();
      w.work.add(e);
      w.work.delete(e);
      w.timers.advance(QUIET_MS);
    }
    expect(w.released()).toBe(1);
    w.timers.advance(QUIET_MS);
    expect(w.released()).toBe(2);
    w.timers.advance(5 * QUIET_MS);
    expect(w.released()).toBe(2);
  });

  test("not while a call is still running, however quiet; as soon as it has ended", () => {
    const w = watched();
    w.timers.advance(2 * QUIET_MS);
    const e = entry();
    w.work.add(e);
    w.timers.advance(5 * QUIET_MS);
    expect(w.released()).toBe(1);
    w.work.delete(e);
    w.timers.advance(QUIET_MS);
    expect(w.released()).toBe(2);
  });

  test("stopped, it looks no more and leaves no timer", () => {
    const w = watched();
    w.idle.stop();
    expect(w.timers.pending).toBe(0);
    w.timers.advance(5 * QUIET_MS);
    expect(w.released()).toBe(0);
  });
});
