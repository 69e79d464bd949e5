/**
 * The self-test's scenarios, each a qm of its own (./bench.ts) with demo models that hold known
 * memory — real (`qm selftest gpu`) or simulated by `qm demo-smi` (`qm selftest`):
 *
 * 1. budget: the probe reads the card; qm's model pids are found (or why not); two models
 *    co-reside within the budget and a third evicts the least recently used; another program's
 *    allocation lowers the live ceiling and sheds an idle model; each model's measured memory
 *    against what it holds.
 * 2. guard: no budget, one model at a time; the spawn guard waits for the evicted model's memory
 *    to show up free (a model whose estimate only fits once it has).
 * 3. container: the probe's pids are moved out of reach (`qm demo-smi --hide-pids`); memory is
 *    attributed by change and the ceiling follows real use within one reading of each change.
 * 4. placement: with two cards or more, two one-card models land on different cards, and each
 *    one's memory shows up on the card it was placed on.
 */
import { mkdirSync } from "node:fs";
import { RELEASE_SETTLE_MS } from "../../gpu/own-processes.ts";
import { Bench, type BenchMode, demoModel, Holder, simDir } from "./bench.ts";
import { containerScenario, placementScenario } from "./cards.ts";
import { gb, head, type Plan, probeCommand, RESERVE, within } from "./plan.ts";
import type { Verdicts } from "./verdicts.ts";

/** Runs every scenario; each adds its verdicts. */
export async function runScenarios(mode: BenchMode, v: Verdicts): Promise<void> {
  if (!mode.real) mkdirSync(simDir(mode), { recursive: true });
  const mib = mode.real ? 1024 : 2048;
  const probe = probeCommand(mode);
  const first = new Bench(mode, head(mode, probe, "") + demoModel(mode, "x", 1, 0));
  const reading = await first.read();
  const note = first.runtime.budget.note;
  const kind = first.runtime.gpu.kind;
  await first.close();
  const rest = [
    "pids",
    "co-residence",
    "foreign",
    "estimate",
    "spawn-guard",
    "by-change",
    "placement",
  ];
  if (!reading) {
    v.fail("probe", `no GPU reading (${kind}): ${note}`);
    v.skipped(rest, "no GPU reading");
    return;
  }
  const names = [...new Set(reading.gpus.map((g) => g.name))].join(", ");
  v.pass(
    "probe",
    `${kind}: ${reading.gpus.length} card${reading.gpus.length === 1 ? "" : "s"} (${names}), ` +
      `${gb(reading.totalGb)}, ${gb(reading.freeGb)} free; ${mode.real ? probe : "qm demo-smi"}`,
  );
  const card0 = reading.cards?.find((c) => c.index === reading.gpus[0]!.index);
  const plan: Plan = {
    mode,
    mib,
    probe,
    cards: reading.gpus.length,
    free0: card0?.freeGb ?? reading.freeGb,
  };
  let measured = mib / 1024;
  await scenario(v, ["pids", "co-residence", "foreign", "estimate"], async () => {
    measured = await budgetScenario(plan, v);
  });
  await scenario(v, ["spawn-guard"], () => guardScenario(plan, measured, v));
  await scenario(v, ["by-change"], () => containerScenario(plan, v));
  await scenario(v, ["placement"], () => placementScenario(plan, v));
}

/** Runs a scenario; should it fail outside its checks, the checks it did not reach fail. */
async function scenario(v: Verdicts, names: string[], run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    const done = new Set(v.list.map((x) => x.name));
    v.skipped(
      names.filter((n) => !done.has(n)),
      err instanceof Error ? err.message : String(err),
    );
  }
}

