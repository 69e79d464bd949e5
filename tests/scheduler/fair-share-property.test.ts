/**
 * Fair share between keys under random arrivals of several keys (fake clock, the real
 * scheduler): the bound within a model (B1), caps, first come first served within a key, work
 * conservation, holds by priority, no starvation — checked after every event; and, without
 * keys, the same decisions with fair share on and off. design.md, "Fair share between keys".
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { Config } from "../../src/config/types.ts";
import { GroupPolicy } from "../../src/policy/group.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import type { StopReason } from "../../src/scheduler/stop-reason.ts";
import type { HoldChange, HoldWhy, RequestKey, Swap } from "../../src/scheduler/types.ts";
import { QmError } from "../../src/shared/errors.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { FakeEffects } from "../support/fake-effects.ts";

const PATIENCE_MS = 20_000;
const toml = (policy: string, fair: boolean) => `
[scheduler]
hold_ms = 8000
patience_ms = ${PATIENCE_MS}
hold_policy = "${policy}"
[scheduler.fair_share]
enabled = ${fair}

[groups.big]
members = ["a", "b"]
[groups.side]
members = ["c"]
exclusive = false

[models.a]
cmd = "x"
proxy = "http://127.0.0.1:9"
concurrency_limit = 2
[models.b]
cmd = "x"
proxy = "http://127.0.0.1:9"
concurrency_limit = 1
[models.c]
cmd = "x"
proxy = "http://127.0.0.1:9"
concurrency_limit = 1
`;
const MODELS = ["a", "b", "c"];
const WEIGHT = { interactive: 4, normal: 2, batch: 1 } as const;

const loaded = new Map<string, Config>();
function load(text: string): Config {
  let cfg = loaded.get(text);
  if (!cfg) {
    cfg = config(text);
    loaded.set(text, cfg);
  }
  return cfg;
}

type Op =
  | { t: "req"; model: number; key: number }
  /** A key's backlog: six requests at once. */
  | { t: "burst"; model: number; key: number }
  | { t: "swapDone"; pick: number; ok: boolean }
  | { t: "serveDone"; pick: number; toolCalls: boolean }
  | { t: "cancel"; pick: number }
  | { t: "stopped"; pick: number }
  | { t: "advance"; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      t: fc.constant("req" as const),
      model: fc.nat(MODELS.length - 1),
      key: fc.nat(3),
    }),
    weight: 7,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("burst" as const),
      model: fc.nat(MODELS.length - 1),
      key: fc.nat(3),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({ t: fc.constant("swapDone" as const), pick: fc.nat(), ok: fc.boolean() }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      t: fc.constant("serveDone" as const),
      pick: fc.nat(),
      toolCalls: fc.boolean(),
    }),
    weight: 6,
  },
  { arbitrary: fc.record({ t: fc.constant("cancel" as const), pick: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant("stopped" as const), pick: fc.nat() }), weight: 3 },
  {
    arbitrary: fc.record({
      t: fc.constant("advance" as const),
      ms: fc.constantFrom(500, 4000, 15_000),
    }),
    weight: 2,
  },
);

interface Setup {
  policy: "cost" | "fixed";
  /** Caps of the interactive, normal and batch keys (0 = none). */
  caps: [number, number, number];
  ops: Op[];
}

const setup: fc.Arbitrary<Setup> = fc.record({
  policy: fc.constantFrom("cost" as const, "fixed" as const),
  caps: fc.tuple(fc.constantFrom(0, 1), fc.constantFrom(0, 2), fc.constantFrom(0, 1, 3)),
  ops: fc.array(op, { minLength: 1, maxLength: 70 }),
});

/** A hold broken by a swap: whose it was (null: not known), and how. */
interface Break {
  model: string;
  change: HoldChange;
  holder: string | null;
  why?: HoldWhy;
}

/** Effects that keep what is pending, and each hold break with the swap that caused it. */
class Recording extends FakeEffects {
  readonly pendingSwaps: Swap[] = [];
  readonly pendingStops: string[] = [];
  /** Holds broken in the event under way, awaiting the swap's first waiter (`loading`). */
  broken: Break[] = [];
  onBreak: (b: Break, by: number) => void = () => {};
  /** Whose hold `model` is, as the scheduler has it at this moment. */
  holderOf: (model: string) => string | null = () => null;
  override startSwap(swap: Swap): void {
    super.startSwap(swap);
    this.pendingSwaps.push(swap);
  }
  override stopModels(models: string[], reason: StopReason): void {
    super.stopModels(models, reason);
    this.pendingStops.push(...models);
  }
  override holdChanged(model: string, change: HoldChange, untilMs: number, why?: HoldWhy): void {
    super.holdChanged(model, change, untilMs, why);
    if (change === "dropped" || change === "preempted") {
      this.broken.push({ model, change, holder: this.holderOf(model), ...(why ? { why } : {}) });
    }
  }
  override loading(requestId: number, model: string): void {
    super.loading(requestId, model);
    for (const b of this.broken.splice(0)) this.onBreak(b, requestId);
  }
}

