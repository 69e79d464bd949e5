import { describe, expect, test } from "bun:test";
import type { KeyPriority } from "../../src/config/types.ts";
import { GroupPolicy } from "../../src/policy/group.ts";
import type { RequestKey } from "../../src/scheduler/types.ts";
import { config } from "../support/config.ts";
import { harness, modelsToml } from "../support/harness.ts";

const key = (name: string, priority: KeyPriority, maxConcurrency = 0): RequestKey => ({
  name,
  priority,
  maxConcurrency,
});
const notebook = key("notebook", "batch");
const agent = key("agent", "interactive");
const chat = key("chat", "normal");

/** `[scheduler]` lines, then models `a` and `b` (one swap group), `a` at concurrency_limit = 1. */
function keyed(scheduler = "", models = "[models.a]\nconcurrency_limit = 1\n") {
  const toml =
    `[scheduler]\n${scheduler.includes("patience_ms") ? "" : "patience_ms = 300000\n"}${scheduler}\n` +
    models.replace(
      /\[models\.(\w+)\]\n/g,
      '[models.$1]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\n',
    ) +
    (models.includes("[models.b]") ? "" : modelsToml("b"));
  const h = harness(toml);
  let next = 1000;
  const ask = (model: string, k?: RequestKey, extra: object = {}) => {
    const id = next++;
    h.sched.request({ id, model, ...(k ? { key: k } : {}), ...extra });
    return id;
  };
  /** Whose request each grant went to, in order. */
  const whose = new Map<number, string>();
  const grantsTo = () => h.fx.granted.map((id) => whose.get(id) ?? "?");
  const askAs = (model: string, k: RequestKey, extra: object = {}) => {
    const id = ask(model, k, extra);
    whose.set(id, k.name);
    return id;
  };
  return { ...h, ask, askAs, grantsTo };
}

describe("within one model: weighted fair queuing between keys", () => {
  test("B1: with concurrency_limit = 1 and 40 batch requests queued, an interactive request reaches the model after at most one more batch request (the running one does not count)", () => {
    const h = keyed();
    const batch = Array.from({ length: 41 }, () => h.askAs("a", notebook));
    h.finishSwap();
    expect(h.fx.granted).toEqual([batch[0]!]); // one running, 40 queued
    const mine = h.askAs("a", agent);
    let batchBefore = 0;
    let running = batch[0]!;
    while (!h.fx.granted.includes(mine)) {
      h.sched.serveDone(running);
      running = h.fx.granted.at(-1)!;
      if (running !== mine) batchBefore++;
    }
    expect(batchBefore).toBeLessThanOrEqual(1);
    expect(batchBefore).toBe(0);
    // FIFO within a key: the batch requests go in the order they came.
    h.sched.serveDone(mine);
    const batchGrants = h.fx.granted.filter((id) => batch.includes(id));
    expect(batchGrants).toEqual([...batchGrants].sort((x, y) => x - y));
  });

  test("two keys with backlogs share the model by weight, 4 : 1, each in its own order", () => {
    const h = keyed();
    const first = h.askAs("a", notebook); // runs
    h.finishSwap();
    for (let i = 0; i < 20; i++) h.askAs("a", notebook);
    for (let i = 0; i < 20; i++) h.askAs("a", agent);
    let running = first;
    for (let i = 0; i < 15; i++) {
      h.sched.serveDone(running);
      running = h.fx.granted.at(-1)!;
    }
    const next15 = h.grantsTo().slice(1, 16);
    expect(next15.filter((k) => k === "agent")).toHaveLength(12);
    expect(next15.filter((k) => k === "notebook")).toHaveLength(3);
  });

  test("the positions announced are the fair order: a newcomer of a heavier key goes first", () => {
    const h = keyed();
    h.askAs("a", notebook);
    h.finishSwap();
    const queued = [h.askAs("a", notebook), h.askAs("a", notebook)];
    const mine = h.askAs("a", chat);
    expect(h.fx.positions.get(mine)).toEqual([1]);
    expect(h.fx.positions.get(queued[0]!)).toEqual([1, 2]);
    expect(h.fx.positions.get(queued[1]!)).toEqual([2, 3]);
  });

  test("fair_share.enabled = false: first come, first served, whatever the keys", () => {
    const h = keyed("[scheduler.fair_share]\nenabled = false");
    const first = h.askAs("a", notebook);
    h.finishSwap();
    for (let i = 0; i < 5; i++) h.askAs("a", notebook);
    h.askAs("a", agent);
    let running = first;
    for (let i = 0; i < 6; i++) {
      h.sched.serveDone(running);
      running = h.fx.granted.at(-1)!;
    }
    expect(h.grantsTo()).toEqual([...Array(6).fill("notebook"), "agent"]);
  });

  test("the weights come from [scheduler.fair_share]", () => {
    const h = keyed("[scheduler.fair_share]\ninteractive = 1\nbatch = 1");
    const first = h.askAs("a", notebook);
    h.finishSwap();
    for (let i = 0; i < 6; i++) h.askAs("a", notebook);
    for (let i = 0; i < 6; i++) h.askAs("a", agent);
    let running = first;
    for (let i = 0; i < 6; i++) {
      h.sched.serveDone(running);
      running = h.fx.granted.at(-1)!;
    }
    // Equal weights: they take turns.
    expect(h.grantsTo().slice(1)).toEqual([
      "notebook",
      "agent",
      "notebook",
      "agent",
      "notebook",
      "agent",
    ]);
  });
});

