/**
 * Several GPUs in the GPU watch: per-card ceilings from `resources.gpus` or from the cards a
 * reading lists, each card's own foreign growth, and the spawn guard on the placed cards only.
 * A fake probe and fake timers; no process, no sleep.
 */
import { describe, expect, test } from "bun:test";
import { GpuWatch } from "../../src/gpu/gpu-watch.ts";
import type { CardReading, ProbeOptions, ProbeResult } from "../../src/gpu/index.ts";
import { LiveBudget } from "../../src/runtime/live-budget.ts";
import { createLogger } from "../../src/shared/log.ts";
import type { Timers } from "../../src/shared/timer.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";

/** A trusted reading of 24 GB cards: `[freeGb, foreignGb]` each. */
function cards(...each: [number, number][]): ProbeResult {
  const list: CardReading[] = each.map(([free, foreign], index) => ({
    index,
    totalGb: 24,
    usedGb: 24 - free,
    freeGb: free,
    oursGb: 24 - free - foreign,
    foreignGb: foreign,
    ourPids: [],
  }));
  const sum = (f: (c: CardReading) => number) => list.reduce((s, c) => s + f(c), 0);
  return {
    ok: true,
    reading: {
      gpus: list.map((c) => ({
        index: c.index,
        uuid: `GPU-${c.index}`,
        name: "card",
        totalMib: 24 * 1024,
        usedMib: c.usedGb * 1024,
        freeMib: c.freeGb * 1024,
      })),
      apps: [],
      totalGb: sum((c) => c.totalGb),
      usedGb: sum((c) => c.usedGb),
      freeGb: sum((c) => c.freeGb),
      oursGb: sum((c) => c.oursGb),
      foreignGb: sum((c) => c.foreignGb),
      ourPidsOnGpu: [],
      cards: list,
    },
  };
}

function setup(resources: string) {
  const cfg = config(
    `[resources]\noom_guard_reserve_gb = 1\n${resources}\n[models.x]\ncmd = "x"\n`,
  );
  const clock = new FakeClock(1000);
  const timers: Timers = {
    now: () => clock.now(),
    set: (fn, ms) => {
      clock.advance(ms);
      queueMicrotask(fn);
      return 0;
    },
    clear: () => {},
  };
  const budget = new LiveBudget(cfg.resources);
  let next: ProbeResult = { ok: false, reason: "no reading yet" };
  const watch = new GpuWatch({
    resources: cfg.resources,
    budget,
    log: createLogger("error", () => {}),
    timers,
    probe: async (_o: ProbeOptions) => next,
    processes: () => [],
    inTransition: () => false,
    shed: () => {},
  });
  return {
    budget,
    watch,
    read: async (r: ProbeResult) => {
      next = r;
      await watch.sample();
    },
  };
}

const limits = (b: LiveBudget) => b.cardLimits().map((c) => [c.index, c.budgetGb, c.ceilingGb]);

describe("cards in the GPU watch", () => {
  test("one card listed and no resources.gpus: one budget for the box, as before", async () => {
    const t = setup("vram_budget_gb = 20");
    await t.read(cards([24, 0]));
    expect(t.budget.cards()).toEqual([]);
    expect(t.budget.vramGb()).toBe(19);
  });

  test("two cards detected: each its memory, scaled to vram_budget_gb; its own growth, its own reserve", async () => {
    const t = setup("vram_budget_gb = 24");
    // The idle baselines: 0 on card 0, 2 GB on card 1.
    await t.read(cards([24, 0], [22, 2]));
    expect(limits(t.budget)).toEqual([
      [0, 12, 11],
      [1, 12, 11],
    ]);
    // Another program takes 4 GB on card 0 only.
    await t.read(cards([20, 4], [22, 2]));
    expect(limits(t.budget)).toEqual([
      [0, 12, 7],
      [1, 12, 11],
    ]);
    expect(t.budget.vramGb()).toBe(18);
    expect(t.budget.note).toContain("GPU 0 7 of 12 GB");
  });

  test("resources.gpus: the configured budgets; an untrusted reading leaves them verbatim", async () => {
    const t = setup("gpus = [{index = 0, vram_budget_gb = 16}, {index = 1, vram_budget_gb = 8}]");
    expect(limits(t.budget)).toEqual([
      [0, 16, 16],
      [1, 8, 8],
    ]);
    await t.read(cards([24, 0], [24, 0]));
    expect(limits(t.budget)).toEqual([
      [0, 16, 15],
      [1, 8, 7],
    ]);
    await t.read({ ok: false, reason: "nvidia-smi not found: static budget applies" });
    expect(limits(t.budget)).toEqual([
      [0, 16, 16],
      [1, 8, 8],
    ]);
    expect(t.budget.vramGb()).toBe(24);
  });

  test("the spawn guard counts only the free memory of the cards the model is placed on", async () => {
    const t = setup("gpus = [{index = 0, vram_budget_gb = 24}, {index = 1, vram_budget_gb = 24}]");
    await t.read(cards([4, 0], [20, 0]));
    const onFull = await t.watch.guard("x", 8, { gpus: [0] });
    expect(onFull).toMatchObject({ ok: false, message: expect.stringContaining("on GPU 0") });
    expect(await t.watch.guard("x", 8, { gpus: [1] })).toEqual({ ok: true });
  });
});