interface Asked {
  id: number;
  model: string;
  key: RequestKey | undefined;
  arrivedAt: number;
}

function run(s: Setup) {
  const cfg = load(toml(s.policy, true));
  const clock = new FakeClock(0);
  const fx = new Recording();
  const sched = new Scheduler(cfg, new GroupPolicy(cfg), fx, clock);
  const KEYS: (RequestKey | undefined)[] = [
    undefined,
    { name: "agent", priority: "interactive", maxConcurrency: s.caps[0] },
    { name: "chat", priority: "normal", maxConcurrency: s.caps[1] },
    { name: "notebook", priority: "batch", maxConcurrency: s.caps[2] },
  ];
  const nameOf = (k: RequestKey | undefined) => k?.name ?? "anonymous";
  const weightOf = (k: RequestKey | undefined) => WEIGHT[k?.priority ?? "normal"];
  const capOf = (name: string) => KEYS.find((k) => nameOf(k) === name)?.maxConcurrency ?? 0;

  const asked = new Map<number, Asked>();
  const waiting = new Map<number, Asked>(); // asked, not yet granted, failed or cancelled
  const live: number[] = [];
  const inflight = new Map<string, number>();
  const lastGrant = new Map<string, number>(); // `key model` → clock time
  /** B1: grants on a head's model to each other key since it became its key's head. */
  const behind = new Map<number, Map<string, number>>();
  const violations: string[] = [];
  /** Grants to each pair of keys on a model (`model j k`) while both wait for it. */
  const shares = new Map<string, [number, number]>();
  const weightByName = (name: string) => weightOf(KEYS.find((k) => nameOf(k) === name));
  let nextId = 1;

  const heads = (model: string) => {
    const out = new Map<string, Asked>();
    for (const r of waiting.values()) {
      if (r.model === model && !out.has(nameOf(r.key))) out.set(nameOf(r.key), r);
    }
    return out;
  };
  const hasRoom = (name: string) => {
    const cap = capOf(name);
    return cap === 0 || (inflight.get(name) ?? 0) < cap;
  };

  const grant = fx.grant.bind(fx);
  fx.grant = (id, model) => {
    const r = asked.get(id)!;
    const name = nameOf(r.key);
    // First come, first served within a key, for each model, once keys share (with one key the
    // scheduler decides as it always did: a younger request that broke a hold sooner is served
    // with the swap it started).
    const head = heads(model).get(name);
    const shared = new Set([...asked.values()].map((a) => nameOf(a.key))).size > 1;
    if (shared && head && head.id !== id) {
      violations.push(`${id} of ${name} granted before ${head.id}`);
    }
    // B1: every other key's head that could run counts this grant against its bound.
    for (const [k, h] of heads(model)) {
      if (k === name || !hasRoom(k)) continue;
      const counts = behind.get(h.id) ?? new Map<string, number>();
      const n = (counts.get(name) ?? 0) + 1;
      counts.set(name, n);
      behind.set(h.id, counts);
      const bound = Math.floor(weightOf(r.key) / weightOf(h.key)) + 1;
      if (n > bound)
        violations.push(`${h.id} (${k}) waited for ${n} grants of ${name} on ${model}`);
    }
    // Shares: over a stretch where two keys both wait for the model (under their caps), their
    // grants over their weights differ by at most 1/w + 1/w' (start-time fair queuing).
    const backlogged = [...heads(model).keys()].filter(hasRoom).sort();
    for (const pair of [...shares.keys()].filter((p) => p.startsWith(`${model} `))) {
      const [, j, k] = pair.split(" ");
      if (!backlogged.includes(j!) || !backlogged.includes(k!)) shares.delete(pair);
    }
    for (const [i, j] of backlogged.entries()) {
      for (const k of backlogged.slice(i + 1)) {
        const pair = `${model} ${j} ${k}`;
        const n = shares.get(pair) ?? [0, 0];
        if (name === j) n[0]++;
        if (name === k) n[1]++;
        shares.set(pair, n);
        const [wj, wk] = [weightByName(j), weightByName(k)];
        if (Math.abs(n[0]! / wj - n[1]! / wk) > 1 / wj + 1 / wk + 1e-9) {
          violations.push(`${j} and ${k} got ${n[0]} and ${n[1]} grants on ${model}`);
        }
      }
    }
    waiting.delete(id);
    live.push(id);
    inflight.set(name, (inflight.get(name) ?? 0) + 1);
    if (capOf(name) > 0 && inflight.get(name)! > capOf(name)) {
      violations.push(`${name} has ${inflight.get(name)} in flight, over its cap`);
    }
    lastGrant.set(`${name} ${model}`, clock.now());
    return grant(id, model);
  };
  const fail = fx.fail.bind(fx);
  fx.fail = (id, error) => {
    waiting.delete(id);
    fail(id, error);
  };

  // Whose hold a model is, as the scheduler has it at the moment the hold breaks.
  fx.holderOf = (model) => sched.snapshot().models.find((m) => m.id === model)?.heldFor ?? null;
  fx.onBreak = (b, by) => {
    const r = asked.get(by)!;
    const holder = b.holder;
    if (holder === null) return;
    const hw = weightOf(KEYS.find((k) => nameOf(k) === holder));
    const w = weightOf(r.key);
    const reason = b.change === "preempted" ? "patience" : b.why?.reason;
    if (reason === "priority" && !(w > hw))
      violations.push(`${by} broke ${holder}'s hold by priority`);
    if ((reason === "cost" || reason === "fairness") && w < hw) {
      violations.push(`${by} (${nameOf(r.key)}) broke ${holder}'s hold by ${reason}`);
    }
    if (reason === "patience" && w < hw) {
      const since = Math.max(r.arrivedAt, lastGrant.get(`${nameOf(r.key)} ${r.model}`) ?? 0);
      if (clock.now() - since < PATIENCE_MS) {
        violations.push(`${by} preempted ${holder}'s hold before its key's patience`);
      }
    }
  };

  const pick = <T>(list: T[], n: number) => (list.length ? list[n % list.length] : undefined);
  const apply = (o: Op) => {
    switch (o.t) {
      case "req": {
        const id = nextId++;
        const key = KEYS[o.key];
        const r = { id, model: MODELS[o.model]!, key, arrivedAt: clock.now() };
        asked.set(id, r);
        waiting.set(id, r);
        sched.request({ id, model: r.model, ...(key ? { key } : {}), conversation: `c${o.key}` });
        break;
      }
      case "burst":
        for (let i = 0; i < 6; i++) apply({ ...o, t: "req" });
        break;
      case "swapDone": {
        const sw = pick(fx.pendingSwaps, o.pick);
        if (!sw) break;
        fx.pendingSwaps.splice(fx.pendingSwaps.indexOf(sw), 1);
        sched.swapDone(
          sw.id,
          o.ok ? { ok: true } : { ok: false, error: new QmError("upstream_start_failed", "x") },
        );
        break;
      }
      case "serveDone": {
        const id = pick(live, o.pick);
        if (id === undefined) break;
        live.splice(live.indexOf(id), 1);
        const name = nameOf(asked.get(id)!.key);
        inflight.set(name, inflight.get(name)! - 1);
        sched.serveDone(id, { toolCalls: o.toolCalls });
        break;
      }
      case "cancel": {
        const id = pick([...waiting.keys()], o.pick);
        if (id === undefined) break;
        waiting.delete(id);
        sched.cancel(id);
        break;
      }
      case "stopped": {
        const m = pick(fx.pendingStops, o.pick);
        if (!m) break;
        fx.pendingStops.splice(fx.pendingStops.indexOf(m), 1);
        sched.stopped(m);
        break;
      }
      case "advance":
        clock.advance(o.ms);
        if (fx.wake !== null && fx.wake <= clock.now()) sched.wake();
        break;
    }
  };

  const check = () => {
    expect(violations).toEqual([]);
    const snap = sched.snapshot();
    // Who waits for what, per key, adds up to what waits.
    for (const m of snap.models) {
      const perKey = Object.values(m.queuedKeys).reduce((a, b) => a + b, 0);
      if (perKey !== m.queued)
        violations.push(`${m.id}: ${perKey} waiting by key, ${m.queued} in all`);
    }
    // Work conservation: a waiter under its key's cap means work, a transition or a hold —
    // for a lower key, a higher key's hold lasts while its loop is in a tool gap.
    const eligible = [...waiting.values()].filter((r) => hasRoom(nameOf(r.key)));
    const looping = snap.models.map((m) => (m.loopOf === null ? 0 : weightByName(m.loopOf)));
    const working =
      snap.models.some((m) => m.inflight > 0 || m.heldUntil !== null) ||
      fx.pendingSwaps.length > 0 ||
      fx.pendingStops.length > 0;
    const idle = working ? [] : eligible.filter((r) => !looping.some((w) => w > weightOf(r.key)));
    if (idle.length > 0) violations.push(`idle while ${idle.map((r) => r.id)} wait`);
    expect(violations).toEqual([]);
  };

  for (const o of s.ops) {
    apply(o);
    check();
  }
  // Pressure: the interactive key keeps every ready model busy while older work finishes and
  // time passes; whatever was asked before must still end. A batch request waits for its key's
  // earlier ones, each up to ⌊4/1⌋ + 1 grants of the interactive key's on a model with one slot
  // (B1): 100 rounds of one grant each are enough for the largest backlog made here.
  const before = [...waiting.keys()];
  for (let round = 0; round < 100 && before.some((id) => waiting.has(id)); round++) {
    const ready = sched.snapshot().models.filter((m) => m.state === "ready");
    const older = [...live];
    for (const m of ready) apply({ t: "req", model: MODELS.indexOf(m.id), key: 1 });
    for (const id of older) apply({ t: "serveDone", pick: live.indexOf(id), toolCalls: false });
    while (fx.pendingSwaps.length) apply({ t: "swapDone", pick: 0, ok: true });
    while (fx.pendingStops.length) apply({ t: "stopped", pick: 0 });
    apply({ t: "advance", ms: 15_000 });
    check();
  }
  expect(before.filter((id) => waiting.has(id))).toEqual([]);
}