describe("a key's max_concurrency", () => {
  test("over its cap a request waits (never refused) while other keys go on", () => {
    const h = keyed("", "[models.a]\nconcurrency_limit = 4\n");
    const capped = key("ci", "normal", 2);
    const ids = [h.askAs("a", capped), h.askAs("a", capped), h.askAs("a", capped)];
    h.finishSwap();
    expect(h.fx.granted).toEqual(ids.slice(0, 2));
    const other = h.askAs("a", chat);
    expect(h.fx.granted).toEqual([...ids.slice(0, 2), other]);
    expect(h.fx.failed.size).toBe(0);
    h.sched.serveDone(ids[0]!);
    expect(h.fx.granted.at(-1)).toBe(ids[2]!);
  });

  test("a capped request starts no swap: it waits for its own key's work first", () => {
    const h = keyed();
    const capped = key("ci", "normal", 1);
    const r1 = h.askAs("a", capped);
    h.finishSwap();
    h.askAs("b", capped);
    expect(h.fx.swaps).toHaveLength(1); // a's only
    h.sched.serveDone(r1);
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
  });
});

describe("across models: shares weighed when a swap is needed", () => {
  test("an interactive turn on b drains a batch backlog on a: no new batch grant, then the swap", () => {
    const h = keyed();
    const running = h.askAs("a", notebook);
    h.finishSwap();
    for (let i = 0; i < 10; i++) h.askAs("a", notebook);
    const mine = h.askAs("b", agent);
    h.sched.serveDone(running);
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    h.finishSwap();
    expect(h.fx.granted).toEqual([running, mine]);
  });

  test("fair share off, the same turn waits for the backlog until its patience", () => {
    const h = keyed("[scheduler.fair_share]\nenabled = false");
    let running = h.askAs("a", notebook);
    h.finishSwap();
    for (let i = 0; i < 10; i++) h.askAs("a", notebook);
    h.askAs("b", agent);
    h.sched.serveDone(running);
    expect(h.fx.swaps).toHaveLength(1);
    running = h.fx.granted.at(-1)!;
    expect(h.grantsTo()).toEqual(["notebook", "notebook"]);
  });

  test("between two keys of one priority: one more grant of the backlog, then the drain", () => {
    const h = keyed();
    const other = key("other", "batch");
    const first = h.askAs("a", notebook);
    h.finishSwap();
    for (let i = 0; i < 10; i++) h.askAs("a", notebook);
    const mine = h.askAs("b", other);
    h.sched.serveDone(first);
    expect(h.grantsTo()).toEqual(["notebook", "notebook"]); // level: the backlog goes once more
    h.sched.serveDone(h.fx.granted.at(-1)!);
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    h.finishSwap();
    expect(h.fx.granted.at(-1)).toBe(mine);
  });

  test("a batch waiter never drains a model an interactive key is working on", () => {
    const h = keyed();
    const mine = h.askAs("a", agent);
    h.finishSwap();
    h.askAs("b", notebook);
    const again = h.askAs("a", agent);
    expect(h.fx.granted).toEqual([mine]);
    h.sched.serveDone(mine);
    expect(h.fx.granted).toEqual([mine, again]); // a took the agent's next request
  });
});

