/**
 * The GPU watch on boxes where nvidia-smi's pids are not qm's (a container with its own PID
 * namespace) and on unified memory: attribution by change keeps the live ceiling following real
 * use, the kind is told, and each reading becomes a history sample. A fake nvidia-smi (the real
 * attribution code over its rows), fake processes and a fake clock; no process, no sleep.
 */
import { describe, expect, test } from "bun:test";
import { attribute } from "../../src/gpu/attribute.ts";
import { GpuWatch } from "../../src/gpu/gpu-watch.ts";
import type { CardSample } from "../../src/gpu/history.ts";
import type { ComputeApp, GpuInfo, ProbeOptions, ProbeResult } from "../../src/gpu/index.ts";
import { attributed } from "../../src/gpu/probe-options.ts";
import { LiveBudget } from "../../src/runtime/live-budget.ts";
import { createLogger } from "../../src/shared/log.ts";
import type { Timers } from "../../src/shared/timer.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";

const GB = 1024;
type State = "stopped" | "starting" | "ready" | "stopping";
interface Proc {
  id: string;
  state: State;
  pid: number | null;
}

/**
 * One 24 GB card inside a container: nvidia-smi lists every process under a host pid (pid +
 * 100000), so none is ever qm's. `held` is what each of qm's processes holds (by pid, MiB),
 * `foreign` what another program holds.
 */
function containerSmi(held: Map<number, number>, foreign: () => number) {
  return async (o: ProbeOptions): Promise<ProbeResult> => {
    const used = [...held.values()].reduce((s, m) => s + m, 0) + foreign();
    const gpus: GpuInfo[] = [
      {
        index: 0,
        uuid: "GPU-0",
        name: "card",
        totalMib: 24 * GB,
        usedMib: used,
        freeMib: 24 * GB - used,
      },
    ];
    const apps: ComputeApp[] = [...held].map(([pid, mib]) => ({
      pid: pid + 100000,
      gpuUuid: "GPU-0",
      usedMib: mib,
    }));
    if (foreign() > 0) apps.push({ pid: 999999, gpuUuid: "GPU-0", usedMib: foreign() });
    const ours = new Set([...(o.ourPids ?? []), ...(o.transientPids ?? [])]);
    const input = { gpus, apps, ours };
    return attributed(
      attribute({ ...input, expectOurs: (o.ourPids ?? []).length > 0 }),
      "nvidia",
      () => attribute({ ...input, expectOurs: false }),
    );
  };
}

