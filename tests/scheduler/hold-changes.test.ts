/**
 * The scheduler reports each hold's fate through `Effects.holdChanged`: granted when a model's
 * last request drains with a hold earned, expired when its deadline passes with the model still
 * up, preempted when a waiter past its patience evicts it. Metrics count these; `/api/events`
 * publishes them.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { QmError } from "../../src/shared/errors.ts";
import { harness, modelsToml } from "../support/harness.ts";

/** These cases are about `hold_policy = "fixed"`'s windows; the property runs both policies. */
const sched = `[scheduler]\nhold_ms = 10000\npatience_ms = 300000\nhold_policy = "fixed"\n`;
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

type Op =
  | { t: "req"; model: string; patienceMs: number }
  | { t: "serveDone"; pick: number; toolCalls: boolean }
  | { t: "swapDone"; ok: boolean }
  | { t: "stopped"; pick: number }
  | { t: "crash"; model: string }
  | { t: "unload"; model: string }
  | { t: "advance"; ms: number };

const model = fc.constantFrom("a", "b");
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      t: fc.constant("req" as const),
      model,
      patienceMs: fc.constantFrom(0, 2000, 60_000),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("serveDone" as const),
      pick: fc.nat(),
      // Mostly tool calls: those earn holds.
      toolCalls: fc.constantFrom(true, true, true, false),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("swapDone" as const),
      ok: fc.constantFrom(true, true, false),
    }),
    weight: 4,
  },
  { arbitrary: fc.record({ t: fc.constant("stopped" as const), pick: fc.nat() }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant("crash" as const), model }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant("unload" as const), model }), weight: 1 },
  {
    arbitrary: fc.record({
      t: fc.constant("advance" as const),
      ms: fc.constantFrom(500, 3000, 12_000),
    }),
    weight: 3,
  },
);

describe("hold changes, random interleavings", () => {
  for (const policy of ["fixed", "cost"] as const) {
    test(`hold_policy = "${policy}": per model: granted, then at most one expired (at or past its deadline), preempted or dropped (before it), of that hold`, () => {
      /** How often each change came up: the runs must reach all of them (`dropped`: cost only). */
      const tally: Record<string, number> = { granted: 0, expired: 0, preempted: 0 };
      if (policy === "cost") tally.dropped = 0;
      fc.assert(
        fc.property(fc.array(op, { minLength: 10, maxLength: 60 }), (ops) => {
          const h = harness(two.replace('hold_policy = "fixed"', `hold_policy = "${policy}"`));
          let nextId = 1;
          const done = new Set<number>();
          let swapsDone = 0;
          /** The hold each model is under, as the reports tell it (its deadline), or null. */
          const open = new Map<string, number | null>([
            ["a", null],
            ["b", null],
          ]);
          let seen = 0;
          for (const o of ops) {
            const now = h.clock.now();
            if (o.t === "req")
              h.sched.request({ id: nextId++, model: o.model, patienceMs: o.patienceMs });
            else if (o.t === "serveDone") {
              const live = h.fx.granted.filter((id) => !done.has(id));
              const id = live.length > 0 ? live[o.pick % live.length]! : undefined;
              if (id !== undefined) {
                done.add(id);
                h.sched.serveDone(id, { toolCalls: o.toolCalls });
              }
            } else if (o.t === "swapDone") {
              const s = h.fx.swaps[swapsDone];
              if (s) {
                swapsDone++;
                h.sched.swapDone(
                  s.id,
                  o.ok ? { ok: true } : { ok: false, error: new QmError("upstream_failed", "x") },
                );
              }
            } else if (o.t === "stopped") {
              const all = h.fx.stops.flat().filter((m) => h.state(m) === "stopping");
              const m = all.length > 0 ? all[o.pick % all.length] : undefined;
              if (m) h.sched.stopped(m);
            } else if (o.t === "crash")
              h.sched.exited(o.model, new QmError("upstream_crashed", "x"));
            else if (o.t === "unload") h.sched.unload(o.model);
            else {
              h.clock.advance(o.ms);
              h.sched.wake();
            }
            const at = h.clock.now();
            for (const line of h.fx.holds.slice(seen)) {
              const [, m, change, until] = /^(\w+):(\w+)@(\d+)$/.exec(line)!;
              const u = Number(until);
              expect({ line, known: change! in tally }).toEqual({ line, known: true });
              tally[change!]!++;
              if (change === "granted") {
                expect({ line, ahead: u > at }).toEqual({ line, ahead: true });
                open.set(m!, u);
              } else if (change === "expired" && policy === "cost" && u === at) {
                // The cost policy also ends a hold before its deadline when its loop answers
                // without tool calls: reported expired at that time.
                expect({ line, early: u <= open.get(m!)! }).toEqual({ line, early: true });
                open.set(m!, null);
              } else {
                expect({ line, of: open.get(m!) }).toEqual({ line, of: u });
                if (change === "expired")
                  expect({ line, due: u <= at }).toEqual({ line, due: true });
                else expect({ line, early: u > now }).toEqual({ line, early: true });
                open.set(m!, null);
              }
            }
            seen = h.fx.holds.length;
            // A hold ends unreported only with its model leaving ready; what status shows agrees.
            for (const m of ["a", "b"]) {
              if (h.state(m) !== "ready") open.set(m, null);
              const shown = h.sched.snapshot().models.find((x) => x.id === m)!.heldUntil;
              expect({ m, shown }).toEqual({ m, shown: open.get(m)! });
            }
          }
        }),
        { numRuns: 500 },
      );
      expect({ tally, all: Object.values(tally).every((n) => n > 0) }).toEqual({
        tally,
        all: true,
      });
    });
  }
});
