import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DEFAULTS,
  EVICT_MODES,
  EVICTION_DEFAULTS,
  MODES,
  paramsFrom,
  simulate,
} from "../../scripts/sim.ts";
import { grid } from "../../scripts/sim-grid.ts";
import { KEYS_DEFAULTS, simulateKeys } from "../../scripts/sim-keys.ts";
import { oneShotRows } from "../../scripts/sim-one-shot.ts";

describe("agent-loop simulation (fake clock, deterministic)", () => {
  const [request, toolCalls, off, cost] = MODES.map((m) => simulate(m));

  test('hold_policy = "cost" takes no more swaps than the fixed hold on the reference loops, and ends no later', () => {
    expect(cost!.swaps).toBeLessThanOrEqual(toolCalls!.swaps);
    expect(cost!.swaps).toBe(2);
    expect(cost!.makespanMs).toBeLessThanOrEqual(toolCalls!.makespanMs);
  });

  test("holds cut swaps at least 5× and shorten the makespan", () => {
    for (const held of [request!, toolCalls!]) {
      expect(held.swaps * 5).toBeLessThanOrEqual(off!.swaps);
      expect(held.makespanMs).toBeLessThan(off!.makespanMs);
    }
  });

  test('hold_on = "tool_calls" releases the GPU when a loop ends, sooner than "request"', () => {
    expect(toolCalls!.makespanMs).toBeLessThan(request!.makespanMs);
  });

  test("without holds, the loops trade the GPU every round", () => {
    expect(off!.swaps).toBe(40);
  });

  test('evict = "sleep": the same swaps, each a sleep and a wake instead of a stop and a cold load', () => {
    const [stop, sleep] = EVICT_MODES.map((m) => simulate(m));
    expect(sleep!.swaps).toBe(stop!.swaps);
    expect(sleep!.makespanMs).toBeLessThan(stop!.makespanMs);
  });

  test("keep_kv: each turn after a swap back processes only what is new, so the loops end sooner than cold", () => {
    const [stop, , keep] = EVICT_MODES.map((m) => simulate(m, EVICTION_DEFAULTS));
    expect(keep!.swaps).toBe(stop!.swaps);
    expect(keep!.makespanMs).toBeLessThan(stop!.makespanMs);
    // With nothing to restore it costs only its save and restore.
    const [plain, , noCache] = EVICT_MODES.map((m) =>
      simulate(m, { ...EVICTION_DEFAULTS, prefillMs: 0, restoredPrefillMs: 0 }),
    );
    expect(noCache!.makespanMs).toBeGreaterThan(plain!.makespanMs);
  });

  test("times come from flags, and the prefill pair from keep-kv.ts's JSON line", () => {
    const dir = mkdtempSync(join(tmpdir(), "qm-sim-"));
    const file = join(dir, "kv.json");
    writeFileSync(
      file,
      'noise\n{"keep_kv_off":{"prompt_ms":4000},"keep_kv_on":{"prompt_ms":100}}\n',
    );
    const p = paramsFrom(["--load-ms", "30000", "--from", file], DEFAULTS);
    expect(p).toMatchObject({ loadMs: 30000, prefillMs: 4000, restoredPrefillMs: 100 });
    expect(() => paramsFrom(["--load-ms", "-1"], DEFAULTS)).toThrow(/bad value/);
    expect(() => paramsFrom(["--nope", "1"], DEFAULTS)).toThrow(/unknown flag/);
  });
});