function setup(
  probe: (o: ProbeOptions) => Promise<ProbeResult>,
  resources = "vram_budget_gb = 24",
) {
  const cfg = config(
    `[resources]\noom_guard_reserve_gb = 1\n${resources}\n[models.x]\ncmd = "x"\n[models.y]\ncmd = "y"\n`,
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
  const procs: Proc[] = [];
  const shed: number[] = [];
  const lines: string[] = [];
  const samples: CardSample[][] = [];
  const budget = new LiveBudget(cfg.resources);
  const watch = new GpuWatch({
    resources: cfg.resources,
    budget,
    log: createLogger("info", (l) => lines.push(l)),
    timers,
    probe,
    processes: () => procs,
    inTransition: () => false,
    shed: (gb) => shed.push(gb),
    onSample: (cards) => samples.push(cards),
  });
  return { clock, procs, shed, lines, samples, budget, watch };
}

describe("NVIDIA in a container: attribution by change", () => {
  test("the live ceiling follows real use within one reading after each start and stop", async () => {
    const held = new Map<number, number>();
    let foreign = 1 * GB;
    const t = setup(containerSmi(held, () => foreign));
    const ceilingAfterOneReading = async () => {
      await t.watch.sample();
      return t.budget.vramGb();
    };
    // Idle: the other program's 1 GB is the baseline.
    expect(await ceilingAfterOneReading()).toBe(23);

    // x starts, allocates 6 GB, turns ready: nvidia-smi lists it under a pid qm cannot know.
    t.procs.push({ id: "x", state: "starting", pid: 11 });
    held.set(11, 6 * GB);
    await t.watch.sample();
    t.procs[0]!.state = "ready";
    expect(await ceilingAfterOneReading()).toBe(23);
    expect(t.watch.attribution).toBe("by_change");
    expect(t.watch.measured()).toEqual(new Map([["x", 6]]));
    expect(t.budget.note).toContain(
      "attribution by change (the GPU's process ids are not visible here)",
    );
    expect(t.lines.join("\n")).toContain("attributing memory by change");

    // y starts beside it (4 GB): still only real foreign use counts.
    t.procs.push({ id: "y", state: "starting", pid: 12 });
    held.set(12, 4 * GB);
    expect(await ceilingAfterOneReading()).toBe(23);
    t.procs[1]!.state = "ready";
    expect(await ceilingAfterOneReading()).toBe(23);
    expect(t.watch.measured()).toEqual(
      new Map([
        ["x", 6],
        ["y", 4],
      ]),
    );

    // Another program takes 5 GB more: the next reading tightens the ceiling and sheds.
    foreign = 6 * GB;
    expect(await ceilingAfterOneReading()).toBe(18);
    expect(t.shed.at(-1)).toBe(18);

    // x stops; its memory leaves with it. Not taken for foreign while it settles, nor after.
    t.procs[0]!.state = "stopped";
    t.procs[0]!.pid = null;
    held.delete(11);
    t.watch.noteReleased();
    expect(await ceilingAfterOneReading()).toBe(18);
    expect(t.watch.measured()).toEqual(new Map([["y", 4]]));
    t.clock.advance(5000);
    expect(await ceilingAfterOneReading()).toBe(18);

    // The other program lets go: the ceiling comes back at the next reading.
    foreign = 1 * GB;
    expect(await ceilingAfterOneReading()).toBe(23);
    expect(t.watch.last).toMatchObject({ oursGb: 4, foreignGb: 1, ourPidsOnGpu: [] });
  });

  test("a reading that lists one of qm's pids again goes back to attribution by process", async () => {
    const held = new Map<number, number>();
    let hidden = true;
    const smi = containerSmi(held, () => 0);
    const t = setup(async (o) => {
      if (hidden) return smi(o);
      const gpus: GpuInfo[] = [
        {
          index: 0,
          uuid: "GPU-0",
          name: "card",
          totalMib: 24 * GB,
          usedMib: 6 * GB,
          freeMib: 18 * GB,
        },
      ];
      const apps = [{ pid: 11, gpuUuid: "GPU-0", usedMib: 6 * GB }];
      const r = attribute({ gpus, apps, ours: new Set([11]), expectOurs: true });
      return attributed(r, "nvidia", () => r);
    });
    await t.watch.sample();
    t.procs.push({ id: "x", state: "ready", pid: 11 });
    held.set(11, 6 * GB);
    await t.watch.sample();
    expect(t.watch.attribution).toBe("by_change");
    hidden = false;
    await t.watch.sample();
    expect(t.watch.attribution).toBe("pids");
    expect(t.watch.measured()).toEqual(new Map([["x", 6]]));
  });
});

describe("kinds, unified memory and history samples", () => {
  test("unified memory without vram_budget_gb: the budget is MemTotal", async () => {
    const probe = async (): Promise<ProbeResult> => {
      const gpus: GpuInfo[] = [
        {
          index: 0,
          uuid: "GPU-u",
          name: "NVIDIA GB10",
          totalMib: 120 * GB,
          usedMib: 20 * GB,
          freeMib: 100 * GB,
        },
      ];
      const r = attribute({ gpus, apps: [], ours: new Set(), expectOurs: false });
      return r.ok ? { ok: true, reading: { ...r.value, kind: "nvidia-unified" } } : r;
    };
    const t = setup(probe, "");
    await t.watch.sample();
    expect(t.watch.kind).toBe("nvidia-unified");
    expect(t.budget.vramGb()).toBe(119);
    expect(t.budget.note).toContain("of 120 GB (MemTotal)");
    expect(t.lines.join("\n")).toContain("GPU: NVIDIA with unified memory");
  });

  test("each trusted reading is one sample per card, with each model's memory and the limits", async () => {
    const held = new Map<number, number>();
    const t = setup(containerSmi(held, () => 2 * GB));
    await t.watch.sample();
    t.procs.push({ id: "x", state: "ready", pid: 11 });
    held.set(11, 6 * GB);
    await t.watch.sample();
    expect(t.samples).toHaveLength(2);
    expect(t.samples[1]).toEqual([
      { index: 0, used_gb: 8, models: { x: 6 }, foreign_gb: 2, budget_gb: 24, ceiling_gb: 23 },
    ]);
  });

  test("no GPU at all: kind none, no sample, and the loop looks again rarely", async () => {
    const t = setup(async () => ({
      ok: false,
      kind: "none",
      reason: "no GPU found: static budget applies",
    }));
    expect(await t.watch.sample()).toBe(true);
    expect(t.watch.kind).toBe("none");
    expect(t.watch.attribution).toBeNull();
    expect(t.samples).toHaveLength(0);
  });
});
