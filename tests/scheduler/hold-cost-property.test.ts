/**
 * `hold_policy = "cost"` under random agent loops (fake clock, the real scheduler): the
 * fairness bound, and no hold kept past its expected gap. Checked after every event.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { GroupPolicy } from "../../src/policy/group.ts";
import { WINDOW_FACTOR } from "../../src/scheduler/gaps.ts";
import { QUANTUM_ROUND_TRIPS } from "../../src/scheduler/hold-cost.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import { config } from "../support/config.ts";
import { FakeEffects } from "../support/fake-effects.ts";

interface Model {
  loadMs: number;
  sleep: boolean;
}
interface Agent {
  model: number;
  genMs: number;
  /** One tool gap per round but the last. */
  gaps: number[];
}
interface Scenario {
  models: Model[];
  agents: Agent[];
}

const HOLD_MS = 4000;
const STOP_MS = 100;

const scenario: fc.Arbitrary<Scenario> = fc.integer({ min: 2, max: 3 }).chain((n) =>
  fc.record({
    models: fc.array(
      fc.record({
        loadMs: fc.constantFrom(200, 1000, 4000, 15_000),
        sleep: fc.boolean(),
      }),
      { minLength: n, maxLength: n },
    ),
    agents: fc.array(
      fc.record({
        model: fc.nat(n - 1),
        genMs: fc.constantFrom(100, 800, 3000),
        gaps: fc.array(fc.constantFrom(50, 300, 1500, 6000, 20_000), {
          minLength: 1,
          maxLength: 7,
        }),
      }),
      { minLength: 2, maxLength: 4 },
    ),
  }),
);

/** A tiny discrete-event loop (ties in insertion order). */
class Timeline {
  now = 0;
  private seq = 0;
  private readonly events: { at: number; seq: number; fn: () => void }[] = [];
  at(delay: number, fn: () => void): void {
    this.events.push({ at: this.now + delay, seq: this.seq++, fn });
    this.events.sort((a, b) => a.at - b.at || a.seq - b.seq);
  }
  /** Runs every event in order, calling `check` after each. */
  run(check: () => void): void {
    for (let e = this.events.shift(); e; e = this.events.shift()) {
      this.now = e.at;
      e.fn();
      check();
    }
  }
}

/** Runs `s` to the end, `check` after every event; the loops' end times, and the drops. */
function play(s: Scenario, check: (run: Run) => void): { ends: number[]; dropped: string[] } {
  const ids = s.models.map((_, i) => `m${i}`);
  const cfg = config(
    `[scheduler]\nhold_ms = ${HOLD_MS}\npatience_ms = 3600000\n` +
      ids
        .map(
          (id, i) =>
            `[models.${id}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nevict = "${s.models[i]!.sleep ? "sleep" : "stop"}"\n`,
        )
        .join(""),
  );
  const t = new Timeline();
  const fx = new FakeEffects();
  const wakeOf = (i: number) => s.models[i]!.loadMs / 10;
  const sched = new Scheduler(
    cfg,
    new GroupPolicy(cfg),
    fx,
    { now: () => t.now },
    {
      loadMs: (id) => s.models[ids.indexOf(id)]!.loadMs,
      wakeMs: (id) => wakeOf(ids.indexOf(id)),
    },
  );
  const run: Run = { t, fx, sched, ids, s, granted: new Map(), gapsSeen: [], dropped: [] };
  const loops = s.agents.map((a, i) => ({ ...a, round: 0, doneAt: -1, conv: `c${i}` }));
  const byId = new Map<number, (typeof loops)[number]>();
  let nextId = 1;
  const answeredAt = new Map<string, number>();
  const ask = (loop: (typeof loops)[number]) => {
    const id = nextId++;
    byId.set(id, loop);
    const since = answeredAt.get(loop.conv);
    if (since !== undefined) run.gapsSeen.push(t.now - since);
    answeredAt.delete(loop.conv);
    sched.request({ id, model: ids[loop.model]!, conversation: loop.conv });
  };
  fx.grant = (id) => {
    fx.granted.push(id);
    const loop = byId.get(id)!;
    t.at(loop.genMs, () => {
      const last = loop.round >= loop.gaps.length;
      const gap = loop.gaps[loop.round];
      loop.round++;
      if (!last) answeredAt.set(loop.conv, t.now);
      sched.serveDone(id, { toolCalls: !last });
      if (last) loop.doneAt = t.now;
      else t.at(gap!, () => ask(loop));
    });
    return true;
  };
  fx.startSwap = (swap) => {
    fx.swaps.push(swap);
    const i = ids.indexOf(swap.target);
    const load = swap.wake ? wakeOf(i) : s.models[i]!.loadMs;
    t.at((swap.evict.length > 0 ? STOP_MS : 0) + load, () =>
      sched.swapDone(swap.id, { ok: true, asleep: swap.sleep ?? [] }),
    );
  };
  fx.stopModels = (models) =>
    t.at(STOP_MS, () => {
      for (const m of models) sched.stopped(m);
    });
  fx.sleepModels = (models) =>
    t.at(STOP_MS, () => {
      for (const m of models) sched.slept(m, true);
    });
  const holdChanged = fx.holdChanged.bind(fx);
  fx.holdChanged = (model, change, until, why) => {
    holdChanged(model, change, until, why);
    if (change === "granted") run.granted.set(model, t.now);
    if (change === "dropped") run.dropped.push(why!.reason!);
  };
  fx.wakeAt = (at) => {
    fx.wake = at;
    if (at !== null) t.at(Math.max(0, at - t.now), () => sched.wake());
  };
  for (const loop of loops) ask(loop);
  t.run(() => check(run));
  return { ends: loops.map((l) => l.doneAt), dropped: run.dropped };
}

