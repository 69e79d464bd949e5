/**
 * Evidence of a loop (design.md, "Hold or yield by cost"): under the cost policy a tool-call
 * answer is held only when a tool result is likely to follow — its conversation has shown one,
 * or its model's recent tool-call answers were mostly followed.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { GroupPolicy } from "../../src/policy/group.ts";
import { GapBook, KEPT_FATES } from "../../src/scheduler/gaps.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { FakeEffects } from "../support/fake-effects.ts";
import { modelsToml } from "../support/harness.ts";

describe("GapBook.earnsHold", () => {
  test("a model with no known fate gives the benefit of the doubt", () => {
    expect(new GapBook().earnsHold("c1", "a", 0)).toBe(true);
  });

  test("an answer not followed within its window counts against the model; a tool result for it", () => {
    const g = new GapBook();
    g.answered("c1", "a", 0, 1000);
    expect(g.earnsHold("c2", "a", 1000)).toBe(true); // the window is not over yet
    expect(g.earnsHold("c2", "a", 1001)).toBe(false); // c1's answer went unfollowed
    expect(g.earnsHold("c2", "b", 1001)).toBe(true); // another model's record is its own
    // c3's answer is followed by its tool result: 1 of 2, half, held again.
    g.answered("c3", "a", 2000, 1000);
    expect(g.asked("c3", 2500, true)).toBe(500);
    expect(g.earnsHold("c4", "a", 3000)).toBe(true);
  });

  test("a person's next turn settles the answer as not followed, and is no tool gap", () => {
    const g = new GapBook();
    g.answered("c1", "a", 0, 60_000);
    expect(g.asked("c1", 5000, false)).toBeNull();
    expect(g.estimate("c1", "a")).toBeNull();
    expect(g.earnsHold("c2", "a", 5000)).toBe(false);
    expect(g.earnsHold("c1", "a", 5000)).toBe(false); // it showed no tool result either
  });

  test("a conversation that showed a tool result is held whatever its model's record", () => {
    const g = new GapBook();
    for (let i = 0; i < KEPT_FATES; i++) g.answered(`one-shot-${i}`, "a", i, 10);
    expect(g.earnsHold("agent", "a", 1000)).toBe(false);
    g.asked("agent", 1000, true); // its first tool result (an earlier answer elsewhere, or none)
    expect(g.earnsHold("agent", "a", 1000)).toBe(true);
    expect(g.earnsHold("other", "a", 1000)).toBe(false);
  });

  test("a late tool result is still a loop: the conversation is held from then on", () => {
    const g = new GapBook();
    g.answered("slow", "a", 0, 1000);
    expect(g.earnsHold("x", "a", 5000)).toBe(false); // settled: not followed in its window
    expect(g.asked("slow", 5000, true)).toBe(5000); // a slow tool: a gap, and a loop
    expect(g.earnsHold("slow", "a", 5000)).toBe(true);
  });

  test("an answer that asked for no hold has no window: only its conversation settles it", () => {
    const g = new GapBook();
    g.answered("c1", "a", 0, null);
    expect(g.earnsHold("c2", "a", 1_000_000)).toBe(true);
    g.asked("c1", 1_000_001, false);
    expect(g.earnsHold("c2", "a", 1_000_001)).toBe(false);
  });

  test("a request that does not say counts as carrying a tool result (the behaviour before)", () => {
    const g = new GapBook();
    g.answered("c1", "a", 0, 1000);
    expect(g.asked("c1", 500)).toBe(500);
    expect(g.earnsHold("c1", "a", 500)).toBe(true);
    expect(g.earnsHold("c2", "a", 500)).toBe(true);
  });

  test("only the last KEPT_FATES fates count", () => {
    const g = new GapBook();
    for (let i = 0; i < KEPT_FATES; i++) {
      g.answered(`c${i}`, "a", i * 10, 1);
    }
    expect(g.earnsHold("n", "a", 1000)).toBe(false);
    for (let i = 0; i < KEPT_FATES / 2; i++) {
      g.answered(`f${i}`, "a", 2000 + i, 1000);
      g.asked(`f${i}`, 2100 + i, true);
    }
    expect(g.earnsHold("n", "a", 3000)).toBe(true); // half of the last KEPT_FATES
  });
});

/** Two models, one at a time, cost policy; requests say whether they carry a tool result. */
function harness() {
  const cfg = config(`[scheduler]\nhold_ms = 10000\n${modelsToml("a", "b")}`);
  const clock = new FakeClock(0);
  const fx = new FakeEffects();
  const sched = new Scheduler(cfg, new GroupPolicy(cfg), fx, clock, {
    loadMs: () => 5000,
    wakeMs: () => null,
  });
  let nextId = 1;
  return {
    clock,
    fx,
    sched,
    /** One round on `model` that ends in tool calls; held after it or not. */
    round(model: string, conversation: string, toolResult: boolean): boolean {
      const id = nextId++;
      sched.request({ id, model, conversation, toolResult });
      const swap = fx.swaps.at(-1);
      if (swap?.target === model && sched.state(model) === "starting") {
        sched.swapDone(swap.id, { ok: true });
      }
      clock.advance(500);
      sched.serveDone(id, { toolCalls: true });
      return (sched.snapshot().models.find((m) => m.id === model)!.heldUntil ?? 0) > clock.now();
    },
  };
}

