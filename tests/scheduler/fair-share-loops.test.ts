/**
 * Holds and patience by priority under random agent loops and batch backlogs (fake clock, the
 * real scheduler, on the simulator's timeline): an interactive key's hold — and
 * its loop's model while the loop is in a tool gap — is taken by a lower key only once that key
 * has waited its patience for a turn, nor is a model an interactive key is using drained for a
 * lower one before then; every loop and every batch request ends. design.md, "Fair share between keys", 4.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { Timeline } from "../../scripts/sim.ts";
import { GroupPolicy } from "../../src/policy/group.ts";
import { Scheduler } from "../../src/scheduler/scheduler.ts";
import type { HoldChange, HoldWhy, RequestKey, Swap } from "../../src/scheduler/types.ts";
import { config } from "../support/config.ts";
import { FakeEffects } from "../support/fake-effects.ts";

interface Scenario {
  policy: "cost" | "fixed";
  patienceMs: number;
  loadMs: number;
  agent: { genMs: number; gaps: number[] };
  /** Each batch request: when it is asked, and how long it runs. */
  batch: { atMs: number; genMs: number }[];
  /** A normal key's requests, on the batch key's model. */
  chat: { atMs: number; genMs: number }[];
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  policy: fc.constantFrom("cost" as const, "fixed" as const),
  patienceMs: fc.constantFrom(5000, 20_000, 60_000),
  loadMs: fc.constantFrom(500, 3000, 8000),
  agent: fc.record({
    genMs: fc.constantFrom(500, 2000),
    gaps: fc.array(fc.constantFrom(300, 2000, 6000, 15_000), { minLength: 1, maxLength: 8 }),
  }),
  batch: fc.array(fc.record({ atMs: fc.nat(40_000), genMs: fc.constantFrom(300, 1500, 4000) }), {
    minLength: 1,
    maxLength: 15,
  }),
  chat: fc.array(fc.record({ atMs: fc.nat(60_000), genMs: fc.constantFrom(500, 3000) }), {
    maxLength: 3,
  }),
});

const AGENT: RequestKey = { name: "agent", priority: "interactive", maxConcurrency: 0 };
const NOTEBOOK: RequestKey = { name: "notebook", priority: "batch", maxConcurrency: 0 };
const CHAT: RequestKey = { name: "chat", priority: "normal", maxConcurrency: 0 };
const WEIGHT: Record<string, number> = { agent: 4, chat: 2, notebook: 1 };

function play(s: Scenario): string[] {
  const cfg = config(
    `[scheduler]\npatience_ms = ${s.patienceMs}\nhold_policy = "${s.policy}"\nhold_ms = 8000\n` +
      ["a", "b"]
        .map(
          (id) =>
            `[models.${id}]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nconcurrency_limit = 1\n`,
        )
        .join(""),
  );
  const t = new Timeline();
  const violations: string[] = [];
  const asked = new Map<number, { key: RequestKey; model: string; at: number; genMs: number }>();
  const waiting = new Set<number>();
  const lastGrant = new Map<string, number>();
  const onGrant = new Map<number, () => void>();
  let broken: { change: HoldChange; why?: HoldWhy; holder: string | null }[] = [];
  /** The request whose swap is starting (`loading` comes just before `startSwap`). */
  let starter = 0;
  let agentInGap = false;

  const sched: Scheduler = new Scheduler(
    cfg,
    new GroupPolicy(cfg),
    new (class extends FakeEffects {
      override grant(id: number, model: string): boolean {
        super.grant(id, model);
        const r = asked.get(id)!;
        waiting.delete(id);
        lastGrant.set(r.key.name, t.now);
        t.at(r.genMs, () => onGrant.get(id)!());
        return true;
      }
      override startSwap(swap: Swap): void {
        super.startSwap(swap);
        // The agent's loop in its tool gap (its hold may have run out): a lower key takes its
        // model only past its patience for a turn.
        const r = asked.get(starter)!;
        if (agentInGap && swap.evict.includes("a") && r.key !== AGENT) {
          const since = Math.max(r.at, lastGrant.get(r.key.name) ?? 0);
          if (t.now - since < s.patienceMs) {
            violations.push(`${r.key.name} took a from the agent's loop at ${t.now}`);
          }
        }
        t.at(s.loadMs, () => sched.swapDone(swap.id, { ok: true }));
      }
      override stopModels(models: string[]): void {
        t.at(500, () => {
          for (const m of models) sched.stopped(m);
        });
      }
      override wakeAt(at: number | null): void {
        t.arm(at, () => sched.wake());
      }
      override holdChanged(model: string, change: HoldChange, until: number, why?: HoldWhy) {
        super.holdChanged(model, change, until, why);
        if (change !== "dropped" && change !== "preempted") return;
        const holder = sched.snapshot().models.find((m) => m.id === model)?.heldFor ?? null;
        broken.push({ change, holder, ...(why ? { why } : {}) });
      }
      override loading(id: number, model: string): void {
        super.loading(id, model);
        starter = id;
        const r = asked.get(id)!;
        for (const b of broken) {
          if (b.holder === null || WEIGHT[r.key.name]! >= WEIGHT[b.holder]!) continue;
          // A lower key broke a higher one's hold: only by its patience, counted from its turn.
          const since = Math.max(r.at, lastGrant.get(r.key.name) ?? 0);
          if (b.change !== "preempted" || t.now - since < s.patienceMs) {
            violations.push(`${r.key.name} broke ${b.holder}'s hold (${b.change}) at ${t.now}`);
          }
        }
        broken = [];
      }
    })(),
    { now: () => t.now },
  );

  let nextId = 1;
  const ask = (key: RequestKey, model: string, genMs: number, done: (id: number) => void) => {
    const id = nextId++;
    asked.set(id, { key, model, at: t.now, genMs });
    waiting.add(id);
    onGrant.set(id, () => done(id));
    sched.request({ id, model, key, conversation: key.name });
    // The agent's model free and idle, yet its request not served: only a lower key whose
    // patience for a turn ran out may have drained it.
    const a = sched.snapshot().models.find((m) => m.id === model)!;
    if (key === AGENT && waiting.has(id) && a.state === "ready" && a.inflight === 0) {
      const due = [...waiting].some((w) => {
        const r = asked.get(w)!;
        if (r.key === AGENT) return false;
        return t.now - Math.max(r.at, lastGrant.get(r.key.name) ?? 0) >= s.patienceMs;
      });
      if (!due) violations.push(`agent kept from idle ${model} at ${t.now}`);
    }
  };
  let round = 0;
  const agentRound = () => {
    agentInGap = false;
    ask(AGENT, "a", s.agent.genMs, (id) => {
      const last = round >= s.agent.gaps.length;
      agentInGap = !last;
      sched.serveDone(id, { toolCalls: !last });
      if (!last) t.at(s.agent.gaps[round++]!, agentRound);
    });
  };
  t.at(1000, agentRound);
  for (const b of s.batch) {
    t.at(b.atMs, () => ask(NOTEBOOK, "b", b.genMs, (id) => sched.serveDone(id)));
  }
  for (const c of s.chat) t.at(c.atMs, () => ask(CHAT, "b", c.genMs, (id) => sched.serveDone(id)));
  t.run(Number.POSITIVE_INFINITY, () => expect(violations).toEqual([]));
  expect([...waiting]).toEqual([]);
  return violations;
}

describe("holds and patience by priority, under random agent loops and batch backlogs", () => {
  test("a lower key breaks an interactive hold, or drains its model, only past its patience for a turn; everything ends", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        play(s);
      }),
      { numRuns: 60 },
    );
  }, 60_000);
});
