/**
 * `event: vram` on /api/events: published when a trusted GPU reading changes the VRAM picture
 * (the first one, a move of used / foreign / ceiling past the threshold, at most once a second),
 * and once when trust is lost; with the fields status shows under `resources`.
 */
import { describe, expect, test } from "bun:test";
import type { QmEvent } from "../../src/api/gateway.ts";
import { GpuWatch, VramPictures } from "../../src/gpu/gpu-watch.ts";
import type { ProbeResult } from "../../src/gpu/index.ts";
import { LiveBudget } from "../../src/runtime/live-budget.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { fakeServers } from "../runtime/fake-server.ts";
import { config } from "../support/config.ts";
import { fakeSmi } from "../support/fake-smi.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { modelsToml } from "../support/harness.ts";

describe("VramPictures", () => {
  test("the first reading is a change; moves within the threshold are not", () => {
    const p = new VramPictures(0.25, 1000);
    expect(p.reading(4, 1, 20, 0)).toBe(true);
    expect(p.reading(4.2, 1.2, 19.8, 5000)).toBe(false);
    // Small moves do not add up behind the report's back: each is measured from the report.
    expect(p.reading(4.3, 1, 20, 6000)).toBe(true);
  });

  test("each of used, foreign and the ceiling counts on its own", () => {
    const p = new VramPictures(0.25, 0);
    p.reading(4, 1, 20, 0);
    expect(p.reading(4, 1.5, 20, 1)).toBe(true);
    expect(p.reading(4, 1.5, 19, 2)).toBe(true);
    expect(p.reading(3, 1.5, 19, 3)).toBe(true);
    expect(p.reading(3, 1.5, 19, 4)).toBe(false);
  });

  test("at most one report per interval; a change held back is reported at the next reading past it", () => {
    const p = new VramPictures(0.25, 1000);
    p.reading(4, 1, 20, 0);
    expect(p.reading(8, 1, 20, 200)).toBe(false);
    expect(p.reading(8, 1, 20, 999)).toBe(false);
    expect(p.reading(8, 1, 20, 1000)).toBe(true);
    expect(p.reading(8, 1, 20, 5000)).toBe(false);
  });

  test("trust lost is reported once, and the next trusted reading is reported whatever it shows", () => {
    const p = new VramPictures(0.25, 1000);
    expect(p.untrusted()).toBe(false); // nothing was ever shown
    p.reading(4, 1, 20, 0);
    expect(p.untrusted()).toBe(true);
    expect(p.untrusted()).toBe(false);
    expect(p.reading(4, 1, 20, 10)).toBe(true);
  });
});

/** A trusted reading of a 24 GB card: `usedGb` used, `foreignGb` of it other programs'. */
function card(usedGb: number, foreignGb: number): ProbeResult {
  const mib = (gb: number) => gb * 1024;
  return {
    ok: true,
    reading: {
      gpus: [
        {
          index: 0,
          uuid: "GPU-0",
          name: "card",
          totalMib: mib(24),
          usedMib: mib(usedGb),
          freeMib: mib(24 - usedGb),
        },
      ],
      apps: [],
      totalGb: 24,
      usedGb,
      freeGb: 24 - usedGb,
      oursGb: usedGb - foreignGb,
      foreignGb,
      ourPidsOnGpu: [],
    },
  };
}

describe("GpuWatch reports VRAM changes", () => {
  test("on the first reading, on a move of foreign memory (which moves the ceiling), and on trust lost", async () => {
    const cfg = config(
      `[resources]\nvram_budget_gb = 24\noom_guard_reserve_gb = 1\n\n${modelsToml("x")}`,
    );
    const timers = new FakeTimers();
    let next: ProbeResult = card(2, 0);
    const reports: number[] = [];
    const budget = new LiveBudget(cfg.resources);
    const watch = new GpuWatch({
      resources: cfg.resources,
      budget,
      log: silentLogger,
      timers,
      probe: async () => next,
      processes: () => [],
      inTransition: () => false,
      shed: () => {},
      vramChanged: () => reports.push(budget.vramGb()),
    });
    await watch.sample();
    expect(reports).toEqual([23]);
    timers.advance(2000);
    await watch.sample(); // the same picture
    expect(reports).toEqual([23]);
    next = card(6, 4);
    timers.advance(2000);
    await watch.sample();
    expect(reports).toHaveLength(2);
    next = { ok: false, reason: "nvidia-smi failed: no devices" };
    await watch.sample();
    await watch.sample();
    expect(reports).toHaveLength(3);
  });
});

describe("the runtime publishes event: vram", () => {
  test("with the fake nvidia-smi: the status' resources, again once other programs take memory", async () => {
    const { smi, card: setCard } = fakeSmi();
    setCard({}, 1024);
    const cfg = config(
      `[resources]\nvram_budget_gb = 24\noom_guard_reserve_gb = 1\ngpu_probe = "${smi}"\n\n${modelsToml("x")}`,
    );
    const timers = new FakeTimers();
    const rt = new Runtime(cfg, {
      clock: timers,
      timers,
      log: silentLogger,
      makeProcess: fakeServers().make,
    });
    const events: QmEvent[] = [];
    rt.subscribe((e) => {
      if (e.type === "vram") events.push(e);
    });
    await rt.gpu.sample();
    expect(events).toHaveLength(1);
    expect(events[0]).toEqual({ type: "vram", ...rt.status().resources });
    expect(events[0]).toMatchObject({
      vram_budget_gb: 24,
      gpu: { total_gb: 24, used_gb: 1, foreign_gb: 1 },
    });

    timers.advance(2000);
    await rt.gpu.sample(); // unchanged: nothing
    expect(events).toHaveLength(1);

    setCard({}, 4096);
    timers.advance(2000);
    await rt.gpu.sample();
    expect(events).toHaveLength(2);
    expect(events[1]).toMatchObject({ gpu: { used_gb: 4, foreign_gb: 4 } });
    expect(events[1]!.vram_ceiling_gb).toBeLessThan(events[0]!.vram_ceiling_gb as number);
  });
});