describe("in the scheduler", () => {
  test("one-shot calls stop holding once their answers go unfollowed; an agent is held from its tool result on", () => {
    const h = harness();
    // A client that offers tools on every call and never sends a tool result.
    expect(h.round("a", "call-1", false)).toBe(true); // nothing known yet
    h.clock.advance(20_000); // its window (12.5 s) passes
    expect(h.round("a", "call-2", false)).toBe(false);
    h.clock.advance(20_000);
    expect(h.round("a", "call-3", false)).toBe(false);
    // The same client's conversation coming back with a person's turn is no loop either.
    expect(h.round("a", "call-3", false)).toBe(false);
    // An agent on that model: its first round is not held, its second (a tool result) is.
    expect(h.round("a", "agent", false)).toBe(false);
    h.clock.advance(2000);
    expect(h.round("a", "agent", true)).toBe(true);
    h.clock.advance(2000);
    expect(h.round("a", "agent", true)).toBe(true);
    // Another model's record is its own (once a's hold is spent, b can come in).
    h.clock.advance(30_000);
    expect(h.round("b", "call-4", false)).toBe(true);
  });

  test('hold_policy = "fixed" holds every tool-call answer, evidence or not', () => {
    const cfg = config(
      `[scheduler]\nhold_ms = 10000\nhold_policy = "fixed"\n${modelsToml("a", "b")}`,
    );
    const clock = new FakeClock(0);
    const fx = new FakeEffects();
    const sched = new Scheduler(cfg, new GroupPolicy(cfg), fx, clock);
    for (let i = 1; i <= 4; i++) {
      sched.request({ id: i, model: "a", conversation: `call-${i}`, toolResult: false });
      if (i === 1) sched.swapDone(fx.swaps[0]!.id, { ok: true });
      sched.serveDone(i, { toolCalls: true });
      expect(sched.snapshot().models[0]!.heldUntil).toBe(clock.now() + 10_000);
      clock.advance(20_000);
    }
  });
});

/**
 * Random traffic on one model's book: answers with random windows (or none), conversations
 * coming back with a tool result or a person's turn, time passing. After every step, for any
 * conversation: held when it has shown a tool result; otherwise exactly when at least half of the
 * model's last KEPT_FATES settled answers were followed (none settled: held). The fates are
 * counted here independently: settled by the conversation's next request, or by its window
 * passing first, once.
 */
test("property: earnsHold follows the evidence", () => {
  const step = fc.oneof(
    fc.record({
      kind: fc.constant("answer" as const),
      c: fc.nat(5),
      window: fc.option(fc.integer({ min: 0, max: 20_000 })),
    }),
    fc.record({ kind: fc.constant("ask" as const), c: fc.nat(5), toolResult: fc.boolean() }),
    fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 15_000 }) }),
  );
  fc.assert(
    fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
      const g = new GapBook();
      let now = 0;
      const looping = new Set<number>();
      const fates: boolean[] = [];
      /** Pending answers: their window's end (null: none), and whether their fate is counted. */
      const open = new Map<number, { end: number | null; settled: boolean }>();
      const settle = () => {
        for (const p of open.values()) {
          if (!p.settled && p.end !== null && p.end < now) {
            p.settled = true;
            fates.push(false);
          }
        }
      };
      for (const s of steps) {
        if (s.kind === "wait") now += s.ms;
        else if (s.kind === "answer") {
          settle(); // what earnsHold saw before this answer is settled by now
          const prior = open.get(s.c);
          if (prior) open.delete(s.c); // a second answer before any request replaces the first
          g.answered(`c${s.c}`, "a", now, s.window);
          open.set(s.c, { end: s.window === null ? null : now + s.window, settled: false });
        } else {
          settle();
          g.asked(`c${s.c}`, now, s.toolResult);
          const p = open.get(s.c);
          if (p && !p.settled) fates.push(s.toolResult);
          open.delete(s.c);
          if (s.toolResult) looping.add(s.c);
        }
        settle();
        const last = fates.slice(-KEPT_FATES);
        const byModel = last.length === 0 || last.filter(Boolean).length * 2 >= last.length;
        for (let c = 0; c <= 5; c++) {
          const expected = looping.has(c) || byModel;
          expect({ steps, c, held: g.earnsHold(`c${c}`, "a", now) }).toEqual({
            steps,
            c,
            held: expected,
          });
        }
      }
    }),
    { numRuns: 500 },
  );
});
