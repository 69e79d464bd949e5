/** A request's `keepAliveMs` (Ollama's `keep_alive`) in place of the model's `ttl_s`. */
import { describe, expect, test } from "bun:test";
import { harness } from "../support/harness.ts";

const A = (ttl = 0) => `[models.a]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nttl_s = ${ttl}\n`;

/** a loaded and serving one request that asks for `keepAliveMs`; returns the harness and id. */
function serving(ttl: number, keepAliveMs: number | undefined) {
  const h = harness(A(ttl));
  h.sched.request({ id: 1, model: "a", keepAliveMs });
  h.finishSwap();
  return h;
}

describe("keep-alive", () => {
  test("a positive keep-alive replaces ttl_s: the wake is armed for it, and it stops the model", () => {
    const h = serving(0, 2000);
    h.sched.serveDone(1);
    expect(h.fx.wake).toBe(h.clock.now() + 2000);
    expect(h.sched.snapshot().models[0]).toMatchObject({
      keepAliveMs: 2000,
      idleExpiry: h.clock.now() + 2000,
    });
    h.clock.advance(2000);
    h.sched.wake();
    expect(h.fx.stops).toEqual([["a"]]);
  });

  test("0 stops the model as soon as it is idle, without waiting for a wake", () => {
    const h = serving(60, 0);
    h.sched.request({ id: 2, model: "a" });
    h.sched.serveDone(1);
    expect(h.fx.stops).toEqual([]); // request 2 still runs
    h.sched.serveDone(2);
    expect(h.fx.stops).toEqual([["a"]]);
    expect(h.fx.log).toContain("stop [a] keep_alive 0");
  });

  test("negative keeps the model resident even with a ttl_s", () => {
    const h = serving(5, -1);
    h.sched.serveDone(1);
    expect(h.fx.wake).toBeNull();
    h.clock.advance(3_600_000);
    h.sched.wake();
    expect(h.fx.stops).toEqual([]);
    expect(h.sched.snapshot().models[0]?.idleExpiry).toBeNull();
  });

  test("a request without one leaves the latest keep-alive; a restart forgets it", () => {
    const h = serving(5, 60_000);
    h.sched.serveDone(1);
    h.sched.request({ id: 2, model: "a" });
    h.sched.serveDone(2);
    expect(h.fx.wake).toBe(h.clock.now() + 60_000);
    h.sched.unload("a");
    h.sched.stopped("a");
    h.sched.request({ id: 3, model: "a" });
    h.finishSwap();
    h.sched.serveDone(3);
    expect(h.sched.snapshot().models[0]?.keepAliveMs).toBeNull();
    expect(h.fx.wake).toBe(h.clock.now() + 5000); // ttl_s again
  });
});
