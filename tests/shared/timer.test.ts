import { describe, expect, test } from "bun:test";
import { setLongTimeout } from "../../src/shared/timer.ts";
import { FakeTimers } from "../support/fake-timers.ts";

const MAX = 2 ** 31 - 1;

/** FakeTimers, recording every delay asked of it. */
function recording() {
  const timers = new FakeTimers();
  const asked: number[] = [];
  const set = timers.set.bind(timers);
  timers.set = (fn, ms) => {
    asked.push(ms);
    return set(fn, ms);
  };
  return { timers, asked, now: () => timers.now() };
}

describe("setLongTimeout", () => {
  test("a delay a timer can hold is armed as is", () => {
    const t = recording();
    let fired = 0;
    setLongTimeout(() => fired++, 5000, t.timers);
    expect(t.asked).toEqual([5000]);
    t.timers.advance(5000);
    expect(fired).toBe(1);
  });

  test("a longer delay is armed in steps no timer overflows, and fires once at its deadline", () => {
    const t = recording();
    const fired: number[] = [];
    const delay = 99_999_999_999; // what X-QM-Hold-Ms once asked for
    setLongTimeout(() => fired.push(t.now()), delay, t.timers);
    t.timers.advance(delay - 1);
    expect(fired).toEqual([]);
    t.timers.advance(1);
    expect(fired).toEqual([delay]);
    expect(t.asked.every((ms) => ms <= MAX)).toBe(true);
    expect(t.asked).toHaveLength(Math.ceil(delay / MAX));
    expect(t.timers.pending).toBe(0);
  });

  test("cancel stops whichever step is armed", () => {
    const t = recording();
    const cancel = setLongTimeout(() => {}, 3 * MAX, t.timers);
    t.timers.advance(MAX);
    cancel();
    expect(t.timers.pending).toBe(0);
  });
});
