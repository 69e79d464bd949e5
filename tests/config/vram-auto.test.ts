/**
 * `resources.vram_budget_gb = "auto"`: resolved when the file is loaded from the platform's
 * unified-memory figure (Apple Silicon), else left to the GPU probe's total; numbers as before.
 */
import { describe, expect, test } from "bun:test";
import type { UnifiedGpuBudget } from "../../src/platform/index.ts";
import { errors, load } from "./support.ts";

const GIB = 1024 ** 3;
const auto = `[resources]\nvram_budget_gb = "auto"\n`;
const mac = (gib: number): UnifiedGpuBudget => ({
  bytes: gib * GIB,
  ramBytes: 64 * GIB,
  source: "default",
});

describe('vram_budget_gb = "auto"', () => {
  test("on Apple Silicon: the GPU's share of unified memory, in GB to the hundredth below", () => {
    const config = load(auto, { unifiedGpuBudget: () => mac(48) });
    expect(config.resources.vramBudgetGb).toBe(48);
    expect(config.resources.vramBudgetAuto).toBe(true);
    const small = load(auto, { unifiedGpuBudget: () => mac(32 / 3) }); // 2/3 of 16 GiB
    expect(small.resources.vramBudgetGb).toBe(10.66);
  });

  test("where memory is not unified: 0 until the GPU probe reads the total", () => {
    const config = load(auto, { unifiedGpuBudget: () => null });
    expect(config.resources.vramBudgetGb).toBe(0);
    expect(config.resources.vramBudgetAuto).toBe(true);
  });

  test.if(process.platform === "linux")("on this Linux box by default: no unified figure", () => {
    expect(load(auto).resources.vramBudgetGb).toBe(0);
  });

  test("a number is kept as it was, and the platform is not asked", () => {
    let asked = 0;
    const config = load(`[resources]\nvram_budget_gb = 24\n`, {
      unifiedGpuBudget: () => {
        asked++;
        return mac(48);
      },
    });
    expect(config.resources).not.toHaveProperty("vramBudgetAuto");
    expect(config.resources.vramBudgetGb).toBe(24);
    expect(load("").resources.vramBudgetGb).toBe(0);
    expect(asked).toBe(0);
  });

  test("QM_RESOURCES__VRAM_BUDGET_GB takes auto or a number", () => {
    const env = (v: string) => ({ env: { QM_RESOURCES__VRAM_BUDGET_GB: v } });
    const a = load("", { ...env("auto"), unifiedGpuBudget: () => mac(48) });
    expect([a.resources.vramBudgetGb, a.resources.vramBudgetAuto]).toEqual([48, true]);
    expect(load("", env(" 12.5 ")).resources.vramBudgetGb).toBe(12.5);
    expect(errors("", env("lots"))).toEqual([
      'env: QM_RESOURCES__VRAM_BUDGET_GB: expected "auto" or a number, got "lots" (for resources.vram_budget_gb)',
    ]);
  });

  test("anything else in the file is refused at its line, naming both forms", () => {
    expect(errors(`[resources]\nvram_budget_gb = "big"\n`)).toEqual([
      'quartermaster.toml:2:1: resources.vram_budget_gb: expected "auto" or a number, got "big"',
    ]);
    expect(errors(`[resources]\nvram_budget_gb = -1\n`)).toHaveLength(1);
  });
});
