import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { Config } from "../../src/config/types.ts";
import { GroupPolicy } from "../../src/policy/group.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import { type StopReason, stopReasonText } from "../../src/scheduler/stop-reason.ts";
import type { Swap } from "../../src/scheduler/types.ts";
import { QmError } from "../../src/shared/errors.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { FakeEffects } from "../support/fake-effects.ts";

const TOML = `
[scheduler]
hold_ms = 5000
patience_ms = 20000
hold_on = "tool_calls"

[groups.big]
members = ["a", "b"]
[groups.side]
members = ["c"]
exclusive = false
[groups.pinned]
members = ["p"]
swap = false
exclusive = false
persistent = true

[models.a]
cmd = "x"
proxy = "http://127.0.0.1:9"
ttl_s = 30
evict = "sleep"
[models.b]
cmd = "x"
proxy = "http://127.0.0.1:9"
concurrency_limit = 1
[models.c]
cmd = "x"
proxy = "http://127.0.0.1:9"
evict = "sleep"
sleep_level = 2
[models.d]
cmd = "x"
proxy = "http://127.0.0.1:9"
concurrency_limit = 2
[models.p]
cmd = "x"
proxy = "http://127.0.0.1:9"
`;
const MODELS = ["a", "b", "c", "d", "p"];

/** The same models with every estimate known and a VRAM budget that fits two or three at once. */
const BUDGET_TOML = TOML.replace(
  "[groups.big]",
  "[resources]\nvram_budget_gb = 20\n\n[groups.big]",
).replace(/\[models\.(\w)\]\n/g, (_m, id: string) => {
  const gb = { a: 9, b: 6, c: 4, d: 7, p: 3 }[id]!;
  return `[models.${id}]\nest_vram_gb = ${gb}\n`;
});

type Op =
  | { t: "req"; model: number; holdMs: number | null; patienceMs: number | null }
  | { t: "swapDone"; pick: number; ok: boolean }
  | { t: "serveDone"; pick: number; toolCalls: boolean }
  | { t: "cancel"; pick: number }
  | { t: "gone"; pick: number }
  | { t: "stopped"; pick: number }
  | { t: "slept"; pick: number; ok: boolean }
  | { t: "crash"; model: number }
  | { t: "unload"; model: number | null }
  | { t: "advance"; ms: number }
  | { t: "ceiling"; gb: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      t: fc.constant("req" as const),
      model: fc.nat(MODELS.length - 1),
      holdMs: fc.option(fc.constantFrom(0, 1000, 8000), { nil: null }),
      patienceMs: fc.option(fc.constantFrom(0, 3000, 60_000), { nil: null }),
    }),
    weight: 6,
  },
  {
    arbitrary: fc.record({ t: fc.constant("swapDone" as const), pick: fc.nat(), ok: fc.boolean() }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("serveDone" as const),
      pick: fc.nat(),
      toolCalls: fc.boolean(),
    }),
    weight: 5,
  },
  { arbitrary: fc.record({ t: fc.constant("cancel" as const), pick: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant("gone" as const), pick: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant("stopped" as const), pick: fc.nat() }), weight: 3 },
  {
    arbitrary: fc.record({ t: fc.constant("slept" as const), pick: fc.nat(), ok: fc.boolean() }),
    weight: 2,
  },
  {
    arbitrary: fc.record({ t: fc.constant("crash" as const), model: fc.nat(MODELS.length - 1) }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("unload" as const),
      model: fc.option(fc.nat(MODELS.length - 1), { nil: null }),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("ceiling" as const),
      gb: fc.constantFrom(20, 17, 13, 9),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("advance" as const),
      ms: fc.constantFrom(1, 500, 4000, 30_000),
    }),
    weight: 3,
  },
);

/** Effects that also check, at the moment of every stop, that nothing busy is stopped. */
class CheckingEffects extends FakeEffects {
  sched!: Scheduler;
  readonly pendingSwaps: Swap[] = [];
  readonly pendingStops: string[] = [];
  /** Models asked to sleep outside a swap, not yet reported. */
  readonly pendingSleeps: string[] = [];
  readonly violations: string[] = [];
  /** With budgets: the VRAM limit and estimates, to check every admission against. */
  budget: { limit: () => number; est: (id: string) => number } | null = null;

