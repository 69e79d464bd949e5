/** The `reconfigure` event (a config reload): settings, live model keys, retired models. */
import { describe, expect, test } from "bun:test";
import { GroupPolicy } from "../../src/policy/group.ts";
import { config } from "../support/config.ts";
import { harness, modelsToml } from "../support/harness.ts";

/** The reload as the runtime hands it over: the next config, its policy, what was removed. */
function reconfigure(h: ReturnType<typeof harness>, toml: string, retire: string[] = []) {
  const next = config(toml);
  h.sched.reconfigure({ config: next, policy: new GroupPolicy(next), retire });
}

describe("reconfigure", () => {
  test("a ready model keeps its state and in-flight count; a new model can be requested", () => {
    const h = harness(modelsToml("a"));
    const r = h.req("a");
    h.finishSwap();
    reconfigure(h, modelsToml("a", "b"));
    expect(h.state("a")).toBe("ready");
    expect(h.sched.snapshot().models.find((m) => m.id === "a")?.inflight).toBe(1);
    expect(h.state("b")).toBe("stopped");
    h.sched.serveDone(r);
    h.req("b");
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
  });

  test("a retired busy model gets no new grant, stops once drained, then leaves the table", () => {
    const h = harness(modelsToml("a", "b"));
    const r1 = h.req("a");
    h.finishSwap();
    reconfigure(h, modelsToml("b"), ["a"]);
    const r2 = h.req("a"); // an edge that resolved "a" before the reload
    expect(h.fx.granted).toEqual([r1]);
    expect(h.fx.stops).toEqual([]);
    h.sched.serveDone(r1);
    expect(h.fx.stops).toEqual([["a"]]);
    h.sched.stopped("a");
    expect(h.state("a")).toBeUndefined();
    expect(h.fx.failed.get(r2)?.code).toBe("model_not_found");
    expect(h.sched.snapshot().models.map((m) => m.id)).toEqual(["b"]);
  });

  test("scheduler.max_queue applies to the next request", () => {
    const h = harness(modelsToml("a", "b"));
    h.req("a");
    reconfigure(h, `[scheduler]\nmax_queue = 1\n${modelsToml("a", "b")}`);
    h.req("b"); // waits (collides with a's swap)
    const over = h.req("b");
    expect(h.fx.failed.get(over)?.code).toBe("queue_full");
  });

  test("scheduler.hold_on, hold_ms and hold_policy apply to requests granted after the reload", () => {
    const h = harness(modelsToml("a", "b"));
    const r1 = h.req("a");
    h.finishSwap();
    h.sched.serveDone(r1); // hold_on = "tool_calls": no tool calls, no hold
    expect(h.sched.snapshot().models.find((m) => m.id === "a")?.heldUntil).toBeNull();
    reconfigure(
      h,
      `[scheduler]\nhold_on = "request"\nhold_ms = 5000\nhold_policy = "fixed"\n${modelsToml("a", "b")}`,
    );
    const r2 = h.req("a");
    h.sched.serveDone(r2);
    expect(h.sched.snapshot().models.find((m) => m.id === "a")?.heldUntil).toBe(
      h.clock.now() + 5000,
    );
  });
});
