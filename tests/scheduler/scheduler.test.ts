import { describe, expect, test } from "bun:test";
import { QmError } from "../../src/shared/errors.ts";
import { harness, modelsToml } from "../support/harness.ts";

const two = modelsToml("a", "b");

describe("decision tree", () => {
  test("unknown model fails with model_not_found", () => {
    const h = harness(two);
    const r = h.req("nope");
    expect(h.fx.failed.get(r)?.code).toBe("model_not_found");
    expect(h.fx.swaps).toHaveLength(0);
  });

  test("a stopped model is swapped in, then every joined waiter is granted in order", () => {
    const h = harness(two);
    const r1 = h.req("a");
    const r2 = h.req("a");
    expect(h.fx.swaps).toHaveLength(1);
    expect(h.state("a")).toBe("starting");
    expect(h.fx.log).toContain(`loading ${r2} a`);
    h.finishSwap();
    expect(h.state("a")).toBe("ready");
    expect(h.fx.granted).toEqual([r1, r2]);
    expect(h.sched.snapshot().models.find((m) => m.id === "a")?.inflight).toBe(2);
  });

  test("a ready model serves at once without a swap", () => {
    const h = harness(two);
    h.req("a");
    h.finishSwap();
    const r = h.req("a");
    expect(h.fx.granted).toContain(r);
    expect(h.fx.swaps).toHaveLength(1);
  });

  test("an undelivered grant is not counted in flight and does not block eviction", () => {
    const h = harness(two);
    const r1 = h.req("a");
    h.fx.gone.add(r1);
    h.finishSwap();
    expect(h.sched.snapshot().models.find((m) => m.id === "a")?.inflight).toBe(0);
    h.req("b");
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
  });

  test("a swap that would evict a busy model queues until it drains", () => {
    const h = harness(two);
    const ra = h.req("a");
    h.finishSwap();
    const rb = h.req("b");
    expect(h.fx.swaps).toHaveLength(1);
    expect(h.fx.positions.get(rb)).toEqual([1]);
    h.sched.serveDone(ra);
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    expect(h.state("a")).toBe("stopping");
    expect(h.fx.positions.get(rb)).toEqual([1, 0]);
    h.finishSwap();
    expect(h.state("a")).toBe("stopped");
    expect(h.fx.granted).toEqual([ra, rb]);
  });

  test("a swap colliding with one in flight queues, then proceeds when it is done", () => {
    const h = harness(two);
    h.req("a");
    const rb = h.req("b"); // b would evict a, which is starting
    expect(h.fx.swaps).toHaveLength(1);
    h.finishSwap(); // a ready; its waiter is now in flight
    expect(h.fx.swaps).toHaveLength(1); // a busy → b still waits
    h.sched.serveDone(1);
    expect(h.fx.lastSwap().target).toBe("b");
    h.finishSwap();
    expect(h.fx.granted).toContain(rb);
  });

  test("disjoint swaps run in parallel", () => {
    const h = harness(`
[groups.one]
members = ["a"]
exclusive = false
[groups.two]
members = ["b"]
exclusive = false
${two}`);
    h.req("a");
    h.req("b");
    expect(h.fx.swaps.map((s) => [s.target, s.evict])).toEqual([
      ["a", []],
      ["b", []],
    ]);
  });

  test("a failed swap fails its waiters; the next request starts the model again", () => {
    const h = harness(two);
    const r1 = h.req("a");
    const err = new QmError("upstream_start_failed", "a exited: boom");
    h.sched.swapDone(h.fx.lastSwap().id, { ok: false, error: err });
    expect(h.fx.failed.get(r1)).toBe(err);
    expect(h.state("a")).toBe("failed");
    expect(h.sched.snapshot().models.find((m) => m.id === "a")?.lastError).toBe("a exited: boom");
    h.req("a");
    expect(h.fx.swaps).toHaveLength(2);
  });
});

