import { describe, expect, test } from "bun:test";
import { delay, every, setLongTimeout, setTimeoutSignal, within } from "../../src/shared/timer.ts";
import { FakeTimers } from "../support/fake-timers.ts";

const MAX = 2 ** 31 - 1;

/** FakeTimers, recording every delay asked of it. */
function recording() {
  const timers = new FakeTimers();
  const delays: number[] = [];
  const set = timers.set.bind(timers);
  timers.set = (fn, ms) => {
    delays.push(ms);
    return set(fn, ms);
  };
  return { timers, delays, now: () => timers.now() };
}

describe("setLongTimeout", () => {
  test("a delay a timer can hold is armed as is", () => {
    const t = recording();
    let fired = 0;
    setLongTimeout(() => fired++, 5000, t.timers);
    expect(t.delays).toEqual([5000]);
    t.timers.advance(5000);
    expect(fired).toBe(1);
  });

  test("a longer delay is armed in steps no timer overflows, and fires once at its deadline", () => {
    const t = recording();
    const fired: number[] = [];
    const delay = 99_999_999_999; // what X-QM-Hold-Ms once delays for
    setLongTimeout(() => fired.push(t.now()), delay, t.timers);
    t.timers.advance(delay - 1);
    expect(fired).toEqual([]);
    t.timers.advance(1);
    expect(fired).toEqual([delay]);
    expect(t.delays.every((ms) => ms <= MAX)).toBe(true);
    expect(t.delays).toHaveLength(Math.ceil(delay / MAX));
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

/** Lets every promise chain in flight run (no clock time passes). */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

/** `done()` says whether `p` has settled yet. */
function watch(p: Promise<unknown>): () => boolean {
  let done = false;
  p.finally(() => {
    done = true;
  });
  return () => done;
}

describe("delay", () => {
  test("resolves once its time has passed on the timers, not before", async () => {
    const timers = new FakeTimers();
    const done = watch(delay(50, undefined, timers));
    timers.advance(49);
    await settle();
    expect(done()).toBe(false);
    timers.advance(1);
    await settle();
    expect(done()).toBe(true);
  });

  test("an abort ends it early and disarms its timer", async () => {
    const timers = new FakeTimers();
    const ac = new AbortController();
    const done = watch(delay(50, ac.signal, timers));
    ac.abort();
    await settle();
    expect(done()).toBe(true);
    expect(timers.pending).toBe(0);
  });
});

describe("within", () => {
  test("true when the work settles in time (either way); the timer is cleared", async () => {
    const timers = new FakeTimers();
    expect(await within(Promise.resolve(1), 100, timers)).toBe(true);
    expect(await within(Promise.reject(new Error("no")), 100, timers)).toBe(true);
    expect(timers.pending).toBe(0);
  });

  test("false once the time runs out first", async () => {
    const timers = new FakeTimers();
    const waiting = within(new Promise(() => {}), 100, timers);
    const done = watch(waiting);
    timers.advance(99);
    await settle();
    expect(done()).toBe(false);
    timers.advance(1);
    expect(await waiting).toBe(false);
  });
});

describe("setTimeoutSignal", () => {
  test("aborts with a TimeoutError once its time has passed", () => {
    const timers = new FakeTimers();
    const limit = setTimeoutSignal(timers, 30);
    timers.advance(29);
    expect(limit.signal.aborted).toBe(false);
    timers.advance(1);
    expect(limit.signal.aborted).toBe(true);
    expect((limit.signal.reason as Error).name).toBe("TimeoutError");
  });

  test("cancel disarms it; a limit of 0 never fires", () => {
    const timers = new FakeTimers();
    const limit = setTimeoutSignal(timers, 30);
    limit.cancel();
    expect(timers.pending).toBe(0);
    const none = setTimeoutSignal(timers, 0);
    timers.advance(1_000_000);
    expect([limit.signal.aborted, none.signal.aborted]).toEqual([false, false]);
  });
});

describe("every", () => {
  test("runs every period until stopped, one timer at a time", () => {
    const timers = new FakeTimers();
    const ran: number[] = [];
    const stop = every(() => ran.push(timers.now()), 100, timers);
    timers.advance(350);
    expect(ran).toEqual([100, 200, 300]);
    expect(timers.pending).toBe(1);
    stop();
    timers.advance(1000);
    expect(ran).toEqual([100, 200, 300]);
    expect(timers.pending).toBe(0);
  });

  test("stopped from inside a run, it is not re-armed", () => {
    const timers = new FakeTimers();
    let runs = 0;
    const stop = every(
      () => {
        runs++;
        stop();
      },
      10,
      timers,
    );
    timers.advance(100);
    expect(runs).toBe(1);
    expect(timers.pending).toBe(0);
  });
});
