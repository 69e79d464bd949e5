/**
 * `hold_policy = "cost"`: the verdict (pure), the gap book, swap costs from the facts, and the
 * scheduler acting on them. Property tests over random agent loops: hold-cost-property.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { GroupPolicy } from "../../src/policy/group.ts";
import { GapBook, KEPT_GAPS, MAX_CONVERSATIONS, MAX_GAP_MS } from "../../src/scheduler/gaps.ts";
import {
  DEFAULT_SWAP_MS,
  holdVerdict,
  QUANTUM_ROUND_TRIPS,
  SwapCosts,
  type SwapFacts,
  WAKE_SHARE_GUESS,
  YIELD_SLACK,
} from "../../src/scheduler/hold-cost.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { FakeEffects } from "../support/fake-effects.ts";
import { modelsToml } from "../support/harness.ts";

describe("holdVerdict", () => {
  const base = {
    heldWaitMs: 0,
    waiters: 1,
    waiterGapMs: 0,
    remainingMs: 2000,
    swapInMs: 5000,
    swapBackMs: 5000,
    idleGrowth: 0,
  };

  test("idle cheaper than the round trip → hold, with the quantum of the round trip", () => {
    expect(holdVerdict(base)).toEqual({
      kind: "hold",
      quantumMs: QUANTUM_ROUND_TRIPS * 10_000,
      reviewMs: null,
    });
  });

  test("while the expected idle grows (a gap never measured), the hold says when time alone could turn it", () => {
    // 2 s idle now against 9.5 s; growing at most 3 ms a ms, it cannot get there in under 2.5 s.
    const v = holdVerdict({ ...base, idleGrowth: 3 });
    expect(v).toEqual({ kind: "hold", quantumMs: QUANTUM_ROUND_TRIPS * 10_000, reviewMs: 2500 });
    // Grown that fast, it yields at the review, and not a millisecond before.
    expect(holdVerdict({ ...base, remainingMs: 2000 + 2500 * 3 }).kind).toBe("yield");
    expect(holdVerdict({ ...base, remainingMs: 2000 + 2499 * 3, idleGrowth: 3 })).toEqual({
      kind: "hold",
      quantumMs: QUANTUM_ROUND_TRIPS * 10_000,
      reviewMs: 1,
    });
  });

  test("the waiter's own coming gap counts: it hides the swap back", () => {
    expect(holdVerdict({ ...base, waiterGapMs: 8000 })).toEqual({ kind: "yield", reason: "cost" });
  });

  test("the time left in the hold counts once per waiting request", () => {
    expect(holdVerdict({ ...base, waiters: 4 }).kind).toBe("hold"); // 8 s < 10 s
    expect(holdVerdict({ ...base, waiters: 5 })).toEqual({ kind: "yield", reason: "cost" });
  });

  test("a near tie (within YIELD_SLACK of the round trip) yields", () => {
    const edge = 10_000 * (1 - YIELD_SLACK);
    expect(holdVerdict({ ...base, remainingMs: edge }).kind).toBe("yield");
    expect(holdVerdict({ ...base, remainingMs: edge - 1 }).kind).toBe("hold");
  });

  test("a waiter that sat through its quantum behind idle holds yields, whatever the cost", () => {
    const q = QUANTUM_ROUND_TRIPS * 10_000;
    expect(holdVerdict({ ...base, remainingMs: 0, heldWaitMs: q - 1 }).kind).toBe("hold");
    expect(holdVerdict({ ...base, remainingMs: 0, heldWaitMs: q })).toEqual({
      kind: "yield",
      reason: "fairness",
    });
  });
});

describe("GapBook", () => {
  test("a gap runs from a tool-call answer to the conversation's next request", () => {
    const g = new GapBook();
    expect(g.asked("c1", 100)).toBeNull(); // no answer pending
    g.answered("c1", "a", 1000);
    expect(g.waiting("c1")).toBe(true);
    expect(g.asked("c1", 3000)).toBe(2000);
    expect(g.waiting("c1")).toBe(false);
    expect(g.asked("c1", 5000)).toBeNull(); // that gap is over
  });

  test("typical is the median, the window the longest recent gap × 1.25", () => {
    const g = new GapBook();
    let t = 0;
    for (const gap of [1000, 3000, 2000]) {
      g.answered("c", "a", t);
      t += gap;
      g.asked("c", t);
    }
    expect(g.estimate("c", "a")).toEqual({
      typicalMs: 2000,
      windowMs: 3750,
      source: "conversation",
    });
  });

  test("a conversation with no gaps of its own borrows its model's, then everyone's", () => {
    const g = new GapBook();
    g.answered("c1", "a", 0);
    g.asked("c1", 4000);
    expect(g.estimate("c2", "a")?.source).toBe("model");
    expect(g.estimate("c2", "b")?.source).toBe("all");
    expect(g.estimate(null, "b")?.typicalMs).toBe(4000);
    expect(new GapBook().estimate("c", "a")).toBeNull();
    // A waiter's own gap: its own, else everyone's.
    expect(g.typical("c9")).toBe(4000);
    expect(new GapBook().typical("c9")).toBeNull();
  });

  test("only the last KEPT_GAPS gaps count; a pause past MAX_GAP_MS is not a tool gap", () => {
    const g = new GapBook();
    let t = 0;
    g.answered("c", "a", t);
    t += 60_000;
    g.asked("c", t);
    for (let i = 0; i < KEPT_GAPS; i++) {
      g.answered("c", "a", t);
      t += 1000;
      g.asked("c", t);
    }
    expect(g.estimate("c", "a")?.windowMs).toBe(1250); // the 60 s gap has left
    g.answered("c", "a", t);
    expect(g.asked("c", t + MAX_GAP_MS + 1)).toBeNull();
  });

  test("the longest tool gap in progress: unfollowed answers within their window, while a tool result may still follow", () => {
    const g = new GapBook();
    expect(g.longestOpen(0)).toBe(0);
    g.answered("c1", "a", 1000, 5000);
    g.answered("c2", "b", 2000, 5000);
    expect(g.longestOpen(4000)).toBe(3000); // c1's
    g.asked("c1", 4000); // c1 came back: its gap is over
    expect(g.longestOpen(5000)).toBe(3000); // c2's
    expect(g.longestOpen(7001)).toBe(0); // c2's window has passed
    // A model whose tool-call answers are mostly not followed: its open answers say nothing,
    // unless their conversation has shown a tool result.
    g.answered("c3", "b", 8000, 5000);
    g.answered("c4", "b", 8000, 5000);
    expect(g.longestOpen(9000)).toBe(0); // c2 settled as not followed: b's record is 0 of 1
    g.asked("c4", 9000); // c4 loops: followed, and it shows a tool result
    g.answered("c4", "b", 9000, 5000);
    expect(g.longestOpen(10_000)).toBe(2000); // c3 counts again (b: 1 of 2), the oldest
  });

  test("conversations are bounded: the least recently active is forgotten", () => {
    const g = new GapBook();
    for (let i = 0; i <= MAX_CONVERSATIONS; i++) {
      g.answered(`c${i}`, "a", i);
      g.asked(`c${i}`, i + 10);
    }
    expect(g.estimate("c0", "zzz")?.source).toBe("all");
    expect(g.estimate(`c${MAX_CONVERSATIONS}`, "zzz")?.source).toBe("conversation");
  });
});

describe("SwapCosts", () => {
  const facts = (loads: Record<string, number>, wakes: Record<string, number> = {}): SwapFacts => ({
    loadMs: (id) => loads[id] ?? null,
    wakeMs: (id) => wakes[id] ?? null,
  });

  test("a measured load is the model's swap; an unmeasured one costs the dearest measured", () => {
    const c = new SwapCosts(facts({ a: 2000, b: 9000 }), () => ["a", "b", "c"]);
    expect(c.swap("a", false)).toBe(2000);
    expect(c.swap("c", false)).toBe(9000);
    expect(new SwapCosts(facts({}), () => ["a"]).swap("a", false)).toBe(DEFAULT_SWAP_MS);
  });

  test("a sleep model's swap is its wake, guessed from its load until one is measured", () => {
    expect(new SwapCosts(facts({ a: 20_000 }), () => ["a"]).swap("a", true)).toBe(
      20_000 * WAKE_SHARE_GUESS,
    );
    expect(new SwapCosts(facts({ a: 20_000 }, { a: 700 }), () => ["a"]).swap("a", true)).toBe(700);
  });
});

/** Two models, one at a time, under the cost policy, with measured loads. */
function costHarness(loads: Record<string, number>, extra = "") {
  const cfg = config(
    `[scheduler]\nhold_ms = 10000\npatience_ms = 300000\n${extra}\n${modelsToml("a", "b")}`,
  );
  const clock = new FakeClock(0);
  const fx = new FakeEffects();
  const whys: string[] = [];
  fx.holdChanged = (model, change, until, why) => {
    fx.holds.push(`${model}:${change}@${until}`);
    if (why)
      whys.push(`${model}:${change} gap=${why.gapMs} swap=${why.swapMs} ${why.reason ?? ""}`);
  };
  const sched = new Scheduler(cfg, new GroupPolicy(cfg), fx, clock, {
    loadMs: (id) => loads[id] ?? null,
    wakeMs: () => null,
  });
  let nextId = 1;
  const h = {
    clock,
    fx,
    sched,
    whys,
    ask(model: string, conversation: string): number {
      const id = nextId++;
      sched.request({ id, model, conversation });
      return id;
    },
    /** One round of `conversation` on `model` that ends in tool calls after `genMs`. */
    round(model: string, conversation: string, genMs = 500, toolCalls = true): void {
      const id = h.ask(model, conversation);
      const swap = fx.swaps.at(-1);
      if (swap && swap.target === model && h.sched.state(model) === "starting") {
        sched.swapDone(swap.id, { ok: true });
      }
      clock.advance(genMs);
      sched.serveDone(id, { toolCalls });
    },
    model: (id: string) => sched.snapshot().models.find((m) => m.id === id)!,
  };
  return h;
}

