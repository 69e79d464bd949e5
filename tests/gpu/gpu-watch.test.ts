import { describe, expect, test } from "bun:test";
import { GpuWatch } from "../../src/gpu/gpu-watch.ts";
import type { ProbeOptions, ProbeResult, ProcessView } from "../../src/gpu/index.ts";
import { LiveBudget } from "../../src/runtime/live-budget.ts";
import { createLogger } from "../../src/shared/log.ts";
import type { Timers } from "../../src/shared/timer.ts";
import { config } from "../support/config.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { modelsToml } from "../support/harness.ts";

const TOTAL_MIB = 24576;

/** A trusted reading of one 24 GB card with `freeGb` free, `foreignGb` of it other programs'. */
function card(freeGb: number, foreignGb = 0): ProbeResult {
  const freeMib = freeGb * 1024;
  return {
    ok: true,
    reading: {
      gpus: [
        {
          index: 0,
          uuid: "GPU-0",
          name: "card",
          totalMib: TOTAL_MIB,
          usedMib: TOTAL_MIB - freeMib,
          freeMib,
        },
      ],
      apps: [],
      totalGb: 24,
      usedGb: 24 - freeGb,
      freeGb,
      oursGb: 0,
      foreignGb,
      ourPidsOnGpu: [],
    },
  };
}

/**
 * A watch over fake processes, a fake nvidia-smi and fake timers: each timer fires on the next
 * microtask and moves the clock by its delay (unless the clock is frozen), so the spawn guard's
 * re-reads run without waiting.
 */
function setup(opts: { clockMoves?: boolean } = {}) {
  const cfg = config(
    `[resources]\nvram_budget_gb = 24\noom_guard_reserve_gb = 1\ngpu_probe = "nvidia-smi"\n\n${modelsToml("x", "y")}`,
  );
  const clock = new FakeClock(1000);
  const procs: ProcessView[] = [];
  const calls: ProbeOptions[] = [];
  const slept: number[] = [];
  const lines: string[] = [];
  const shed: number[] = [];
  const timers: Timers = {
    now: () => clock.now(),
    set: (fn, ms) => {
      slept.push(ms);
      if (opts.clockMoves !== false) clock.advance(ms);
      queueMicrotask(fn);
      return null;
    },
    clear: () => {},
  };
  const t = {
    clock,
    procs,
    calls,
    slept,
    lines,
    shed,
    /** The n-th reading (1-based) the fake nvidia-smi gives. */
    reading: (_n: number): ProbeResult => card(20),
    /** Runs while nvidia-smi "runs" (a model starting mid-reading). */
    during: () => {},
    watch: null as unknown as GpuWatch,
  };
  t.watch = new GpuWatch({
    resources: cfg.resources,
    budget: new LiveBudget(cfg.resources),
    log: createLogger("info", (l) => lines.push(l)),
    timers,
    processes: () => procs,
    inTransition: () => false,
    shed: (gb) => shed.push(gb),
    probe: async (o) => {
      calls.push(o);
      t.during();
      return t.reading(calls.length);
    },
  });
  return t;
}

const REFUSAL =
  "cannot start y now: it needs 10.0 GB (est_vram_gb) + 1.0 GB reserve (oom_guard_reserve_gb), " +
  "but nvidia-smi reports 10.0 GB free of 24.0 GB on GPU 0";