  private checkIdle(models: string[], why: string) {
    const snap = this.sched.snapshot();
    for (const id of models) {
      const m = snap.models.find((x) => x.id === id)!;
      if (m.inflight > 0)
        this.violations.push(`${why} stopped busy ${id} (${m.inflight} in flight)`);
    }
  }
  override startSwap(swap: Swap): void {
    super.startSwap(swap);
    this.checkIdle(swap.evict, `swap ${swap.id}`);
    if (this.budget) {
      const { est } = this.budget;
      const limit = this.budget.limit();
      const gone = new Set(swap.evict);
      const resident = this.sched
        .snapshot()
        .models.filter((m) => ["starting", "ready", "stopping"].includes(m.state))
        .map((m) => m.id)
        .filter((id) => !gone.has(id));
      const sum = resident.reduce((t, id) => t + est(id), 0);
      if (sum > limit)
        this.violations.push(
          `swap ${swap.id} admits ${resident.join("+")} = ${sum} GB > ${limit} GB`,
        );
    }
    this.pendingSwaps.push(swap);
  }
  override stopModels(models: string[], reason: StopReason): void {
    super.stopModels(models, reason);
    this.checkIdle(models, `stop (${stopReasonText(reason)})`);
    this.pendingStops.push(...models);
  }
  override sleepModels(models: string[], reason: StopReason): void {
    super.sleepModels(models, reason);
    this.checkIdle(models, `sleep (${stopReasonText(reason)})`);
    this.pendingSleeps.push(...models);
  }
}

/**
 * Each TOML is loaded once, not once per run (loading was a third of this file's time). The
 * scheduler and the policy only read their Config; frozen, a write to it would throw here.
 */
const loaded = new Map<string, Config>();
function load(toml: string): Config {
  const freeze = (o: object): void => {
    for (const v of Object.values(o)) if (v && typeof v === "object") freeze(v);
    Object.freeze(o);
  };
  let cfg = loaded.get(toml);
  if (!cfg) {
    cfg = config(toml);
    freeze(cfg);
    loaded.set(toml, cfg);
  }
  return cfg;
}