describe("concurrency limit", () => {
  test("over-limit requests wait (never 429) and each released slot re-drains the queue", () => {
    const h = harness(
      `[models.a]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nconcurrency_limit = 2\n`,
    );
    const ids = [h.req("a"), h.req("a"), h.req("a"), h.req("a")];
    h.finishSwap();
    expect(h.fx.granted).toEqual(ids.slice(0, 2));
    expect(h.sched.snapshot().queueDepth).toBe(2);
    h.sched.serveDone(ids[0]!);
    expect(h.fx.granted).toEqual(ids.slice(0, 3));
    h.sched.serveDone(ids[1]!);
    expect(h.fx.granted).toEqual(ids);
    expect(h.fx.failed.size).toBe(0);
  });
});

describe("cancellation", () => {
  test("a queued request whose client left is dropped and positions move up", () => {
    const h = harness(two);
    const ra = h.req("a");
    h.finishSwap();
    const rb1 = h.req("b");
    const rb2 = h.req("b");
    expect(h.fx.positions.get(rb2)).toEqual([2]);
    h.sched.cancel(rb1);
    expect(h.fx.positions.get(rb2)).toEqual([2, 1]);
    h.sched.serveDone(ra);
    h.finishSwap();
    expect(h.fx.granted).toEqual([ra, rb2]);
    expect(h.fx.failed.size).toBe(0);
  });

  test("a waiter that leaves a swap is not granted and leaves nothing in flight", () => {
    const h = harness(two);
    const r1 = h.req("a");
    h.sched.cancel(r1);
    h.finishSwap();
    expect(h.fx.granted).toEqual([]);
    expect(h.sched.snapshot().inflight).toBe(0);
  });
});

describe("crash and unload", () => {
  test("a crash of a ready model marks it failed; old grants finishing never go negative", () => {
    const h = harness(two);
    const r1 = h.req("a");
    h.finishSwap();
    h.sched.exited("a", new QmError("upstream_crashed", "a exited with code 1"));
    expect(h.state("a")).toBe("failed");
    h.sched.serveDone(r1);
    expect(h.sched.snapshot().models.find((m) => m.id === "a")?.inflight).toBe(0);
    const rb = h.req("b"); // a is gone: nothing to evict, nothing busy
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: [] });
    h.finishSwap();
    expect(h.fx.granted).toContain(rb);
  });

  test("unloading an idle model stops it; a busy one stops when it drains", () => {
    const h = harness(two);
    const r1 = h.req("a");
    h.finishSwap();
    h.sched.unload("a");
    expect(h.fx.stops).toEqual([]);
    const r2 = h.req("a"); // waits for the pending unload, then restarts a
    expect(h.fx.granted).toEqual([r1]);
    h.sched.serveDone(r1);
    expect(h.fx.stops).toEqual([["a"]]);
    expect(h.state("a")).toBe("stopping");
    h.sched.stopped("a");
    expect(h.fx.swaps).toHaveLength(2);
    h.finishSwap();
    expect(h.fx.granted).toEqual([r1, r2]);
  });

  test("unloading a loading model aborts it and its waiters hear why", () => {
    const h = harness(two);
    const r1 = h.req("a");
    h.sched.unload(null);
    expect(h.fx.stops).toEqual([["a"]]);
    h.sched.stopped("a");
    h.finishSwap(false);
    expect(h.fx.failed.get(r1)?.code).toBe("model_unloaded");
    expect(h.state("a")).toBe("stopped");
  });

  test("an abort that loses the race to readiness still ends stopped", () => {
    const h = harness(two);
    const r1 = h.req("a");
    h.sched.unload("a");
    h.finishSwap(true);
    expect(h.fx.failed.get(r1)?.code).toBe("model_unloaded");
    expect(h.state("a")).toBe("stopping");
    h.sched.stopped("a");
    expect(h.state("a")).toBe("stopped");
  });
});