describe("holds and priority", () => {
  /** The agent's loop on `a` earned a hold; a notebook's backlog waits for `b`. */
  function agentHolds(scheduler = "", waiters = 20) {
    const h = keyed(scheduler, "[models.a]\n[models.b]\n");
    const round = h.askAs("a", agent, { conversation: "loop" });
    h.finishSwap();
    h.sched.serveDone(round, { toolCalls: true });
    const batch = Array.from({ length: waiters }, () => h.askAs("b", notebook));
    return { h, batch };
  }

  test("a batch backlog never breaks an interactive key's hold by cost (fair share off: it does)", () => {
    const off = agentHolds("[scheduler.fair_share]\nenabled = false");
    // The loop's gap was never measured: the backlog waits until it has lasted long enough to
    // cost more than the swap (design.md, "The first round"), and the wake is armed for that.
    expect(off.h.fx.swaps).toHaveLength(1);
    const review = off.h.fx.wake! - off.h.clock.now();
    expect(review).toBeGreaterThan(0);
    off.h.clock.advance(review);
    off.h.sched.wake();
    expect(off.h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    expect(off.h.fx.holdWhys.at(-1)).toMatch(/dropped .* cost/);
    // Fair share on: the same wait, and the hold still stands.
    const on = agentHolds();
    on.h.clock.advance(review);
    on.h.sched.wake();
    expect(on.h.fx.swaps).toHaveLength(1);
    expect(on.h.sched.snapshot().models.find((m) => m.id === "a")?.heldFor).toBe("agent");
  });

  test("the interactive loop's next round finds its model; the backlog waits out the hold", () => {
    const { h, batch } = agentHolds();
    h.clock.advance(3000);
    const next = h.askAs("a", agent, { conversation: "loop" });
    expect(h.fx.granted.at(-1)).toBe(next);
    h.sched.serveDone(next, { toolCalls: false }); // the loop ends: its hold with it
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
    h.finishSwap();
    expect(h.fx.granted).toContain(batch[0]!);
  });

  test("past patience since its key was last served, a batch waiter preempts; the wake is armed for it", () => {
    const { h } = agentHolds('patience_ms = 20000\nhold_policy = "fixed"\nhold_ms = 60000');
    expect(h.fx.wake).toBe(h.clock.now() + 20_000);
    h.clock.advance(20_000);
    h.sched.wake();
    expect(h.fx.holds.at(-1)).toMatch(/^a:preempted/);
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
  });

  test("a batch waiter's patience counts from its key's last grant on its model, not its arrival", () => {
    const h = keyed(
      'patience_ms = 20000\nhold_policy = "fixed"\nhold_ms = 60000',
      "[models.a]\n[models.b]\nconcurrency_limit = 1\n",
    );
    const start = h.clock.now();
    const batch = [h.askAs("b", notebook), h.askAs("b", notebook), h.askAs("b", notebook)];
    h.finishSwap();
    h.clock.advance(10_000);
    h.sched.serveDone(batch[0]!); // the second is granted at start + 10 s
    h.clock.advance(2_000);
    const round = h.askAs("a", agent); // drains b for the agent
    h.clock.advance(8_000);
    h.sched.serveDone(batch[1]!);
    h.finishSwap();
    h.sched.serveDone(round, { toolCalls: true }); // held until start + 80 s
    expect(h.fx.lastSwap().target).toBe("a");
    // Past its own patience (arrived at start), not past its key's turn (start + 10 s + 20 s).
    expect(h.fx.wake).toBe(start + 30_000);
    h.clock.set(start + 25_000);
    h.sched.wake();
    expect(h.fx.lastSwap().target).toBe("a");
    h.clock.set(start + 30_000);
    h.sched.wake();
    expect(h.fx.holds.at(-1)).toMatch(/^a:preempted/);
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
  });

  test("past its own patience but not its key's, a batch waiter does not drain the interactive key's model", () => {
    const h = keyed(
      "patience_ms = 20000\nhold_ms = 0",
      "[models.a]\nconcurrency_limit = 2\n[models.b]\nconcurrency_limit = 1\n",
    );
    const start = h.clock.now();
    const batch = [h.askAs("b", notebook), h.askAs("b", notebook), h.askAs("b", notebook)];
    h.finishSwap();
    h.clock.set(start + 10_000);
    h.sched.serveDone(batch[0]!); // the notebook's turn on b: start + 10 s
    h.clock.set(start + 12_000);
    const r1 = h.askAs("a", agent); // drains b
    h.clock.set(start + 20_000);
    h.sched.serveDone(batch[1]!);
    h.finishSwap();
    h.askAs("a", agent);
    // batch[2]: 26 s since it came, 16 s since its key's turn: a keeps taking the agent's work.
    h.clock.set(start + 26_000);
    h.sched.serveDone(r1);
    h.clock.set(start + 27_000);
    const r3 = h.askAs("a", agent);
    expect(h.fx.granted.at(-1)).toBe(r3);
    // Past its key's patience too, it drains a: the agent's next request waits.
    h.clock.set(start + 30_000);
    h.sched.serveDone(r3);
    const r4 = h.askAs("a", agent);
    expect(h.fx.granted).not.toContain(r4);
  });

  test("a higher-priority waiter breaks a lower key's hold at once (dropped, reason priority)", () => {
    const h = keyed('hold_policy = "fixed"\nhold_ms = 60000', "[models.a]\n[models.b]\n");
    const r = h.askAs("a", notebook);
    h.finishSwap();
    h.sched.serveDone(r, { toolCalls: true });
    h.askAs("b", agent);
    expect(h.fx.holds.at(-1)).toMatch(/^a:dropped/);
    expect(h.fx.holdWhys.at(-1)).toMatch(/priority$/);
    expect(h.fx.lastSwap()).toMatchObject({ target: "b", evict: ["a"] });
  });

  test("the snapshot says who waits for what, per key", () => {
    const { h } = agentHolds("", 3);
    h.askAs("b", chat);
    const b = h.sched.snapshot().models.find((m) => m.id === "b")!;
    expect(b.queuedKeys).toEqual({ notebook: 3, chat: 1 });
    const keys = h.sched.snapshot().keys.map((k) => [k.name, k.priority, k.waiting]);
    expect(keys).toContainEqual(["notebook", "batch", 3]);
  });
});

describe("a reload", () => {
  test("fair share turned off by a reload applies from that event on", () => {
    const toml = `[scheduler]\n[models.a]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nconcurrency_limit = 1\n`;
    const h = harness(toml);
    h.sched.request({ id: 1, model: "a", key: notebook });
    h.finishSwap();
    for (let id = 2; id <= 4; id++) h.sched.request({ id, model: "a", key: notebook });
    h.sched.request({ id: 5, model: "a", key: agent });
    const off = config(toml.replace("[scheduler]", "[scheduler.fair_share]\nenabled = false"));
    h.sched.reconfigure({ config: off, policy: new GroupPolicy(off), retire: [] });
    for (let id = 1; id <= 4; id++) h.sched.serveDone(id);
    expect(h.fx.granted).toEqual([1, 2, 3, 4, 5]);
  });
});