interface Run {
  t: Timeline;
  fx: FakeEffects;
  sched: Scheduler;
  ids: string[];
  s: Scenario;
  /** When each model's current hold was granted. */
  granted: Map<string, number>;
  /** Every tool gap the agents took so far. */
  gapsSeen: number[];
  /** Why each dropped hold was dropped. */
  dropped: string[];
}

/** What swapping `id` costs, as the facts say: its wake when it sleeps, else its load. */
function swapCost(run: Run, id: string): number {
  const m = run.s.models[run.ids.indexOf(id)]!;
  return m.sleep ? m.loadMs / 10 : m.loadMs;
}

describe('hold_policy = "cost" under random agent loops', () => {
  test("fairness: no waiter sits behind idle holds for its quantum (3 round trips), and the wake is armed for it", () => {
    const tally = { heldBack: 0, fairness: 0, cost: 0 };
    fc.assert(
      fc.property(scenario, (s) => {
        const { ends, dropped } = play(s, (run) => {
          const snap = run.sched.snapshot();
          const now = run.t.now;
          const resident = snap.models.find((m) => m.state === "ready")?.id;
          for (const w of snap.heldBack) {
            tally.heldBack++;
            // In one swap group the held model in its way is the resident one.
            const quantum =
              QUANTUM_ROUND_TRIPS * (swapCost(run, w.model) + swapCost(run, resident!));
            expect({ w, under: w.heldWaitMs < quantum }).toEqual({ w, under: true });
            expect({ w, at: w.quantumAt - now + w.heldWaitMs }).toEqual({ w, at: quantum });
            expect({ w, armed: run.fx.wake !== null && run.fx.wake <= w.quantumAt }).toEqual({
              w,
              armed: true,
            });
          }
        });
        // Nobody waits forever.
        expect(ends.every((at) => at >= 0)).toBe(true);
        for (const why of dropped) tally[why as "cost" | "fairness"]++;
      }),
      { numRuns: 300 },
    );
    // The runs reach waiters held back, holds broken by cost and by the bound.
    expect({ tally, seen: Object.values(tally).every((n) => n > 0) }).toEqual({
      tally,
      seen: true,
    });
  });

  test("no hold outlives its expected gap: its window is at most 1.25 × the longest gap seen (or of hold_ms before any), and it is gone once the window is spent", () => {
    let holds = 0;
    fc.assert(
      fc.property(scenario, (s) => {
        play(s, (run) => {
          const now = run.t.now;
          const longest = Math.max(HOLD_MS, ...run.gapsSeen);
          for (const m of run.sched.snapshot().models) {
            if (m.heldUntil === null) continue;
            holds++;
            const from = run.granted.get(m.id)!;
            expect({ m: m.id, live: m.heldUntil > now }).toEqual({ m: m.id, live: true });
            const window = m.heldUntil - from;
            expect({ m: m.id, window, ok: window <= Math.ceil(longest * WINDOW_FACTOR) }).toEqual({
              m: m.id,
              window,
              ok: true,
            });
            expect(m.hold?.windowMs).toBe(window);
            expect({ armed: run.fx.wake !== null && run.fx.wake <= m.heldUntil }).toEqual({
              armed: true,
            });
          }
        });
      }),
      { numRuns: 300 },
    );
    expect(holds).toBeGreaterThan(0);
  });
});