/** The effects of `ops`, keyless, with fair share on or off. */
function keylessLog(ops: Op[], fair: boolean): string[] {
  const cfg = load(toml("cost", fair));
  const clock = new FakeClock(0);
  const fx = new Recording();
  const sched = new Scheduler(cfg, new GroupPolicy(cfg), fx, clock);
  const live: number[] = [];
  const grant = fx.grant.bind(fx);
  fx.grant = (id, model) => {
    live.push(id);
    return grant(id, model);
  };
  let nextId = 1;
  const pick = <T>(list: T[], n: number) => (list.length ? list[n % list.length] : undefined);
  for (const o of ops) {
    if (o.t === "req" || o.t === "burst") {
      const n = o.t === "req" ? 1 : 6;
      for (let i = 0; i < n; i++) {
        sched.request({ id: nextId++, model: MODELS[o.model]!, conversation: "c" });
      }
    } else if (o.t === "swapDone") {
      const sw = pick(fx.pendingSwaps, o.pick);
      if (!sw) continue;
      fx.pendingSwaps.splice(fx.pendingSwaps.indexOf(sw), 1);
      sched.swapDone(sw.id, { ok: true });
    } else if (o.t === "serveDone") {
      const id = pick(live, o.pick);
      if (id === undefined) continue;
      live.splice(live.indexOf(id), 1);
      sched.serveDone(id, { toolCalls: o.toolCalls });
    } else if (o.t === "cancel") sched.cancel(1 + (o.pick % nextId));
    else if (o.t === "stopped") {
      const m = pick(fx.pendingStops, o.pick);
      if (!m) continue;
      fx.pendingStops.splice(fx.pendingStops.indexOf(m), 1);
      sched.stopped(m);
    } else {
      clock.advance(o.ms);
      if (fx.wake !== null && fx.wake <= clock.now()) sched.wake();
    }
  }
  const positions = [...fx.positions].map(([id, p]) => `${id}:${p.join(",")}`);
  return [...fx.log, ...fx.holds, ...positions, `wakes ${fx.wakes.join(",")}`];
}

describe("fair share between keys, under random arrivals of several keys", () => {
  test("B1 and shares within a model, caps, FIFO within a key, work conservation, holds by priority, nobody starved", () => {
    fc.assert(
      fc.property(setup, (s) => run(s)),
      { numRuns: 80 },
    );
  }, 60_000);

  test("without keys, fair share on and off decide the same: the same effects in the same order", () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 70 }), (ops) => {
        expect(keylessLog(ops, true)).toEqual(keylessLog(ops, false));
      }),
      { numRuns: 60 },
    );
  }, 60_000);
});
