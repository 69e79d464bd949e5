/**
 * Scenarios 3 and 4 of the self-test (./scenarios.ts): attribution by change where the probe's
 * pids are out of reach, and placement on cards.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { GpuReading } from "../../gpu/types.ts";
import { Bench, demoModel, Holder, simDir } from "./bench.ts";
import { gb, head, type Plan, probeCommand, RESERVE, within } from "./plan.ts";
import type { Verdicts } from "./verdicts.ts";

/** Scenario 3: attribution by change, where the probe's pids are not qm's. */
export async function containerScenario(plan: Plan, v: Verdicts): Promise<void> {
  const { mib } = plan;
  // Simulated memory on a card of its own: what earlier scenarios let go of late is not on it
  // to be taken for the idle baseline.
  const mode = plan.mode.real ? plan.mode : { ...plan.mode, dir: join(plan.mode.dir, "by-change") };
  if (!mode.real) mkdirSync(simDir(mode), { recursive: true });
  const est = mib / 1024;
  const budget = 2.5 * est + RESERVE;
  const several = plan.cards > 1;
  const resources = several
    ? `gpus = [{ index = 0, vram_budget_gb = ${budget} }]\n`
    : `vram_budget_gb = ${budget}\n`;
  const bench = new Bench(
    mode,
    head(mode, probeCommand(mode, { hidePids: true, cards: 1 }), resources) +
      demoModel(mode, "a", mib, est, several ? "gpus = [0]\n" : ""),
  );
  let holder: Holder | null = null;
  try {
    await v.check("by-change", async () => {
      const steps: string[] = [];
      const near = (x: number, y: number) => Math.abs(x - y) < 0.15;
      await bench.read();
      const c0 = bench.ceiling();
      steps.push(`idle ${gb(c0)}`);
      await bench.load("a");
      await bench.read();
      const c1 = bench.ceiling();
      const attribution = bench.runtime.status().resources.attribution;
      const a = bench.runtime.gpu.measured().get("a") ?? 0;
      steps.push(`a started ${gb(c1)} (a measured ${gb(a)})`);
      holder = await Holder.start(mode, mib);
      await bench.read();
      const c2 = bench.ceiling();
      steps.push(`another program took ${gb(est)}: ${gb(c2)}`);
      await holder.stop();
      holder = null;
      // The driver gives a dead process's memory back when it does (simulated: 600 ms late).
      const since = performance.now();
      await bench.until(() => near(bench.ceiling(), c0), 5000);
      const c3 = bench.ceiling();
      steps.push(`it let go: ${gb(c3)} (${Math.round(performance.now() - since)} ms later)`);
      bench.unload("a");
      await bench.until(() => bench.state("a") === "stopped", 10_000);
      await bench.read();
      const c4 = bench.ceiling();
      const ours = bench.runtime.gpu.last?.oursGb ?? 0;
      steps.push(`a stopped: ${gb(c4)}`);
      const ok =
        attribution === "by_change" &&
        near(c1, c0) &&
        c2 <= c0 - 0.9 * est &&
        near(c3, c0) &&
        near(c4, c0) &&
        within(a, mib) &&
        bench.runtime.gpu.measured().size === 0;
      return {
        ok,
        detail: `attribution ${attribution}; the live ceiling, one reading after each change: ${steps.join(", ")}; ours after the stop ${gb(ours)}`,
      };
    });
  } finally {
    await (holder as Holder | null)?.stop();
    await bench.close();
  }
}

/** Scenario 4: per-card placement (two cards or more). */
export async function placementScenario(plan: Plan, v: Verdicts): Promise<void> {
  const { mode, mib } = plan;
  const cards = mode.real ? plan.cards : 2;
  if (cards < 2) {
    v.pass("placement", "one card: nothing to place (needs two or more)");
    return;
  }
  const probe = mode.real ? plan.probe : probeCommand(mode, { cards: 2 });
  const bench = new Bench(
    mode,
    head(mode, probe, "") +
      demoModel(mode, "p", mib, mib / 1024, "gpus = 1\n") +
      demoModel(mode, "q", mib, mib / 1024, "gpus = 1\n"),
  );
  try {
    await v.check("placement", async () => {
      await bench.read();
      await bench.load("p");
      await bench.read();
      await bench.load("q");
      const r: GpuReading | null = await bench.read();
      const placed = Object.fromEntries(
        bench.runtime.status().models.map((m) => [m.id, m.gpus ?? []]),
      );
      const onCards = bench.runtime.gpu.modelsOnCards();
      const where = (id: string) =>
        [...onCards]
          .filter(([, models]) => (models.get(id) ?? 0) * 1024 >= mib * 0.9)
          .map(([i]) => i);
      const ok =
        r !== null &&
        placed.p?.length === 1 &&
        placed.q?.length === 1 &&
        placed.p[0] !== placed.q[0] &&
        where("p").join() === placed.p.join() &&
        where("q").join() === placed.q.join();
      return {
        ok,
        detail: `p placed on GPU ${placed.p?.join(",")}, its memory on GPU ${where("p").join(",") || "none"}; q placed on GPU ${placed.q?.join(",")}, its memory on GPU ${where("q").join(",") || "none"} (CUDA_VISIBLE_DEVICES)`,
      };
    });
  } finally {
    await bench.close();
  }
}
