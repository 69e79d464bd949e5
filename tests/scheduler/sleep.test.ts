/** `evict = "sleep"`: eviction puts a model to sleep, a request wakes it (design.md, "Sleep"). */
import { describe, expect, test } from "bun:test";
import { GroupPolicy } from "../../src/policy/group.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import { QmError } from "../../src/shared/errors.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { FakeEffects } from "../support/fake-effects.ts";
import { harness } from "../support/harness.ts";

const model = (id: string, extra = "") =>
  `[models.${id}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n${extra}\n`;
// One swap group: bringing in one evicts the other.
const TWO =
  model("a", 'evict = "sleep"\nttl_s = 5') +
  model("b") +
  '[groups.g]\nswap = true\nmembers = ["a", "b"]\n';

/** a up and idle, then a request for b: the swap that sleeps a. */
function aEvicted() {
  const h = harness(TWO);
  h.req("a");
  h.finishSwap();
  h.sched.serveDone(1);
  h.req("b");
  return h;
}

describe("evict = sleep", () => {
  test("a swap puts a sleep model to sleep instead of stopping it; it ends sleeping", () => {
    const h = aEvicted();
    const swap = h.fx.lastSwap();
    expect(swap).toMatchObject({ target: "b", evict: ["a"], sleep: ["a"] });
    expect(swap.wake).toBeUndefined();
    expect(h.state("a")).toBe("stopping");
    h.sched.swapDone(swap.id, { ok: true, asleep: ["a"] });
    expect(h.state("a")).toBe("sleeping");
    expect(h.state("b")).toBe("ready");
    expect(h.fx.granted).toEqual([1, 2]);
    // Sleeping counts as stopped for the budget: it is not among the running.
    expect(h.sched.runningLru()).toEqual(["b"]);
  });

  test("an evictee that could not sleep (stopped instead) ends stopped", () => {
    const h = aEvicted();
    h.sched.swapDone(h.fx.lastSwap().id, { ok: true });
    expect(h.state("a")).toBe("stopped");
  });

  test("a request for a sleeping model is a swap that wakes it", () => {
    const h = aEvicted();
    h.sched.swapDone(h.fx.lastSwap().id, { ok: true, asleep: ["a"] });
    h.sched.serveDone(2);
    const id = h.req("a");
    const wake = h.fx.lastSwap();
    expect(wake).toMatchObject({ target: "a", evict: ["b"], wake: true });
    expect(wake.sleep).toBeUndefined(); // b stops: it is an evict = "stop" model
    expect(h.fx.states).toContain("a:starting");
    h.sched.swapDone(wake.id, { ok: true });
    expect(h.state("a")).toBe("ready");
    expect(h.state("b")).toBe("stopped");
    expect(h.fx.granted).toContain(id);
  });

  test("a failed wake fails its waiters and leaves the model failed, like a failed start", () => {
    const h = aEvicted();
    h.sched.swapDone(h.fx.lastSwap().id, { ok: true, asleep: ["a"] });
    h.sched.serveDone(2);
    const id = h.req("a");
    const error = new QmError("upstream_start_failed", "no");
    h.sched.swapDone(h.fx.lastSwap().id, { ok: false, error });
    expect(h.fx.failed.get(id)?.code).toBe("upstream_start_failed");
    expect(h.state("a")).toBe("failed");
  });

  test("TTL puts a sleep model to sleep (not stop); a stop model's TTL still stops it", () => {
    const h = harness(
      model("a", 'evict = "sleep"\nttl_s = 5') +
        model("c", "ttl_s = 5") +
        '[groups.g]\nswap = false\nmembers = ["a", "c"]\n',
    );
    h.req("a");
    h.finishSwap();
    h.req("c");
    h.finishSwap();
    h.sched.serveDone(1);
    h.sched.serveDone(2);
    h.clock.advance(5000);
    h.sched.wake();
    expect(h.fx.sleeps).toEqual([["a"]]);
    expect(h.fx.stops).toEqual([["c"]]);
    expect(h.fx.log).toContain("sleep [a] ttl");
    expect(h.state("a")).toBe("stopping");
    h.sched.stopped("a"); // a stop report for a model going to sleep is not its end
    expect(h.state("a")).toBe("stopping");
    h.sched.slept("a", true);
    expect(h.state("a")).toBe("sleeping");
    h.sched.stopped("c");
    // Asleep, no TTL runs: nothing more is armed for it, and no later wake sleeps it again.
    expect(h.sched.snapshot().models.find((m) => m.id === "a")?.idleExpiry).toBeNull();
    h.clock.advance(60_000);
    h.sched.wake();
    expect(h.fx.sleeps).toEqual([["a"]]);
  });

  test("a model that fails to sleep outside a swap ends stopped", () => {
    const h = harness(model("a", 'evict = "sleep"\nttl_s = 5'));
    h.req("a");
    h.finishSwap();
    h.sched.serveDone(1);
    h.clock.advance(5000);
    h.sched.wake();
    h.sched.slept("a", false);
    expect(h.state("a")).toBe("stopped");
  });

  test("keep_alive 0 puts a sleep model to sleep once idle", () => {
    const h = harness(model("a", 'evict = "sleep"'));
    h.sched.request({ id: 1, model: "a", keepAliveMs: 0 });
    h.finishSwap();
    h.sched.serveDone(1);
    expect(h.fx.log).toContain("sleep [a] keep_alive 0");
  });

  test("an explicit unload of a sleeping model stops its process for real", () => {
    const h = aEvicted();
    h.sched.swapDone(h.fx.lastSwap().id, { ok: true, asleep: ["a"] });
    h.sched.unload("a");
    expect(h.fx.stops).toEqual([["a"]]);
    expect(h.state("a")).toBe("stopping");
    h.sched.stopped("a");
    expect(h.state("a")).toBe("stopped");
  });

  test("an unload while a model goes to sleep stops it once it is asleep", () => {
    const h = aEvicted();
    h.sched.unload("a"); // a is in b's evict set, going to sleep
    expect(h.fx.stops).toEqual([]);
    h.sched.swapDone(h.fx.lastSwap().id, { ok: true, asleep: ["a"] });
    expect(h.fx.stops).toEqual([["a"]]);
    h.sched.stopped("a");
    expect(h.state("a")).toBe("stopped");
  });

  test("unload all while one sleeps outside a swap: stopped once asleep", () => {
    const h = harness(model("a", 'evict = "sleep"\nttl_s = 5'));
    h.req("a");
    h.finishSwap();
    h.sched.serveDone(1);
    h.clock.advance(5000);
    h.sched.wake();
    h.sched.unload(null);
    h.sched.slept("a", true);
    expect(h.fx.stops).toEqual([["a"]]);
  });

  test("a sleeping process that dies is failed, and the next request starts it cold", () => {
    const h = aEvicted();
    h.sched.swapDone(h.fx.lastSwap().id, { ok: true, asleep: ["a"] });
    h.sched.exited("a", new QmError("upstream_crashed", "gone"));
    expect(h.state("a")).toBe("failed");
    h.sched.serveDone(2);
    h.req("a");
    expect(h.fx.lastSwap().wake).toBeUndefined();
  });

  test("a busy sleep model is never put to sleep: the swap waits for it to drain", () => {
    const h = harness(TWO);
    h.req("a");
    h.finishSwap();
    h.req("b"); // a still serves request 1
    expect(h.fx.swaps.length).toBe(1);
    h.sched.serveDone(1);
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", sleep: ["a"] });
  });

  test("short of RAM that a level-1 sleeper holds: that sleeper is stopped, then the request starts", () => {
    const cfg = config(
      `[resources]\nram_budget_gb = 32\n` +
        model("s", 'evict = "sleep"\nest_ram_gb = 20\nttl_s = 5') +
        model("t", "est_ram_gb = 20") +
        '[groups.cpu]\npool = "ram"\nswap = false\nexclusive = false\nmembers = ["s", "t"]\n',
    );
    const clock = new FakeClock(0);
    const fx = new FakeEffects();
    // The runtime's budget: a level-1 sleeper's RAM is off the RAM budget while it sleeps.
    let sched!: Scheduler;
    const budget = {
      vramGb: () => 0,
      ramGb: () => 32 - (sched.state("s") === "sleeping" ? 20 : 0),
    };
    sched = new Scheduler(cfg, new GroupPolicy(cfg, budget), fx, clock);
    sched.request({ id: 1, model: "s" });
    sched.swapDone(fx.lastSwap().id, { ok: true });
    sched.serveDone(1);
    clock.advance(5000);
    sched.wake();
    sched.slept("s", true);
    expect(sched.state("s")).toBe("sleeping");
    sched.request({ id: 2, model: "t" });
    expect(fx.stops).toEqual([["s"]]);
    expect(fx.log).toContain("stop [s] RAM for t");
    expect(fx.failed.size).toBe(0);
    expect(fx.swaps.length).toBe(1); // waits for the sleeper to go
    sched.request({ id: 3, model: "t" }); // a second waiter does not stop anything more
    expect(fx.stops).toEqual([["s"]]);
    sched.stopped("s");
    expect(fx.lastSwap()).toMatchObject({ target: "t", evict: [] });
    sched.swapDone(fx.lastSwap().id, { ok: true });
    expect(fx.granted).toEqual([1, 2, 3]);
  });
});
