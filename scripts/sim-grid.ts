// The hold policies' grid (`bun run sim --grid`): agent loops through the real scheduler
// (sim.ts) for every combination of load time, tool gap, number of agents and eviction mode,
// under four policies — `hold_policy = "cost"`, `"fixed"` (hold_ms 10 s, patience 5 min), holds
// off (`hold_ms = 0`) and holding until the loop ends (then the model is unloaded). Printed per cell: makespan and p95 time
// to first token per policy, and cost's ratio to the best of the others on each. The targets:
// cost's makespan ≤ 1.05 × the best other's, its p95 TTFT ≤ 1.1 × the best other's or within
// one load time of it.
import { type Mode, percentile, type SimParams, simulate } from "./sim.ts";

export const LOADS_MS = [500, 2000, 10_000, 60_000];
export const GAPS_MS = [200, 2000, 10_000, 60_000];
export const AGENTS = [2, 4];
/** `cold`: models are stopped and loaded again; `sleep`: put to sleep and woken (a tenth of a load). */
export const SWAP_BACK = ["cold", "sleep"] as const;

/** The loop each cell runs: six rounds (the last answers in text), 1 s to generate. */
export const GRID_LOOP: Omit<SimParams, "loadMs" | "toolMs" | "agents" | "wakeMs"> = {
  rounds: 6,
  genMs: 1000,
  stopMs: 250,
  sleepMs: 250,
  prefillMs: 0,
  restoredPrefillMs: 0,
  saveMs: 0,
  restoreMs: 0,
};

const FOREVER = 2 ** 31 - 1;
export const POLICIES: Mode[] = [
  { name: "cost", scheduler: 'hold_policy = "cost"' },
  { name: "fixed", scheduler: 'hold_policy = "fixed"\nhold_ms = 10000' },
  { name: "off", scheduler: "hold_ms = 0" },
  {
    name: "forever",
    scheduler: `hold_policy = "fixed"\nhold_ms = ${FOREVER}\npatience_ms = ${FOREVER}`,
    releaseAtLoopEnd: true,
  },
];

export interface PolicyResult {
  policy: string;
  makespanMs: number;
  p95TtftMs: number;
  swaps: number;
}

export interface Cell {
  loadMs: number;
  gapMs: number;
  agents: number;
  swapBack: (typeof SWAP_BACK)[number];
  results: PolicyResult[];
  /** Cost's makespan and p95 TTFT over the best of the other policies'. */
  makespanRatio: number;
  ttftRatio: number;
  /** Both targets met. */
  ok: boolean;
  /** Another policy meets both targets itself (when none does, the two targets conflict there). */
  otherMeets: string | null;
}

export function runCell(
  loadMs: number,
  gapMs: number,
  agents: number,
  swapBack: Cell["swapBack"],
): Cell {
  const p: SimParams = { ...GRID_LOOP, loadMs, toolMs: gapMs, agents, wakeMs: loadMs / 10 };
  const results = POLICIES.map((mode) => {
    const r = simulate({ ...mode, evict: swapBack === "sleep" ? "sleep" : "stop" }, p);
    return {
      policy: mode.name,
      makespanMs: r.makespanMs,
      p95TtftMs: percentile(r.ttftMs, 0.95),
      swaps: r.swaps,
    };
  });
  const [cost, ...others] = results;
  const bestMakespan = Math.min(...others.map((r) => r.makespanMs));
  const bestTtft = Math.min(...others.map((r) => r.p95TtftMs));
  const makespanRatio = cost!.makespanMs / bestMakespan;
  const ttftRatio = bestTtft > 0 ? cost!.p95TtftMs / bestTtft : 1;
  const meets = (r: PolicyResult) =>
    r.makespanMs <= 1.05 * bestMakespan &&
    r.p95TtftMs <= Math.max(1.1 * bestTtft, bestTtft + loadMs);
  const ok = meets(cost!);
  const otherMeets = others.find(meets)?.policy ?? null;
  return { loadMs, gapMs, agents, swapBack, results, makespanRatio, ttftRatio, ok, otherMeets };
}