describe("spawn guard after qm let go of memory", () => {
  test("readings that lag an eviction by 3 reads: it re-reads every 200 ms, then loads", async () => {
    const t = setup();
    t.reading = (n) => card(n <= 3 ? 10 : 20);
    expect(await t.watch.guard("y", 10, { evicted: ["x"] })).toEqual({ ok: true });
    expect(t.calls.length).toBe(4);
    expect(t.slept).toEqual([200, 200, 200]);
    expect(t.watch.refusal("y")).toBeNull();
    expect(t.lines.join("\n")).toContain(
      "spawn guard: waited 600 ms for memory qm let go of to show up free; y fits",
    );
  });

  test("readings that never show room: refused once 5 s have passed, with the usual message", async () => {
    const t = setup();
    t.reading = () => card(10);
    const v = await t.watch.guard("y", 10, { evicted: ["x"] });
    expect(v).toEqual({ ok: false, message: REFUSAL });
    expect(t.clock.now()).toBe(1000 + 5000);
    expect(t.calls.length).toBe(1 + 25);
    expect(t.watch.refusal("y")).toBe(REFUSAL);
  });

  test("no eviction and nothing stopped lately: refused at once, on one reading", async () => {
    const t = setup();
    t.reading = () => card(10);
    expect(await t.watch.guard("y", 10)).toEqual({ ok: false, message: REFUSAL });
    expect(t.calls.length).toBe(1);
    expect(t.slept).toEqual([]);
  });

  test("a model seen exiting a moment ago counts like an eviction; long ago, it does not", async () => {
    const t = setup();
    t.procs.push({ state: "ready", pid: 7 });
    await t.watch.sample();
    t.procs[0] = { state: "stopped", pid: null };
    t.clock.advance(100);
    t.reading = (n) => card(n <= 2 ? 10 : 20);
    expect(await t.watch.guard("y", 10)).toEqual({ ok: true });
    expect(t.slept).toEqual([200]);
    t.clock.advance(5000);
    t.reading = () => card(10);
    const before = t.calls.length;
    expect(await t.watch.guard("y", 10)).toMatchObject({ ok: false });
    expect(t.calls.length).toBe(before + 1);
  });

  test("a clock that does not move still cannot make it wait forever", async () => {
    const t = setup({ clockMoves: false });
    t.reading = () => card(10);
    expect(await t.watch.guard("y", 10, { evicted: ["x"] })).toMatchObject({ ok: false });
    expect(t.slept.length).toBe(25);
  });

  test("the watch stopping (shutdown) ends the wait", async () => {
    const t = setup();
    t.reading = (n) => {
      if (n === 3) t.watch.stop();
      return card(10);
    };
    expect(await t.watch.guard("y", 10, { evicted: ["x"] })).toMatchObject({ ok: false });
    expect(t.calls.length).toBe(3);
  });
});

describe("whose memory, and when the idle baseline may learn", () => {
  test("ready pids go to nvidia-smi as expected; starting and stopping ones as ours too", async () => {
    const t = setup();
    t.procs.push(
      { state: "ready", pid: 1 },
      { state: "starting", pid: 2 },
      { state: "stopping", pid: 3 },
      { state: "stopped", pid: null },
    );
    await t.watch.sample();
    expect(t.calls[0]).toMatchObject({ ourPids: [1], transientPids: [2, 3] });
  });

  test("not learned while a model starts, nor while its memory settles after it exits", async () => {
    const t = setup();
    t.procs.push({ state: "starting", pid: 5 });
    t.reading = () => card(12.2, 9.78); // the starting model's memory, were it unattributed
    await t.watch.sample();
    expect(t.watch.foreignBaselineGb).toBeNull();
    t.procs[0] = { state: "stopped", pid: null };
    t.reading = () => card(22, 2);
    await t.watch.sample(); // sees it gone
    t.clock.advance(4999);
    await t.watch.sample();
    expect(t.watch.foreignBaselineGb).toBeNull();
    expect(t.calls.at(-1)?.transientPids).toEqual([5]); // its leftovers are still ours
    t.clock.advance(1);
    await t.watch.sample();
    expect(t.watch.foreignBaselineGb).toBe(2);
    expect(t.calls.at(-1)?.transientPids).toEqual([]);
  });

  test("a model that spawns while nvidia-smi runs keeps that reading out of the baseline", async () => {
    const t = setup();
    t.during = () => t.procs.splice(0, 1, { state: "starting", pid: 9 });
    t.reading = () => card(14.22, 9.78);
    await t.watch.sample();
    expect(t.watch.foreignBaselineGb).toBeNull();
    t.during = () => {};
    t.procs.length = 0; // it failed at once, but it was seen: wait out its memory
    t.reading = () => card(22, 2);
    await t.watch.sample();
    expect(t.watch.foreignBaselineGb).toBeNull();
  });

  test("an idle card teaches the baseline at once", async () => {
    const t = setup();
    t.reading = () => card(22, 2);
    await t.watch.sample();
    expect(t.watch.foreignBaselineGb).toBe(2);
  });

  test("no shedding on a reading where a just-exited model's memory passes for foreign", async () => {
    const t = setup();
    t.procs.push({ state: "ready", pid: 7 }, { state: "ready", pid: 8 });
    await t.watch.sample();
    expect(t.shed.length).toBe(1);
    t.procs[0] = { state: "stopped", pid: null };
    t.reading = () => card(10, 10);
    await t.watch.sample();
    expect(t.shed.length).toBe(1);
    t.clock.advance(5000);
    await t.watch.sample();
    expect(t.shed).toEqual([24 - 1, 24 - 10 - 1]);
  });
});
