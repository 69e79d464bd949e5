import { describe, expect, test } from "bun:test";
import { effectiveBudgetGb, ForeignBaseline, liveCeiling } from "../../src/gpu/ceiling.ts";
import type { GpuReading, ProbeResult } from "../../src/gpu/types.ts";

describe("liveCeiling = budget − max(0, foreign − baseline) − reserve, ≥ 0", () => {
  test.each([
    // budget, foreign, baseline, reserve → ceiling
    [24, 1.5, 1.5, 1, 23], // only the usual desktop: budget less the reserve
    [24, 0.5, 1.5, 1, 23], // foreign below baseline never raises the budget
    [24, 9.5, 1.5, 1, 15], // a game took 8 GB
    [24, 30, 1.5, 1, 0], // never below 0
    [24, 3, 0, 0, 21],
  ])("budget %d, foreign %d, baseline %d, reserve %d → %d", (budgetGb, foreignGb, baselineGb, reserveGb, want) => {
    expect(liveCeiling({ budgetGb, foreignGb, baselineGb, reserveGb })).toBe(want);
  });
});

describe("effectiveBudgetGb", () => {
  const reading = (foreignGb: number): ProbeResult => ({
    ok: true,
    reading: { foreignGb } as GpuReading,
  });

  test("no budget, or no trusted reading: the static budget stands", () => {
    expect(effectiveBudgetGb(0, 1, reading(10), 0)).toBe(0);
    expect(effectiveBudgetGb(24, 1, { ok: false, reason: "nvidia-smi not found" }, 1)).toBe(24);
  });

  test("a trusted reading tightens; an unlearned baseline counts as 0", () => {
    expect(effectiveBudgetGb(24, 1, reading(9.5), 1.5)).toBe(15);
    expect(effectiveBudgetGb(24, 1, reading(1.5), null)).toBe(21.5);
  });
});

describe("ForeignBaseline", () => {
  test("unknown until the first idle reading", () => {
    const b = new ForeignBaseline();
    b.observe(3, false);
    expect(b.gb).toBeNull();
    b.observe(1.2, true);
    expect(b.gb).toBe(1.2);
  });

  test("within an idle stretch: the minimum seen (a model still unloading only raises one reading)", () => {
    const b = new ForeignBaseline();
    for (const f of [5.0, 1.4, 1.1, 1.3]) b.observe(f, true);
    expect(b.gb).toBe(1.1);
  });

  test("busy readings never change it", () => {
    const b = new ForeignBaseline();
    b.observe(1.1, true);
    for (const f of [0.2, 7, 0]) b.observe(f, false);
    expect(b.gb).toBe(1.1);
  });

  test("the next idle stretch re-learns from scratch (a baseline that grew for good)", () => {
    const b = new ForeignBaseline();
    b.observe(1.1, true);
    b.observe(4, false);
    b.observe(2.5, true); // a browser now holds 1.4 GB more, for good
    expect(b.gb).toBe(2.5);
    b.observe(2.2, true);
    expect(b.gb).toBe(2.2);
    b.observe(3, true);
    expect(b.gb).toBe(2.2);
  });

  test("ignores nonsense", () => {
    const b = new ForeignBaseline();
    b.observe(Number.NaN, true);
    b.observe(-1, true);
    expect(b.gb).toBeNull();
  });
});