/** Scenario 1. Returns what one demo model was measured to hold (GB), for scenario 2. */
async function budgetScenario(plan: Plan, v: Verdicts): Promise<number> {
  const { mode, mib } = plan;
  const est = mib / 1024;
  // Several cards: this scenario is card 0's, with its own budget; one card: the box's.
  const several = plan.cards > 1;
  const budget = 2.5 * est + RESERVE;
  const resources = several
    ? `gpus = [{ index = 0, vram_budget_gb = ${budget} }]\n`
    : `vram_budget_gb = ${budget}\n`;
  const pin = several ? "gpus = [0]\n" : "";
  const bench = new Bench(
    mode,
    head(mode, plan.probe, resources) +
      ["a", "b", "c"].map((id) => demoModel(mode, id, mib, est, pin)).join(""),
  );
  const heldBy = new Map<string, number>();
  let holder: Holder | null = null;
  try {
    await bench.read(); // idle: the baseline of other programs
    await bench.load("a");
    const r = await bench.read();
    const watch = bench.runtime.gpu;
    await v.check("pids", async () => {
      const a = watch.measured().get("a") ?? 0;
      const pid = bench.runtime.status().models.find((m) => m.id === "a")?.pid;
      if (!r)
        return {
          ok: false,
          detail: `no trusted reading with a loaded: ${bench.runtime.budget.note}`,
        };
      heldBy.set("a", a);
      if (watch.attribution === "pids" && a > 0) {
        return {
          ok: true,
          detail: `a (pid ${pid}) found on the GPU holding ${gb(a)} (${r.ourPidsOnGpu.join(", ")} listed)`,
        };
      }
      if (watch.attribution === "by_change") {
        return {
          ok: true,
          detail: `the probe lists ${r.apps.length} process(es), none of them qm's (pid ${pid}): a PID namespace; memory attributed by change, a ${gb(a)}`,
        };
      }
      return { ok: false, detail: `a (pid ${pid}) not found: ${bench.runtime.budget.note}` };
    });
    await v.check("co-residence", async () => {
      await bench.load("b");
      const both = bench.ready();
      await bench.read();
      heldBy.set("b", watch.measured().get("b") ?? 0);
      await bench.load("c");
      const after = bench.ready();
      const ok = both.join() === "a,b" && after.join() === "b,c" && bench.state("a") === "stopped";
      return {
        ok,
        detail: `${both.join(" and ")} resident together (${gb(2 * est)} of a ${gb(budget - RESERVE)} ceiling); loading c left ${after.join(" and ")} (a was the least recently used)`,
      };
    });
    // Memory let go of settles for 5 s; no shedding (and no steady measure) before.
    await Bun.sleep(RELEASE_SETTLE_MS + 300);
    await bench.read();
    heldBy.set("c", watch.measured().get("c") ?? 0);
    await v.check("foreign", async () => {
      const before = bench.ceiling();
      holder = await Holder.start(mode, mib);
      const lowered = await bench.until(() => bench.ceiling() <= before - 0.9 * est, 10_000);
      const after = bench.ceiling();
      const shed = await bench.until(() => bench.ready().length < 2, 10_000);
      const left = bench.ready();
      await holder.stop();
      holder = null;
      return {
        ok: lowered && shed,
        detail: `another program took ${gb(est)}: ceiling ${gb(before)} → ${gb(after)}; ${shed ? `shed to ${left.join(", ") || "nothing"}` : "nothing was shed"}`,
      };
    });
    await v.check("estimate", async () => {
      const parts = [...heldBy].map(
        ([id, m]) =>
          `${id} ${gb(m)} (${m * 1024 - mib >= 0 ? "+" : ""}${Math.round(m * 1024 - mib)} MiB)`,
      );
      const ok = [...heldBy.values()].every((m) => within(m, mib));
      return {
        ok,
        detail: `each model holds ${mib} MiB (est_vram_gb ${est}); measured ${parts.join(", ")}; allowed 5 % + 300 MiB`,
      };
    });
  } finally {
    await (holder as Holder | null)?.stop();
    await bench.close();
  }
  const values = [...heldBy.values()].filter((x) => x > 0);
  return values.length > 0 ? Math.max(...values) : est;
}

/** Scenario 2: the spawn guard waits for an evicted model's memory. */
async function guardScenario(plan: Plan, measuredGb: number, v: Verdicts): Promise<void> {
  const { mode, mib } = plan;
  // e's estimate fits card 0 only once d's memory is back: free now − half of what d holds.
  const estE = Math.max(0.1, plan.free0 - RESERVE - measuredGb / 2);
  const bench = new Bench(
    mode,
    head(mode, plan.probe, "") +
      `[groups.one]\nmembers = ["d", "e"]\nswap = true\n\n` +
      demoModel(mode, "d", mib, mib / 1024, "gpus = [0]\n") +
      demoModel(mode, "e", Math.min(mib, 256), estE, "gpus = [0]\n"),
  );
  try {
    await v.check("spawn-guard", async () => {
      await bench.read();
      await bench.load("d");
      await bench.read();
      const started = performance.now();
      await bench.load("e");
      const tookMs = Math.round(performance.now() - started);
      const waited = bench.lines
        .map((l) => /spawn guard: waited (\d+) ms/.exec(l)?.[1])
        .find(Boolean);
      const ok = bench.state("e") === "ready" && bench.state("d") === "stopped";
      return {
        ok,
        detail:
          (waited === undefined
            ? `d's ${gb(measuredGb)} showed free at the guard's first reading`
            : `d's ${gb(measuredGb)} showed free after ${waited} ms of re-reading (every 200 ms, up to 5 s)`) +
          `; e (est ${gb(estE)}) started, the swap took ${tookMs} ms`,
      };
    });
  } finally {
    await bench.close();
  }
}