describe("one-shot clients and the evidence of a loop (sim-one-shot.ts)", () => {
  const rows = oneShotRows();
  const pick = (scenario: string, rule: string) =>
    rows.find((r) => r.scenario.startsWith(scenario) && r.rule.startsWith(rule))!;

  test("agent loops keep their swaps and their time when requests say what they carry", () => {
    const before = pick("the reference agent loops", "cost, before");
    const now = pick("the reference agent loops", "cost, evidence");
    expect(now).toEqual({ ...before, rule: now.rule });
    expect(now.swaps).toBe(2);
    const mixedBefore = pick("bind_tools calls + an agent loop", "cost, before");
    const mixedNow = pick("bind_tools calls + an agent loop", "cost, evidence");
    expect(mixedNow.swaps).toBeLessThanOrEqual(mixedBefore.swaps);
  });

  test("tool calls never run stop holding the GPU after the first answers, and the other client waits no longer", () => {
    for (const scenario of [
      "bind_tools calls (langchain) + a chat",
      "bind_tools calls + an agent",
    ]) {
      const before = pick(scenario, "cost, before");
      const now = pick(scenario, "cost, evidence");
      // Without the evidence each of the 20 answers is held; with it, only those answered
      // before any fate was known.
      expect({ scenario, before: before.firstHolds, now: now.firstHolds <= 2 }).toEqual({
        scenario,
        before: 20,
        now: true,
      });
      expect(now.otherMeanMs).toBeLessThanOrEqual(before.otherMeanMs);
      expect(now.otherMaxMs).toBeLessThanOrEqual(before.otherMaxMs);
    }
    // Beside an agent loop, calls that are never run no longer count as loops away: the
    // loop's first hold stands, with fewer swaps, and the loop waits less.
    const before = pick("bind_tools calls + an agent", "cost, before");
    const now = pick("bind_tools calls + an agent", "cost, evidence");
    expect(now.swaps).toBeLessThan(before.swaps);
    expect(now.otherMeanMs).toBeLessThan(before.otherMeanMs);
  });
});

describe("the hold policies' grid (sim-grid.ts)", () => {
  const cells = grid();

  test("every cell of loads × gaps × agents × eviction mode is run for the four policies", () => {
    expect(cells).toHaveLength(4 * 4 * 2 * 2);
    for (const c of cells) {
      expect(c.results.map((r) => r.policy)).toEqual(["cost", "fixed", "off", "forever"]);
    }
  });

  test('"cost" meets both targets in at least 50 of the 64 cells, and is never 1.15× slower than the best', () => {
    // Where it misses, the two targets mostly conflict (no other policy meets both either);
    // the README's table shows each cell.
    expect(cells.filter((c) => c.ok).length).toBeGreaterThanOrEqual(50);
    const worst = Math.max(...cells.map((c) => c.makespanRatio));
    expect(worst).toBeLessThanOrEqual(1.15);
  });

  test("where holds pay (loads far dearer than gaps), cost swaps no more than holding the whole loop", () => {
    // Before any gap is measured, the first hold lasts until its gap has run long enough to
    // cost more than the swap (design.md, "The first round"): a short gap is learned first.
    for (const c of cells.filter((c) => c.loadMs >= 50 * c.gapMs)) {
      const [cost, , , forever] = c.results;
      const cell = [c.swapBack, c.agents, c.loadMs, c.gapMs];
      expect({ cell, ok: cost!.swaps <= forever!.swaps }).toEqual({ cell, ok: true });
    }
  });
});

describe("keys sharing one GPU (sim-keys.ts): an agent loop, a batch flood, a chat user", () => {
  const [on, off] = [simulateKeys(true), simulateKeys(false)];
  const key = (r: typeof on, name: string) => r.keys.find((k) => k.key === name)!;

  test("fair share on: the interactive key's p95 wait is at most 2 s plus one model load", () => {
    expect(key(on, "agent").p95WaitMs).toBeLessThanOrEqual(2000 + KEYS_DEFAULTS.loadMs);
    // Without fair share the same loop waits behind the batch flood.
    expect(key(off, "agent").p95WaitMs).toBeGreaterThan(2000 + KEYS_DEFAULTS.loadMs);
  });

  test("the batch key still completes: every one of its requests is served", () => {
    // simulateKeys throws should any request never finish.
    expect(key(on, "notebook").requests).toBe(KEYS_DEFAULTS.batchRequests);
    // And it is done before everything is without fair share.
    expect(key(on, "notebook").doneMs).toBeLessThan(off.makespanMs);
  });

  test("fair share takes no more swaps than first come, first served, plus 10 %", () => {
    expect(on.swaps).toBeLessThanOrEqual(off.swaps * 1.1);
  });
});
