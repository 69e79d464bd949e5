/**
 * The metrics are built only when a listener serves them (src/observe/lazy-metrics.ts): with
 * none, the runtime counts into `noMetrics`; with one, counts made while prometheus.ts loads are
 * replayed in order, and a scrape waits for it. A reload cannot switch them on.
 */
import { describe, expect, test } from "bun:test";
import type { GaugeReading } from "../../src/observe/gauges.ts";
import { LazyMetrics, metricsFor, noMetrics } from "../../src/observe/lazy-metrics.ts";
import { QmMetrics } from "../../src/observe/prometheus.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { fakeServers } from "../runtime/fake-server.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";

const gauges = (): GaugeReading => ({
  version: "test",
  uptimeS: 0,
  models: [],
  queueDepth: 0,
  swapsInProgress: 0,
  vram: { budgetGb: 0, ceilingGb: 0, usedGb: 0 },
  gpu: null,
  gpuReadingAgeS: null,
  peers: [],
});

describe("metricsFor", () => {
  test("not served: the no-op, which shows nothing", async () => {
    const m = metricsFor(false, { gauges });
    expect(m).toBe(noMetrics);
    m.swapStarted(1, "a", [], [], 0);
    m.swapEnded(1, "ok", 1000);
    expect(await m.text()).toBe("");
  });

  test("served: counts made before prometheus.ts is loaded are kept, in order", async () => {
    const m = metricsFor(true, { gauges });
    expect(m).toBeInstanceOf(LazyMetrics);
    // Synchronously after construction: the import has not resolved yet.
    m.swapStarted(1, "a", ["b"], [], 0);
    m.swapEnded(1, "ok", 2500);
    m.slept("b", true);
    const text = await m.text();
    expect(text).toContain('qm_swaps_total{model="a",result="ok"} 1');
    expect(text).toContain('qm_swap_duration_seconds_sum{model="a"} 2.5');
    expect(text).toContain('qm_evictions_total{model="b",reason="swap"} 1');
    expect(text).toContain('qm_sleeps_total{model="b",result="ok"} 1');
    // Once loaded, counts go straight through, with the real content type.
    m.woke("b", "cold");
    expect(await m.text()).toContain('qm_wakes_total{model="b",result="cold"} 1');
    expect(m.contentType).toBe(new QmMetrics({ gauges }).contentType);
  });
});

describe("the runtime", () => {
  const MODEL = `[resources]\ngpu_probe = "off"\n\n[models.a]\ncmd = "run a"\nproxy = "http://127.0.0.1:9"\n`;

  function runtime(first: string) {
    let text = first;
    const timers = new FakeTimers();
    const rt = new Runtime(config(text), {
      clock: timers,
      timers,
      log: silentLogger,
      makeProcess: fakeServers().make,
      loadConfig: (isPortFree) => config(text, { isPortFree }),
    });
    return {
      rt,
      write: (next: string) => {
        text = next;
      },
    };
  }

  test("no metrics listener: nothing is built; either listener key: the real metrics", () => {
    expect(runtime(MODEL).rt.metrics).toBe(noMetrics);
    for (const server of ["metrics_on_api = true", 'metrics_on_api = "open"']) {
      expect(runtime(`[server]\n${server}\n${MODEL}`).rt.metrics).toBeInstanceOf(LazyMetrics);
    }
    const listen = runtime(`[server]\nmetrics_listen = "127.0.0.1:0"\n${MODEL}`).rt;
    expect(listen.metrics).toBeInstanceOf(LazyMetrics);
  });

  test("a reload cannot switch the metrics on: both keys need a restart", () => {
    const { rt, write } = runtime(MODEL);
    write(`[server]\nmetrics_on_api = true\nmetrics_listen = "127.0.0.1:0"\n${MODEL}`);
    const outcome = rt.reloadConfig();
    if (!outcome.ok) throw new Error(outcome.error);
    expect(outcome.changes.needs_restart).toEqual([
      "server.metrics_listen",
      "server.metrics_on_api",
    ]);
    expect(rt.metrics).toBe(noMetrics);
  });
});