describe('hold_policy = "cost" in the scheduler', () => {
  test("a hold lasts the conversation's expected gap, and status says why", () => {
    const h = costHarness({ a: 8000, b: 8000 });
    h.round("a", "c1");
    h.clock.advance(2000); // the tool runs 2 s
    h.round("a", "c1");
    const now = h.clock.now();
    expect(h.model("a").heldUntil).toBe(now + 2500); // 2 s × 1.25
    expect(h.model("a").hold).toEqual({
      conversation: "c1",
      gapMs: 2000,
      windowMs: 2500,
      swapBackMs: 8000,
      measured: true,
    });
    expect(h.whys.at(-1)).toBe("a:granted gap=2000 swap=8000 ");
    // Its gap spent, the hold is dropped at once.
    h.clock.advance(2500);
    h.sched.wake();
    expect(h.model("a").heldUntil).toBeNull();
    expect(h.model("a").holdEnded).toEqual({
      change: "expired",
      reason: "gap spent",
      at: now + 2500,
    });
  });

  test("before any gap is seen, the hold is the configured window's (× 1.25)", () => {
    const h = costHarness({ a: 8000, b: 8000 });
    h.round("a", "c1");
    expect(h.model("a").heldUntil).toBe(h.clock.now() + 12_500);
  });

  test("before any gap is measured, the waiter waits while the gap so far is short, and the wake is armed for when it is not", () => {
    const h = costHarness({ a: 8000, b: 8000 });
    h.round("a", "c1");
    const held = h.clock.now();
    h.ask("b", "c2");
    expect(h.fx.swaps).toHaveLength(1);
    // A gap that has lasted x: x more left, 2x for c2's own gap taken from it; against a round
    // trip of 16 s (less 5 %), 3x reaches 15.2 s at x = 5 067 ms.
    expect(h.fx.wake).toBe(held + 5067);
    h.clock.advance(5066);
    h.sched.wake();
    expect(h.fx.swaps).toHaveLength(1);
    h.clock.advance(1);
    h.sched.wake();
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    expect(h.whys.at(-1)).toBe("a:dropped gap=5067 swap=8000 cost");
  });

  test("before any gap is measured, a loop back within the wait keeps the hold: its gap is now known", () => {
    const h = costHarness({ a: 8000, b: 8000 });
    h.round("a", "c1");
    h.ask("b", "c2");
    h.clock.advance(1000);
    h.round("a", "c1"); // gap 1 s, measured
    expect(h.fx.swaps).toHaveLength(1);
    // Measured, time only shrinks what is left: nothing to look at again before the hold ends
    // (the 1 s gap × 1.25).
    expect(h.model("a").heldUntil).toBe(h.clock.now() + 1250);
    expect(h.fx.wake).toBe(h.clock.now() + 1250);
  });

  test("before any gap is measured, another loop's gap already in progress counts: the waiter does not wait to learn it", () => {
    const h = costHarness({ a: 8000, b: 8000 });
    h.round("a", "c0"); // c0 answers in tool calls and stays away
    h.clock.advance(6000);
    h.round("a", "c1"); // c1's hold: nothing measured yet
    h.ask("b", "c2");
    // c0 has been away 6.5 s: 6.5 s more left, 13 s for c2's gap, 19.5 s ≥ 15.2 s.
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    expect(h.whys.at(-1)).toBe("a:dropped gap=6500 swap=8000 cost");
  });

  test("dear loads, short gaps: the waiter waits while holding is the cheaper choice", () => {
    const h = costHarness({ a: 8000, b: 8000 });
    h.round("a", "c1");
    h.clock.advance(1000);
    h.round("a", "c1"); // gap 1 s, now known
    const rb = h.ask("b", "c2");
    expect(h.fx.swaps).toHaveLength(1);
    expect(h.fx.positions.get(rb)).toEqual([1]);
    // Idle left ≤ 1 s + c2's guessed gap 1 s, against a round trip of 16 s: hold.
    expect(h.sched.snapshot().heldBack).toEqual([
      {
        id: rb,
        model: "b",
        heldWaitMs: 0,
        quantumAt: h.clock.now() + QUANTUM_ROUND_TRIPS * 16_000,
      },
    ]);
  });

  test("cheap loads, long gaps: the hold is dropped for the waiter (cost), and the drop is reported", () => {
    const h = costHarness({ a: 1000, b: 1000 });
    h.round("a", "c1");
    h.clock.advance(5000);
    h.round("a", "c1"); // gap 5 s
    h.ask("b", "c2");
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    expect(h.fx.holds.at(-1)).toMatch(/^a:dropped@/);
    expect(h.whys.at(-1)).toBe("a:dropped gap=5000 swap=1000 cost");
    expect(h.model("a").holdEnded).toMatchObject({ change: "dropped", reason: "cost" });
  });

  test("a waiter already queued when the hold would start gets the GPU at once if holding costs more", () => {
    const h = costHarness({ a: 1000, b: 1000 });
    h.round("a", "c1");
    h.clock.advance(5000);
    const r = h.ask("a", "c1"); // round 2 runs
    const rb = h.ask("b", "c2"); // queued behind the busy model
    expect(h.fx.positions.get(rb)).toEqual([1]);
    h.clock.advance(500);
    h.sched.serveDone(r, { toolCalls: true });
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    expect(h.fx.holds.slice(-2).map((l) => l.split("@")[0])).toEqual(["a:granted", "a:dropped"]);
  });

  test("fairness: only idle-held time counts toward the quantum, and reaching it breaks the hold", () => {
    const h = costHarness({ a: 2000, b: 2000 });
    h.round("a", "c1");
    h.clock.advance(500);
    h.round("a", "c1"); // gap 0.5 s; round trip 4 s; quantum 12 s
    const rb = h.ask("b", "c2");
    const quantum = QUANTUM_ROUND_TRIPS * 4000;
    let held = 0;
    // c1 keeps looping: 0.5 s gaps (held), 4 s rounds (busy: not counted).
    while (held + 500 < quantum) {
      h.clock.advance(500);
      held += 500;
      h.round("a", "c1", 4000);
      expect(h.sched.snapshot().heldBack.map((w) => [w.id, w.heldWaitMs])).toEqual([[rb, held]]);
    }
    expect(h.fx.swaps).toHaveLength(1);
    // The wake is armed for the moment the bound is reached.
    expect(h.fx.wake).toBe(h.clock.now() + (quantum - held));
    h.clock.advance(quantum - held);
    h.sched.wake();
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    expect(h.whys.at(-1)).toMatch(/^a:dropped .* fairness$/);
  });

  test("a hold ends when its loop answers without tool calls", () => {
    const h = costHarness({ a: 8000, b: 8000 });
    h.round("a", "c1");
    h.clock.advance(1000);
    h.round("a", "c1");
    h.clock.advance(1000);
    h.round("a", "c1", 100, false); // the last round answers in text, within the window
    expect(h.model("a").heldUntil).toBeNull();
    expect(h.fx.holds.at(-1)).toBe(`a:expired@${h.clock.now()}`);
    expect(h.model("a").holdEnded).toMatchObject({ reason: "loop ended" });
    h.ask("b", "c2");
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
  });

  test("another conversation's text answer does not end a hold that waits for its own", () => {
    const h = costHarness({ a: 8000, b: 8000 });
    h.round("a", "c1");
    h.clock.advance(1000);
    h.round("a", "c1"); // held for c1's gap
    h.round("a", "c3", 100, false); // c3 asks and answers in text meanwhile
    expect(h.model("a").heldUntil).not.toBeNull();
  });

  test("X-QM-Hold-Ms: 0 (or hold_ms = 0) still means no hold", () => {
    const h = costHarness({ a: 8000, b: 8000 }, "");
    h.sched.request({ id: 100, model: "a", holdMs: 0, conversation: "c1" });
    h.sched.swapDone(h.fx.lastSwap().id, { ok: true });
    h.sched.serveDone(100, { toolCalls: true });
    expect(h.model("a").heldUntil).toBeNull();
  });
});
