import { describe, expect, test } from "bun:test";
import type { Eviction } from "../../src/policy/types.ts";
import { type DecideView, type Decision, decide } from "../../src/scheduler/decide.ts";
import type { HoldVerdict } from "../../src/scheduler/hold-cost.ts";
import type { ModelState } from "../../src/scheduler/types.ts";

interface Model {
  state?: ModelState;
  inflight?: number;
  unloadPending?: boolean;
  draining?: boolean;
  /** Below its concurrency limit (default true). */
  slot?: boolean;
}

/** One row: the state the tree sees for target "t", and what it must decide. */
interface Case {
  name: string;
  models?: Record<string, Model>;
  patienceSpent?: boolean;
  /** The swap bringing "t" in, if any. */
  swap?: { abortedFor: string | null };
  stopping?: string[];
  inTransition?: string[];
  held?: string[];
  /** `DecideView.holdVerdict`'s answer (`hold_policy = "cost"`); absent: null ("fixed"). */
  verdict?: HoldVerdict;
  /** The policy's answer; absent = the tree must not ask. */
  plan?: Eviction;
  /** `DecideView.ramSleeper`'s answer (null when absent). */
  sleeper?: string | null;
  want: Decision;
}

const idle = (state: ModelState = "ready"): Model => ({ state });
const busy: Model = { state: "ready", inflight: 1 };

