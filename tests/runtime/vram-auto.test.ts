/**
 * `vram_budget_gb = "auto"` where memory is not unified (Linux, an Intel Mac): the GPU probe's
 * total is the budget once there is a reading, the live ceiling applies under it as under a
 * number, and without a reading there is no budget. A reload between a number and "auto" is
 * a change.
 */
import { describe, expect, test } from "bun:test";
import { budgetInForce, GpuWatch } from "../../src/gpu/gpu-watch.ts";
import type { ProbeResult } from "../../src/gpu/index.ts";
import { LiveBudget } from "../../src/runtime/live-budget.ts";
import { diffConfig } from "../../src/runtime/reload-diff.ts";
import { createLogger } from "../../src/shared/log.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";

/** One 80 GB card, `foreignGb` of it other programs'. */
function card(foreignGb: number): ProbeResult {
  const usedMib = foreignGb * 1024;
  return {
    ok: true,
    reading: {
      gpus: [
        {
          index: 0,
          uuid: "GPU-0",
          name: "H100",
          totalMib: 81920,
          usedMib,
          freeMib: 81920 - usedMib,
        },
      ],
      apps: [],
      totalGb: 80,
      usedGb: foreignGb,
      freeGb: 80 - foreignGb,
      oursGb: 0,
      foreignGb,
      ourPidsOnGpu: [],
    },
  };
}

const AUTO = `[resources]\nvram_budget_gb = "auto"\noom_guard_reserve_gb = 1\n`;
const noUnified = { unifiedGpuBudget: () => null };

function watch(toml: string, probe: () => ProbeResult) {
  const cfg = config(toml, noUnified);
  const budget = new LiveBudget(cfg.resources);
  const w = new GpuWatch({
    resources: cfg.resources,
    budget,
    log: createLogger("error", () => {}),
    timers: new FakeTimers(),
    probe: async () => probe(),
    processes: () => [],
    inTransition: () => false,
    shed: () => {},
  });
  return { w, budget };
}

describe('vram_budget_gb = "auto" without unified memory', () => {
  test("the GPUs' total once read; the live ceiling under it (growth of others, the reserve)", async () => {
    let foreign = 2;
    const { w, budget } = watch(AUTO, () => card(foreign));
    expect(budget.vramGb()).toBe(0); // nothing read yet: no budget
    await w.sample(); // idle: 2 GB of others' is the baseline
    expect(budget.vramGb()).toBe(79);
    expect(budget.note).toContain('(vram_budget_gb = "auto": the GPUs\' 80 GB)');
    foreign = 10;
    await w.sample();
    expect(budget.vramGb()).toBe(71);
  });

  test("no reading: no budget, as with 0", async () => {
    const { w, budget } = watch(AUTO, () => ({ ok: false, reason: "nvidia-smi not found" }));
    await w.sample();
    expect(budget.vramGb()).toBe(0);
  });

  test("a number, or an auto the loader resolved (Apple Silicon), is the budget as written", () => {
    const reading = card(0);
    expect(budgetInForce(config("[resources]\nvram_budget_gb = 24\n").resources, reading)).toBe(24);
    const mac = config(AUTO, {
      unifiedGpuBudget: () => ({
        bytes: 48 * 1024 ** 3,
        ramBytes: 64 * 1024 ** 3,
        source: "default",
      }),
    });
    expect(budgetInForce(mac.resources, reading)).toBe(48);
    expect(budgetInForce(config(AUTO, noUnified).resources, reading)).toBe(80);
    expect(budgetInForce(config("").resources, reading)).toBe(0);
  });

  test("a reload from 0 to auto is a change, applied live; auto to auto is none", () => {
    const zero = config("[resources]\nvram_budget_gb = 0\n", noUnified);
    const auto = config(AUTO.replace("oom_guard_reserve_gb = 1\n", ""), noUnified);
    expect(diffConfig(zero, auto).applied).toEqual(["resources.vram_budget_gb"]);
    expect(
      diffConfig(auto, config(AUTO.replace("oom_guard_reserve_gb = 1\n", ""), noUnified)).applied,
    ).toEqual([]);
  });
});
