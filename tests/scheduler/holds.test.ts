import { describe, expect, test } from "bun:test";
import { QmError } from "../../src/shared/errors.ts";
import { harness, modelsToml } from "../support/harness.ts";

/** These cases are about `hold_policy = "fixed"` (hold-cost.test.ts has the cost policy's). */
const sched = (extra = "") =>
  `[scheduler]\nhold_ms = 10000\npatience_ms = 300000\nhold_policy = "fixed"\n${extra}\n`;
const two = modelsToml("a", "b");

/** a is loaded and its one request has finished (with or without tool calls). */
function aServedOnce(toml: string, toolCalls: boolean) {
  const h = harness(toml);
  const r = h.req("a");
  h.finishSwap();
  h.sched.serveDone(r, { toolCalls });
  return h;
}

describe("idle-grace hold", () => {
  test('hold_on = "tool_calls": a response ending in tool calls holds the model for hold_ms', () => {
    const h = aServedOnce(sched() + two, true);
    const rb = h.req("b");
    expect(h.fx.swaps).toHaveLength(1); // a is held: b waits
    expect(h.fx.positions.get(rb)).toEqual([1]);
    expect(h.sched.snapshot().models.find((m) => m.id === "a")?.heldUntil).toBe(
      h.clock.now() + 10_000,
    );
    expect(h.fx.wake).toBe(h.clock.now() + 10_000);
    h.clock.advance(10_000);
    h.sched.wake();
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
  });

  test('hold_on = "tool_calls": a plain answer earns no hold', () => {
    const h = aServedOnce(sched() + two, false);
    h.req("b");
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
  });

  test('hold_on = "request": every drained request holds', () => {
    const h = aServedOnce(sched('hold_on = "request"') + two, false);
    h.req("b");
    expect(h.fx.swaps).toHaveLength(1);
  });

  test("X-QM-Hold-Ms: 0 on the request means no hold", () => {
    const h = harness(sched('hold_on = "request"') + two);
    h.sched.request({ id: 100, model: "a", holdMs: 0 });
    h.finishSwap();
    h.sched.serveDone(100, { toolCalls: true });
    h.req("b");
    expect(h.fx.lastSwap().target).toBe("b");
  });

  test("the window is the one the request asked for, and a later round renews it", () => {
    const h = harness(sched() + two);
    h.sched.request({ id: 100, model: "a", holdMs: 2000 });
    h.finishSwap();
    h.sched.serveDone(100, { toolCalls: true });
    const first = h.clock.now() + 2000;
    expect(h.fx.wake).toBe(first);
    h.clock.advance(1500);
    h.sched.request({ id: 101, model: "a", holdMs: 2000 }); // the loop's next round
    h.sched.serveDone(101, { toolCalls: true });
    expect(h.fx.wake).toBe(h.clock.now() + 2000);
  });

  test("a hold ends when the model stops: a crash lets the waiter through at once", () => {
    const h = aServedOnce(sched() + two, true);
    h.req("b");
    expect(h.fx.swaps).toHaveLength(1);
    h.sched.exited("a", new QmError("upstream_crashed", "gone"));
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: [] });
  });
});

describe("patience", () => {
  test("a waiter past its patience preempts the held model", () => {
    const h = aServedOnce(sched() + two, true);
    h.sched.request({ id: 50, model: "b", patienceMs: 3000 });
    expect(h.fx.wake).toBe(h.clock.now() + 3000); // patience comes before the 10 s hold
    h.clock.advance(3000);
    h.sched.wake();
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
  });

  test("patience belongs to the waiter: an impatient one goes first, a patient one keeps waiting", () => {
    const h = harness(sched() + modelsToml("a", "b", "c"));
    const ra = h.req("a");
    h.finishSwap();
    h.sched.serveDone(ra, { toolCalls: true });
    h.sched.request({ id: 60, model: "b", patienceMs: 60_000 });
    h.sched.request({ id: 61, model: "c", patienceMs: 1000 });
    h.clock.advance(1000);
    h.sched.wake();
    expect(h.fx.lastSwap()).toMatchObject({ target: "c", evict: ["a"] });
    expect(h.sched.snapshot().queueDepth).toBe(1);
  });

  test("a waiter past its patience stops new work reaching the busy model it needs", () => {
    const h = harness(sched() + two);
    const r1 = h.req("a");
    h.finishSwap();
    h.sched.request({ id: 70, model: "b", patienceMs: 1000 });
    h.clock.advance(1000);
    h.sched.wake(); // b is past its patience; a is busy (r1), so a drains
    const r2 = h.req("a");
    expect(h.fx.granted).toEqual([r1]); // r2 waits instead of keeping a busy forever
    h.sched.serveDone(r1);
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    h.finishSwap();
    expect(h.fx.granted).toEqual([r1, 70]);
    expect(h.sched.snapshot().queueDepth).toBe(1); // r2 now waits for b to be done
    h.sched.serveDone(70);
    h.finishSwap();
    expect(h.fx.granted).toEqual([r1, 70, r2]);
  });
});

describe("wait status", () => {
  test("a queued request hears its position change, then that its swap started", () => {
    const h = harness(two);
    const ra = h.req("a");
    h.finishSwap();
    const rb1 = h.req("b");
    const rb2 = h.req("b");
    expect(h.fx.positions.get(rb1)).toEqual([1]);
    expect(h.fx.positions.get(rb2)).toEqual([2]);
    h.sched.serveDone(ra);
    expect(h.fx.positions.get(rb1)).toEqual([1, 0]);
    expect(h.fx.positions.get(rb2)).toEqual([2, 0]);
    expect(h.fx.log).toContain(`loading ${rb1} b`);
    expect(h.fx.log).toContain(`loading ${rb2} b`);
  });
});

describe("abandoned-swap abort", () => {
  test("a swap whose waiters all left is aborted once something else queues behind it", () => {
    const h = harness(two);
    const ra = h.req("a");
    h.sched.cancel(ra);
    expect(h.fx.stops).toEqual([]); // nothing queued yet: let it load
    const rb = h.req("b");
    expect(h.fx.stops).toEqual([["a"]]);
    h.sched.swapDone(h.fx.lastSwap().id, {
      ok: false,
      error: new QmError("cancelled", "stopped during start"),
    });
    expect(h.state("a")).toBe("stopped");
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: [] });
    h.finishSwap();
    expect(h.fx.granted).toEqual([rb]);
  });

  test("a swap with a live waiter is never aborted", () => {
    const h = harness(two);
    h.req("a");
    h.req("b");
    expect(h.fx.stops).toEqual([]);
  });

  test("a request for the aborted model waits for the stop and starts it afresh", () => {
    const h = harness(two);
    const ra = h.req("a");
    h.sched.cancel(ra);
    h.req("b");
    const ra2 = h.req("a");
    expect(h.fx.swaps).toHaveLength(1);
    h.sched.swapDone(1, { ok: false, error: new QmError("cancelled", "stopped") });
    // b (older) goes first; a waits for it.
    expect(h.fx.lastSwap().target).toBe("b");
    expect(h.fx.failed.has(ra2)).toBe(false);
  });
});