const CASES: Case[] = [
  // 2. being swapped in
  {
    name: "a swap bringing it in → join",
    models: { t: idle("starting") },
    swap: { abortedFor: null },
    want: { kind: "join" },
  },
  {
    name: "a swap bringing it in is being aborted → wait for it, then start afresh",
    models: { t: idle("starting") },
    swap: { abortedFor: "unload" },
    want: { kind: "queue", why: "aborting" },
  },
  // 3. ready
  { name: "ready with a free slot → grant", models: { t: idle() }, want: { kind: "grant" } },
  {
    name: "ready at its concurrency limit → queue (never 429)",
    models: { t: { ...busy, slot: false } },
    want: { kind: "queue", why: "full" },
  },
  {
    name: "ready with an unload pending → queue",
    models: { t: { ...busy, unloadPending: true } },
    want: { kind: "queue", why: "unavailable" },
  },
  {
    name: "ready but draining for an impatient waiter → queue",
    models: { t: { ...busy, draining: true } },
    want: { kind: "queue", why: "unavailable" },
  },
  {
    name: "ready but being stopped outside a swap (TTL, shed) → queue",
    models: { t: idle() },
    stopping: ["t"],
    want: { kind: "queue", why: "unavailable" },
  },
  {
    name: "stopping (evicted by another swap) → queue",
    models: { t: idle("stopping") },
    want: { kind: "queue", why: "stopping" },
  },
  // the policy
  {
    name: "the policy cannot fit it → fail cannot_fit with the policy's reason",
    models: { t: idle("stopped") },
    plan: { ok: false, reason: 'model "t" needs 30 GB' },
    want: {
      kind: "fail",
      error: expect.objectContaining({ code: "cannot_fit", message: 'model "t" needs 30 GB' }),
    },
  },
  {
    name: "short of RAM a sleeping model holds → stop that sleeper, the request waits",
    models: { t: idle("stopped") },
    plan: { ok: false, reason: "needs RAM", pool: "RAM" },
    sleeper: "s",
    want: { kind: "freeRam", sleeper: "s" },
  },
  {
    name: "short of RAM while a sleeper is already being stopped for it → queue (freeing)",
    models: { t: idle("stopped") },
    plan: { ok: false, reason: "needs RAM", pool: "RAM" },
    sleeper: "freeing",
    want: { kind: "queue", why: "freeing" },
  },
  {
    name: "short of RAM with no sleeper holding any → fail cannot_fit",
    models: { t: idle("stopped") },
    plan: { ok: false, reason: "needs RAM", pool: "RAM" },
    sleeper: null,
    want: {
      kind: "fail",
      error: expect.objectContaining({ code: "cannot_fit", message: "needs RAM" }),
    },
  },
  {
    name: "short of VRAM: sleepers hold none, so none is stopped → fail",
    models: { t: idle("stopped") },
    plan: { ok: false, reason: "needs VRAM" },
    sleeper: "s",
    want: {
      kind: "fail",
      error: expect.objectContaining({ code: "cannot_fit", message: "needs VRAM" }),
    },
  },
  {
    name: "a sleeping target goes down the tree like a stopped one → swap",
    models: { t: idle("sleeping"), a: idle() },
    plan: { ok: true, evict: ["a"] },
    want: { kind: "swap", evict: ["a"], budget: [] },
  },
  // 4. collisions
  {
    name: "it would evict a model in another swap or a stop → queue",
    models: { t: idle("stopped"), a: idle() },
    inTransition: ["a"],
    plan: { ok: true, evict: ["a"] },
    want: { kind: "queue", why: "collision" },
  },
  {
    name: "a collision is decided before busy models are looked at",
    models: { t: idle("stopped"), a: busy, b: idle() },
    inTransition: ["b"],
    plan: { ok: true, evict: ["a", "b"] },
    want: { kind: "queue", why: "collision" },
  },
  // 5. busy
  {
    name: "it would evict a busy model → queue, naming the evict set",
    models: { t: idle("stopped"), a: busy, b: idle() },
    plan: { ok: true, evict: ["a", "b"] },
    want: { kind: "queue", why: "busy", evict: ["a", "b"] },
  },
  {
    name: "patience spent does not override busy: it still waits (and marks them draining)",
    models: { t: idle("stopped"), a: busy },
    patienceSpent: true,
    plan: { ok: true, evict: ["a"] },
    want: { kind: "queue", why: "busy", evict: ["a"] },
  },
  {
    name: "busy and held → busy comes first",
    models: { t: idle("stopped"), a: busy },
    held: ["a"],
    plan: { ok: true, evict: ["a"] },
    want: { kind: "queue", why: "busy", evict: ["a"] },
  },
  // 5b. holds
  {
    name: "it would evict a held model → queue while it has patience",
    models: { t: idle("stopped"), a: idle() },
    held: ["a"],
    plan: { ok: true, evict: ["a"] },
    want: { kind: "queue", why: "held", evict: ["a"] },
  },
  {
    name: "past its patience it preempts the held model → swap",
    models: { t: idle("stopped"), a: idle() },
    held: ["a"],
    patienceSpent: true,
    plan: { ok: true, evict: ["a"] },
    want: { kind: "swap", evict: ["a"], budget: [], breaks: "patience" },
  },
  {
    name: 'hold_policy = "cost", holding is the cheaper choice → queue, with its quantum',
    models: { t: idle("stopped"), a: idle() },
    held: ["a"],
    verdict: { kind: "hold", quantumMs: 30_000, reviewMs: null },
    plan: { ok: true, evict: ["a"] },
    want: { kind: "queue", why: "held", evict: ["a"], quantumMs: 30_000, reviewMs: null },
  },
  {
    name: 'hold_policy = "cost", a hold whose gap was never measured → queue, with when to look again',
    models: { t: idle("stopped"), a: idle() },
    held: ["a"],
    verdict: { kind: "hold", quantumMs: 30_000, reviewMs: 2500 },
    plan: { ok: true, evict: ["a"] },
    want: { kind: "queue", why: "held", evict: ["a"], quantumMs: 30_000, reviewMs: 2500 },
  },
  {
    name: 'hold_policy = "cost", swapping is the cheaper choice → swap, breaking the hold',
    models: { t: idle("stopped"), a: idle() },
    held: ["a"],
    verdict: { kind: "yield", reason: "cost" },
    plan: { ok: true, evict: ["a"] },
    want: { kind: "swap", evict: ["a"], budget: [], breaks: "cost" },
  },
  {
    name: 'hold_policy = "cost", the waiter reached its fairness bound → swap',
    models: { t: idle("stopped"), a: idle() },
    held: ["a"],
    verdict: { kind: "yield", reason: "fairness" },
    plan: { ok: true, evict: ["a"] },
    want: { kind: "swap", evict: ["a"], budget: [], breaks: "fairness" },
  },
  {
    name: "patience comes before the cost verdict",
    models: { t: idle("stopped"), a: idle() },
    held: ["a"],
    patienceSpent: true,
    verdict: { kind: "hold", quantumMs: 30_000, reviewMs: null },
    plan: { ok: true, evict: ["a"] },
    want: { kind: "swap", evict: ["a"], budget: [], breaks: "patience" },
  },
  {
    name: "busy comes before the cost verdict → queue busy",
    models: { t: idle("stopped"), a: { inflight: 1 } },
    held: ["a"],
    verdict: { kind: "yield", reason: "cost" },
    plan: { ok: true, evict: ["a"] },
    want: { kind: "queue", why: "busy", evict: ["a"] },
  },
  // 6. swap
  {
    name: "stopped, room for it → swap evicting nothing",
    models: { t: idle("stopped") },
    plan: { ok: true, evict: [] },
    want: { kind: "swap", evict: [], budget: [] },
  },
  {
    name: "failed (last start failed or crashed) → swap starts it again",
    models: { t: idle("failed"), a: idle() },
    plan: { ok: true, evict: ["a"] },
    want: { kind: "swap", evict: ["a"], budget: [] },
  },
];

function viewOf(c: Case): DecideView {
  const models = c.models ?? {};
  const has = (list: string[] | undefined, id: string) => (list ?? []).includes(id);
  return {
    model: (id) => {
      const m = models[id];
      if (!m) throw new Error(`the tree asked about unknown model ${id}`);
      return {
        state: m.state ?? "stopped",
        inflight: m.inflight ?? 0,
        unloadPending: m.unloadPending ?? false,
        draining: m.draining ?? false,
      };
    },
    hasSlot: (id) => models[id]?.slot ?? true,
    swapFor: (id) => (id === "t" ? c.swap : undefined),
    stopping: (id) => has(c.stopping, id),
    inTransition: (id) => has(c.inTransition, id),
    held: (id) => has(c.held, id),
    holdVerdict: () => c.verdict ?? null,
    evictionFor: (id) => {
      if (!c.plan) throw new Error(`the tree asked the policy about ${id} before it had to`);
      return c.plan;
    },
    ramSleeper: () => c.sleeper ?? null,
  };
}

describe("decide (steps 2–6 of the decision tree)", () => {
  for (const c of CASES) {
    test(c.name, () => {
      const d = decide({ model: "t", patienceSpent: c.patienceSpent ?? false }, viewOf(c));
      expect(d).toEqual(c.want);
    });
  }
});
