import { describe, expect, test } from "bun:test";
import { EVICT_MODES, MODES, simulate } from "../../scripts/sim.ts";

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
});
