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

describe("agent-loop simulation (fake clock, deterministic)", () => {
  const [request, toolCalls, off] = MODES.map((m) => simulate(m));

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