export function grid(): Cell[] {
  const cells: Cell[] = [];
  for (const swapBack of SWAP_BACK)
    for (const agents of AGENTS)
      for (const loadMs of LOADS_MS)
        for (const gapMs of GAPS_MS) cells.push(runCell(loadMs, gapMs, agents, swapBack));
  return cells;
}

const sec = (ms: number) => (ms < 10_000 ? (ms / 1000).toFixed(1) : (ms / 1000).toFixed(0));

export function gridTable(cells: readonly Cell[]): string {
  const head =
    "| swap back | agents | load s | gap s | cost | fixed | off | forever | makespan × | p95 TTFT × | target |\n" +
    "|---|---|---|---|---|---|---|---|---|---|---|\n";
  const rows = cells.map((c) => {
    const cols = c.results.map((r) => `${sec(r.makespanMs)} / ${sec(r.p95TtftMs)} (${r.swaps})`);
    return `| ${c.swapBack} | ${c.agents} | ${sec(c.loadMs)} | ${sec(c.gapMs)} | ${cols.join(" | ")} | ${c.makespanRatio.toFixed(2)} | ${c.ttftRatio.toFixed(2)} | ${c.ok ? "met" : c.otherMeets ? `missed (${c.otherMeets} meets)` : "missed (none does)"} |`;
  });
  return head + rows.join("\n");
}

/**
 * The short form: one row per eviction mode, agents and load; per gap, cost's makespan and
 * p95 TTFT over the best other policy's, and whether both targets are met (✓), missed where
 * another policy meets them (✗), or missed where none does (–).
 */
export function gridSummary(cells: readonly Cell[]): string {
  const head =
    `| swap back | agents | load | ${GAPS_MS.map((g) => `gap ${sec(g)} s`).join(" | ")} |\n` +
    `|---|---|---|${GAPS_MS.map(() => "---|").join("")}\n`;
  const rows: string[] = [];
  for (const swapBack of SWAP_BACK)
    for (const agents of AGENTS)
      for (const loadMs of LOADS_MS) {
        const cols = GAPS_MS.map((gapMs) => {
          const c = cells.find(
            (x) =>
              x.swapBack === swapBack &&
              x.agents === agents &&
              x.loadMs === loadMs &&
              x.gapMs === gapMs,
          )!;
          const mark = c.ok ? "✓" : c.otherMeets ? "✗" : "–";
          return `${c.makespanRatio.toFixed(2)} / ${c.ttftRatio.toFixed(2)} ${mark}`;
        });
        rows.push(`| ${swapBack} | ${agents} | ${sec(loadMs)} s | ${cols.join(" | ")} |`);
      }
  return head + rows.join("\n");
}

export function printGrid(prefix: string): void {
  const cells = grid();
  const met = cells.filter((c) => c.ok).length;
  const conflicting = cells.filter((c) => !c.ok && c.otherMeets === null).length;
  process.stdout.write(
    `${prefix}Hold policies, ${GRID_LOOP.rounds} rounds per agent, ${GRID_LOOP.genMs / 1000} s to generate, ` +
      `${GRID_LOOP.stopMs / 1000} s to stop; each agent on its own model, one at a time on the GPU. ` +
      "Per policy: makespan / p95 time to first token in seconds (swaps); cost's ratio to the best " +
      "other policy on each.\n\n" +
      `${gridTable(cells)}\n\nTargets met in ${met} of ${cells.length} cells; of the ${cells.length - met} missed, ` +
      `${conflicting} are cells where no other policy meets both either.\n\n` +
      "Cost's makespan / p95 TTFT over the best other policy's (✓ both targets met; ✗ missed " +
      "where another policy meets both; – missed where none does):\n\n" +
      `${gridSummary(cells)}\n`,
  );
}
