import { describe, expect, test } from "bun:test";
import { QmError } from "../../src/shared/errors.ts";
import { harness, modelsToml } from "../support/harness.ts";

const two = modelsToml("a", "b");
const stopped = new QmError("model_unloaded", 'model "a" was stopped before it started');

/** Effects asked to stop models outside a swap (abortSwap is never one of them). */
const stopCalls = (log: string[]) => log.filter((l) => l.startsWith("stop ["));

describe("abortSwap: one explicit effect per aborted swap", () => {
  test("unloading a loading model aborts its swap once, and nothing else is stopped", () => {
    const h = harness(two);
    const r1 = h.req("a");
    h.sched.unload("a");
    expect(h.fx.aborts).toEqual([{ swapId: 1, reason: "unload" }]);
    expect(stopCalls(h.fx.log)).toEqual([]);
    // The swap is still in progress until it reports its end.
    expect(h.state("a")).toBe("starting");
    expect(h.sched.snapshot().swaps).toHaveLength(1);
    expect(h.fx.failed.has(r1)).toBe(false);
    h.sched.swapDone(1, { ok: false, error: stopped });
    expect(h.fx.failed.get(r1)?.message).toBe('model "a" was unloaded while it was loading');
    expect(h.state("a")).toBe("stopped");
    expect(h.sched.snapshot().swaps).toEqual([]);
  });

  test("an abort that lands before the evictions finish ends the swap with both models stopped", () => {
    const h = harness(two);
    const ra = h.req("a");
    h.finishSwap();
    h.sched.serveDone(ra);
    const rb = h.req("b");
    expect(h.fx.lastSwap()).toMatchObject({ id: 2, target: "b", evict: ["a"] });
    h.sched.unload("b");
    expect(h.fx.aborts).toEqual([{ swapId: 2, reason: "unload" }]);
    expect(h.state("a")).toBe("stopping"); // its eviction is the swap's, still running
    h.sched.swapDone(2, { ok: false, error: stopped });
    expect(h.state("a")).toBe("stopped");
    expect(h.state("b")).toBe("stopped");
    expect(h.fx.failed.get(rb)?.code).toBe("model_unloaded");
    expect(stopCalls(h.fx.log)).toEqual([]);
  });

  test("unloading twice (or everything, then one) aborts once", () => {
    const h = harness(two);
    h.req("a");
    h.sched.unload("a");
    h.sched.unload("a");
    h.sched.unload(null);
    expect(h.fx.aborts).toEqual([{ swapId: 1, reason: "unload" }]);
  });

  test("a request for the aborted model waits for the abort, then starts it afresh", () => {
    const h = harness(two);
    const r1 = h.req("a");
    h.sched.unload("a");
    const r2 = h.req("a");
    expect(h.fx.swaps).toHaveLength(1); // no second swap while the first one is ending
    expect(h.fx.log).not.toContain(`loading ${r2} a`);
    expect(h.fx.positions.get(r2)).toEqual([1]);
    h.sched.swapDone(1, { ok: false, error: stopped });
    expect(h.fx.failed.get(r1)?.code).toBe("model_unloaded");
    expect(h.fx.failed.has(r2)).toBe(false);
    expect(h.fx.lastSwap()).toMatchObject({ id: 2, target: "a", evict: [] });
    expect(h.fx.positions.get(r2)).toEqual([1, 0]);
    h.finishSwap();
    expect(h.fx.granted).toEqual([r2]);
    expect(h.fx.aborts).toHaveLength(1);
  });

  test("a stopped() for an aborted target changes nothing: only its swapDone ends it", () => {
    const h = harness(two);
    h.req("a");
    h.sched.unload("a");
    h.sched.stopped("a");
    expect(h.state("a")).toBe("starting");
    expect(h.sched.snapshot().swaps).toHaveLength(1);
  });

  test("an abandoned swap is aborted with its reason, and only once", () => {
    const h = harness(two);
    const ra = h.req("a");
    h.sched.cancel(ra);
    h.req("b");
    h.req("b");
    expect(h.fx.aborts).toEqual([{ swapId: 1, reason: "abandoned" }]);
    expect(h.fx.log).toContain("abort 1 a abandoned");
  });

  test("a target that comes up despite its abort is stopped like any idle model", () => {
    const h = harness(two);
    const r1 = h.req("a");
    h.sched.unload("a");
    h.sched.swapDone(1, { ok: true });
    expect(h.fx.granted).toEqual([]);
    expect(h.fx.failed.get(r1)?.code).toBe("model_unloaded");
    expect(stopCalls(h.fx.log)).toEqual(["stop [a] unload"]);
    expect(h.state("a")).toBe("stopping");
    h.sched.stopped("a");
    expect(h.state("a")).toBe("stopped");
  });
});