function run(ops: Op[], toml = TOML) {
  const cfg = load(toml);
  const clock = new FakeClock(0);
  const fx = new CheckingEffects();
  // The live ceiling: starts at the budget, moves as "other programs" take and free memory.
  let ceiling = cfg.resources.vramBudgetGb;
  const budget = { vramGb: () => ceiling, ramGb: () => cfg.resources.ramBudgetGb };
  const sched = new Scheduler(cfg, new GroupPolicy(cfg, budget), fx, clock);
  if (cfg.resources.vramBudgetGb > 0) {
    fx.budget = { limit: () => ceiling, est: (id) => cfg.models[id]!.estVramGb };
  }
  fx.sched = sched;
  let nextId = 1;
  const asked: number[] = [];
  const cancelled = new Set<number>();
  const done = new Set<number>();
  const outcomes = new Map<number, number>();
  const count = (id: number) => outcomes.set(id, (outcomes.get(id) ?? 0) + 1);
  const originalGrant = fx.grant.bind(fx);
  fx.grant = (id, model) => {
    count(id);
    return originalGrant(id, model);
  };
  const originalFail = fx.fail.bind(fx);
  fx.fail = (id, err) => {
    count(id);
    originalFail(id, err);
  };
  const live = () => fx.granted.filter((id) => !done.has(id));
  const waiting = () => asked.filter((id) => !outcomes.has(id) && !cancelled.has(id));
  const pick = <T>(list: T[], n: number) => (list.length ? list[n % list.length] : undefined);

  const wakeIfDue = () => {
    if (fx.wake !== null && fx.wake <= clock.now()) sched.wake();
  };
  const apply = (o: Op) => {
    switch (o.t) {
      case "req": {
        const id = nextId++;
        asked.push(id);
        sched.request({
          id,
          model: MODELS[o.model]!,
          ...(o.holdMs === null ? {} : { holdMs: o.holdMs }),
          ...(o.patienceMs === null ? {} : { patienceMs: o.patienceMs }),
        });
        break;
      }
      case "swapDone": {
        const s = pick(fx.pendingSwaps, o.pick);
        if (!s) break;
        fx.pendingSwaps.splice(fx.pendingSwaps.indexOf(s), 1);
        // Evictees asked to sleep: some go to sleep, some fail to and are stopped instead.
        const asleep = (s.sleep ?? []).filter((_, i) => (o.pick + i) % 3 !== 0);
        sched.swapDone(
          s.id,
          o.ok
            ? { ok: true, asleep }
            : { ok: false, error: new QmError("upstream_start_failed", "x"), asleep },
        );
        break;
      }
      case "serveDone": {
        const id = pick(live(), o.pick);
        if (id === undefined) break;
        done.add(id);
        sched.serveDone(id, { toolCalls: o.toolCalls });
        break;
      }
      case "cancel": {
        const id = pick(waiting(), o.pick);
        if (id === undefined) break;
        cancelled.add(id);
        sched.cancel(id);
        break;
      }
      case "gone": {
        const id = pick(waiting(), o.pick);
        if (id !== undefined) fx.gone.add(id);
        break;
      }
      case "stopped": {
        const m = pick(fx.pendingStops, o.pick);
        if (!m) break;
        fx.pendingStops.splice(fx.pendingStops.indexOf(m), 1);
        sched.stopped(m);
        break;
      }
      case "slept": {
        const m = pick(fx.pendingSleeps, o.pick);
        if (!m) break;
        fx.pendingSleeps.splice(fx.pendingSleeps.indexOf(m), 1);
        sched.slept(m, o.ok);
        break;
      }
      case "crash":
        sched.exited(MODELS[o.model]!, new QmError("upstream_crashed", "x"));
        break;
      case "unload":
        sched.unload(o.model === null ? null : MODELS[o.model]!);
        break;
      case "advance":
        clock.advance(o.ms);
        wakeIfDue();
        break;
      case "ceiling":
        // Only configs with a budget have a ceiling to move; the runtime sheds after a drop.
        if (cfg.resources.vramBudgetGb > 0) {
          ceiling = o.gb;
          sched.shed(ceiling);
        }
        break;
    }
  };

  const check = () => {
    expect(fx.violations).toEqual([]);
    for (const [id, n] of outcomes) if (n > 1) throw new Error(`request ${id} ended ${n} times`);
    const snap = sched.snapshot();
    for (const m of snap.models) expect(m.inflight).toBeGreaterThanOrEqual(0);
    // A sleeping model serves nothing and holds no memory the policy counts.
    const running = sched.runningLru();
    for (const m of snap.models.filter((x) => x.state === "sleeping")) {
      expect(m.inflight).toBe(0);
      expect(running).not.toContain(m.id);
    }
    expect(snap.inflight).toBe(live().length);
  };

  for (const o of ops) {
    apply(o);
    check();
  }
  // Pressure: every round, fresh requests keep each ready model busy while older ones finish
  // and time passes. Whatever was asked before must still end: no waiter is starved by a
  // stream of requests to the model it needs evicted.
  const before = [...asked];
  for (let round = 0; round < 40; round++) {
    const ready = sched.snapshot().models.filter((m) => m.state === "ready");
    const older = live();
    for (const m of ready)
      apply({ t: "req", model: MODELS.indexOf(m.id), holdMs: 0, patienceMs: null });
    for (const id of older) {
      done.add(id);
      sched.serveDone(id, { toolCalls: false });
    }
    while (fx.pendingSwaps.length) apply({ t: "swapDone", pick: 0, ok: true });
    while (fx.pendingStops.length) apply({ t: "stopped", pick: 0 });
    while (fx.pendingSleeps.length) apply({ t: "slept", pick: 0, ok: round % 2 === 0 });
    apply({ t: "advance", ms: 100_000 });
    check();
  }
  const starved = before.filter((id) => !outcomes.has(id) && !cancelled.has(id));
  expect(starved).toEqual([]);
  // Quiesce: finish everything that is running, let every deadline pass.
  for (let round = 0; round < 200; round++) {
    const busy =
      fx.pendingSwaps.length + fx.pendingStops.length + fx.pendingSleeps.length + live().length;
    if (busy === 0 && waiting().length === 0) break;
    while (fx.pendingSwaps.length) apply({ t: "swapDone", pick: 0, ok: true });
    while (fx.pendingStops.length) apply({ t: "stopped", pick: 0 });
    while (fx.pendingSleeps.length) apply({ t: "slept", pick: 0, ok: true });
    while (live().length) apply({ t: "serveDone", pick: 0, toolCalls: false });
    apply({ t: "advance", ms: 100_000 });
    check();
  }
  // Every request ended in exactly one outcome (or was cancelled by its client).
  for (const id of asked) {
    const n = outcomes.get(id) ?? 0;
    if (cancelled.has(id)) expect(n).toBeLessThanOrEqual(1);
    else expect(n).toBe(1);
  }
  const snap = sched.snapshot();
  expect(snap.queueDepth).toBe(0);
  expect(snap.swaps).toEqual([]);
  for (const m of snap.models) expect(m.inflight).toBe(0);
}

describe("scheduler properties under random interleavings", () => {
  // Models a and c are `evict = "sleep"`: sleeping models are in the random mix throughout.
  test("no busy model is stopped (or put to sleep), every request ends once, counts return to zero, nobody waits forever", () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 120 }), (ops) => {
        run(ops);
      }),
      { numRuns: 2000 },
    );
  }, 60_000);

  test("with VRAM budgets and every estimate known, admissions never exceed the live ceiling", () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 120 }), (ops) => {
        run(ops, BUDGET_TOML);
      }),
      { numRuns: 1000 },
    );
  }, 60_000);
});
