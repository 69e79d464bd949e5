import { describe, expect, test } from "bun:test";
import { setLongTimeout, type TimerApi } from "../../src/shared/timer.ts";

/** Records every timer armed; `fire()` moves the clock to the earliest and runs it. */
function fakeTimers() {
  let now = 0;
  const armed: { at: number; ms: number; fn: () => void; id: number }[] = [];
  let nextId = 1;
  const api: TimerApi = {
    set(fn, ms) {
      const id = nextId++;
      armed.push({ at: now + ms, ms, fn, id });
      return id;
    },
    clear(h) {
      const i = armed.findIndex((t) => t.id === h);
      if (i >= 0) armed.splice(i, 1);
    },
  };
  return {
    api,
    now: () => now,
    armed,
    fire() {
      armed.sort((a, b) => a.at - b.at);
      const t = armed.shift()!;
      now = t.at;
      t.fn();
    },
  };
}

const MAX = 2 ** 31 - 1;

describe("setLongTimeout", () => {
  test("a delay a timer can hold is armed as is", () => {
    const t = fakeTimers();
    let fired = 0;
    setLongTimeout(() => fired++, 5000, t.now, t.api);
    expect(t.armed.map((a) => a.ms)).toEqual([5000]);
    t.fire();
    expect(fired).toBe(1);
  });

  test("a longer delay is armed in steps no timer overflows, and fires once at its deadline", () => {
    const t = fakeTimers();
    let firedAt = -1;
    const delay = 99_999_999_999; // what X-QM-Hold-Ms once asked for
    setLongTimeout(
      () => {
        firedAt = t.now();
      },
      delay,
      t.now,
      t.api,
    );
    let steps = 0;
    while (firedAt < 0) {
      expect(t.armed).toHaveLength(1);
      expect(t.armed[0]!.ms).toBeLessThanOrEqual(MAX);
      t.fire();
      steps++;
    }
    expect(firedAt).toBe(delay);
    expect(steps).toBe(Math.ceil(delay / MAX));
  });

  test("cancel stops whichever step is armed", () => {
    const t = fakeTimers();
    const cancel = setLongTimeout(() => {}, 3 * MAX, t.now, t.api);
    t.fire();
    cancel();
    expect(t.armed).toHaveLength(0);
  });
});
