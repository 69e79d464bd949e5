/**
 * The scheduler reports each hold's fate through `Effects.holdChanged`: granted when a model's
 * last request drains with a hold earned, expired when its deadline passes with the model still
 * up, preempted when a waiter past its patience evicts it. Metrics count these; `/api/events`
 * publishes them.
 */
import { describe, expect, test } from "bun:test";
import { QmError } from "../../src/shared/errors.ts";
import { harness, modelsToml } from "../support/harness.ts";

const sched = `[scheduler]\nhold_ms = 10000\npatience_ms = 300000\n`;
const two = sched + modelsToml("a", "b");

/** a is loaded and one request on it has finished with tool calls (so it is held). */
function aHeld() {
  const h = harness(two);
  const r = h.req("a");
  h.finishSwap();
  h.sched.serveDone(r, { toolCalls: true });
  return h;
}

describe("hold changes", () => {
  test("a drained request that earned a hold reports granted, with the deadline", () => {
    const h = aHeld();
    expect(h.fx.holds).toEqual([`a:granted@${1000 + 10_000}`]);
  });

  test("no hold earned, no report", () => {
    const h = harness(two);
    const r = h.req("a");
    h.finishSwap();
    h.sched.serveDone(r, { toolCalls: false });
    expect(h.fx.holds).toEqual([]);
  });

  test("a hold that runs out is reported expired once, at the first event past its deadline", () => {
    const h = aHeld();
    h.clock.advance(9_999);
    h.sched.wake();
    expect(h.fx.holds).toEqual(["a:granted@11000"]);
    h.clock.advance(1);
    h.sched.wake();
    h.sched.wake();
    expect(h.fx.holds).toEqual(["a:granted@11000", "a:expired@11000"]);
    expect(h.sched.snapshot().models.find((m) => m.id === "a")?.heldUntil).toBeNull();
  });

  test("a request that comes after the deadline but before the wake finds it expired, not preempted", () => {
    const h = aHeld();
    h.clock.advance(10_000);
    h.req("b"); // evicts a, whose hold is already over
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    expect(h.fx.holds).toEqual(["a:granted@11000", "a:expired@11000"]);
  });

  test("a waiter past its patience that evicts the held model reports preempted, before its swap", () => {
    const h = aHeld();
    h.sched.request({ id: 50, model: "b", patienceMs: 3000 });
    expect(h.fx.holds).toEqual(["a:granted@11000"]);
    h.clock.advance(3000);
    h.sched.wake();
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    expect(h.fx.holds).toEqual(["a:granted@11000", "a:preempted@11000"]);
    // The hold ended with the swap: nothing expires later.
    h.clock.advance(20_000);
    h.sched.wake();
    expect(h.fx.holds).toHaveLength(2);
  });

  test("a renewed hold is granted again and expires once, at the later deadline", () => {
    const h = aHeld();
    h.clock.advance(5000);
    const r = h.req("a");
    h.sched.serveDone(r, { toolCalls: true });
    expect(h.fx.holds).toEqual(["a:granted@11000", "a:granted@16000"]);
    h.clock.advance(5000); // past the first deadline, not the renewed one
    h.sched.wake();
    expect(h.fx.holds).toHaveLength(2);
    h.clock.advance(5000);
    h.sched.wake();
    expect(h.fx.holds).toEqual(["a:granted@11000", "a:granted@16000", "a:expired@16000"]);
  });

  test("a hold ended by its model stopping (a crash, an unload) is neither expired nor preempted", () => {
    const h = aHeld();
    h.sched.exited("a", new QmError("upstream_crashed", "gone"));
    h.clock.advance(20_000);
    h.sched.wake();
    expect(h.fx.holds).toEqual(["a:granted@11000"]);

    const u = aHeld();
    u.sched.unload("a");
    u.sched.stopped("a");
    u.clock.advance(20_000);
    u.sched.wake();
    expect(u.fx.holds).toEqual(["a:granted@11000"]);
  });

  test("two held models expire independently, each once", () => {
    const h = harness(
      `${sched}[groups.g]\nmembers = ["a", "b"]\nswap = false\n${modelsToml("a", "b")}`,
    );
    h.sched.request({ id: 1, model: "a", holdMs: 1000 });
    h.finishSwap();
    h.sched.request({ id: 2, model: "b", holdMs: 3000 });
    h.finishSwap();
    h.sched.serveDone(1, { toolCalls: true });
    h.sched.serveDone(2, { toolCalls: true });
    h.clock.advance(1000);
    h.sched.wake();
    expect(h.fx.holds).toEqual(["a:granted@2000", "b:granted@4000", "a:expired@2000"]);
    h.clock.advance(2000);
    h.sched.wake();
    expect(h.fx.holds.slice(3)).toEqual(["b:expired@4000"]);
  });
});