describe("ttl", () => {
  test("an idle model is stopped ttl_s after its last request, by the wake timer", () => {
    const h = harness(`[models.a]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nttl_s = 5\n`);
    const r1 = h.req("a");
    h.finishSwap();
    expect(h.fx.wake).toBeNull(); // busy: no deadline
    h.clock.advance(1000);
    h.sched.serveDone(r1);
    expect(h.fx.wake).toBe(h.clock.now() + 5000);
    h.clock.advance(4999);
    h.sched.wake();
    expect(h.fx.stops).toEqual([]);
    h.clock.advance(1);
    const armed = h.fx.wakes.length;
    h.sched.wake();
    expect(h.fx.stops).toEqual([["a"]]);
    expect(h.fx.log).toContain("stop [a] ttl");
    h.sched.stopped("a");
    expect(h.state("a")).toBe("stopped");
    expect(h.fx.wakes.slice(armed).filter((w) => w !== null)).toEqual([]); // nothing left to wake for
  });

  test("a wake that fires early re-arms the same deadline instead of losing it", () => {
    const h = harness(`[models.a]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nttl_s = 5\n`);
    const r1 = h.req("a");
    h.finishSwap();
    h.sched.serveDone(r1);
    const due = h.clock.now() + 5000;
    expect(h.fx.wakes.at(-1)).toBe(due);
    const calls = h.fx.wakes.length;
    h.clock.advance(4999.7);
    h.sched.wake();
    expect(h.fx.stops).toEqual([]);
    expect(h.fx.wakes.length).toBe(calls + 1);
    expect(h.fx.wakes.at(-1)).toBe(due);
  });

  test("concurrency-limited waiters draining one by one still arm the ttl", () => {
    const h = harness(
      `[models.a]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nttl_s = 1\nconcurrency_limit = 1\n`,
    );
    const ids = [h.req("a"), h.req("a"), h.req("a")];
    h.finishSwap();
    for (const id of ids) h.sched.serveDone(id);
    expect(h.fx.granted).toEqual(ids);
    expect(h.fx.wake).toBe(h.clock.now() + 1000);
  });
});

describe("shutdown", () => {
  test("fails queued requests and waiters, and refuses new ones", () => {
    const h = harness(two);
    const ra = h.req("a");
    const rb = h.req("b");
    h.sched.shutdown();
    expect(h.fx.failed.get(ra)?.code).toBe("shutting_down");
    expect(h.fx.failed.get(rb)?.code).toBe("shutting_down");
    const rc = h.req("a");
    expect(h.fx.failed.get(rc)?.code).toBe("shutting_down");
  });
});

describe("run loop", () => {
  test("an effect that calls back synchronously is handled after the current event", () => {
    const h = harness(two);
    const order: string[] = [];
    const original = h.fx.startSwap.bind(h.fx);
    h.fx.startSwap = (swap) => {
      original(swap);
      order.push("startSwap");
      h.sched.swapDone(swap.id, { ok: true }); // re-entrant
      order.push("returned");
    };
    const r = h.req("a");
    expect(order).toEqual(["startSwap", "returned"]);
    expect(h.fx.granted).toEqual([r]);
  });
});

describe("queue bound (scheduler.max_queue)", () => {
  const bounded = `[scheduler]\nmax_queue = 2\n[models.a]\ncmd = "run a"\nproxy = "http://127.0.0.1:9"\nconcurrency_limit = 1\n${modelsToml("b")}`;

  test("past max_queue waiting requests, a request that would wait gets queue_full with Retry-After", () => {
    const h = harness(bounded);
    const first = h.req("a");
    h.finishSwap();
    expect(h.fx.granted).toEqual([first]);
    const w1 = h.req("a");
    const w2 = h.req("b");
    expect(h.sched.snapshot().queueDepth).toBe(2);
    const over = h.req("a");
    const err = h.fx.failed.get(over);
    expect(err?.code).toBe("queue_full");
    expect(err?.status).toBe(503);
    expect(err?.retryAfterS).toBeGreaterThan(0);
    expect(h.fx.failed.has(w1) || h.fx.failed.has(w2)).toBe(false);
  });

  test("a request that is served at once is never refused by the bound", () => {
    const h = harness(`[scheduler]\nmax_queue = 1\n${modelsToml("a", "b")}`);
    const ra = h.req("a");
    h.finishSwap();
    h.req("b"); // waits for a to drain
    expect(h.sched.snapshot().queueDepth).toBe(1);
    const served = h.req("a");
    expect(h.fx.granted).toEqual([ra, served]);
  });

  test("swap waiters count toward the bound", () => {
    const h = harness(`[scheduler]\nmax_queue = 2\n${modelsToml("a")}`);
    h.req("a");
    h.req("a");
    const over = h.req("a");
    expect(h.fx.failed.get(over)?.code).toBe("queue_full");
  });
});
