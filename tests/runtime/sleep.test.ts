/** The swap runner's half of `evict = "sleep"`: sleep instead of stop, wake instead of start. */
import { describe, expect, test } from "bun:test";
import { QmError } from "../../src/shared/errors.ts";
import { createLogger } from "../../src/shared/log.ts";
import { config } from "../support/config.ts";
import { fakeServers, settle } from "./fake-server.ts";
import { bringUp, swapHarness } from "./swap-harness.ts";

const TOML = `
[models.a]
cmd = "x"
proxy = "http://127.0.0.1:9"
evict = "sleep"
sleep_level = 2
[models.b]
cmd = "x"
proxy = "http://127.0.0.1:9"
`;

describe("sleep in swaps", () => {
  test("an evictee in `sleep` is put to sleep at its level, its process kept; the swap says so", async () => {
    const t = swapHarness(TOML);
    await bringUp(t, "a", 1);
    const pid = t.fakes.of("a").pid;
    t.runner.startSwap({ id: 2, target: "b", evict: ["a"], sleep: ["a"] });
    await settle();
    const a = t.fakes.of("a");
    expect(a.sleepLevels).toEqual([2]);
    expect(a.stops).toBe(0);
    expect(a.pid).toBe(pid);
    expect(a.asleep).toBe(true);
    // The guard still re-reads for the memory the sleep let go of.
    expect(t.guards.at(-1)).toEqual({ model: "b", evicted: ["a"] });
    t.fakes.of("b").ready();
    await settle();
    expect(t.results.get(2)).toEqual({ ok: true, asleep: ["a"] });
    expect(t.counts).toEqual(["slept a true"]);
  });

  test("an evictee that will not sleep is stopped instead and is not reported asleep", async () => {
    const t = swapHarness(TOML);
    await bringUp(t, "a", 1);
    const a = t.fakes.of("a");
    a.sleepError = new QmError("upstream_start_failed", "POST /sleep answered 404");
    t.runner.startSwap({ id: 2, target: "b", evict: ["a"], sleep: ["a"] });
    await settle();
    expect(a.state).toBe("stopping");
    a.stopped();
    await settle();
    t.fakes.of("b").ready();
    await settle();
    expect(t.results.get(2)).toEqual({ ok: true, asleep: [] });
    expect(t.lines.join("\n")).toContain("POST /sleep answered 404; stopping it instead");
    expect(t.counts).toEqual(["slept a false"]);
  });

  test("a wake swap wakes the same process: no start", async () => {
    const t = swapHarness(TOML);
    await bringUp(t, "a", 1);
    const a = t.fakes.of("a");
    await a.sleep(1);
    t.runner.startSwap({ id: 2, target: "a", evict: [], wake: true });
    await settle();
    expect(a.wakes).toBe(1);
    expect(a.starts).toBe(1);
    expect(a.asleep).toBe(false);
    expect(t.events).toContain("swapDone 2 ok");
    expect(t.counts).toEqual(["woke a ok"]);
  });

  test("a wake that fails restarts the model cold: stopped, then started afresh", async () => {
    const t = swapHarness(TOML);
    await bringUp(t, "a", 1);
    const a = t.fakes.of("a");
    const pid = a.pid;
    await a.sleep(1);
    a.wakeError = new QmError("upstream_start_failed", "no answer within 10 ms");
    t.runner.startSwap({ id: 2, target: "a", evict: [], wake: true });
    await settle();
    expect(a.state).toBe("stopping");
    a.stopped();
    await settle();
    expect(a.state).toBe("starting");
    expect(a.starts).toBe(2);
    a.ready();
    await settle();
    expect(a.pid).not.toBe(pid);
    expect(t.events).toEqual(["swapDone 1 ok", "swapDone 2 ok"]);
    expect(t.lines.join("\n")).toContain("restarting it cold");
    expect(t.counts).toEqual(["woke a cold"]);
  });

  test("a wake swap aborted while the failed wake's process stops does not start it", async () => {
    const t = swapHarness(TOML);
    await bringUp(t, "a", 1);
    const a = t.fakes.of("a");
    await a.sleep(1);
    a.wakeError = new QmError("upstream_start_failed", "x");
    t.runner.startSwap({ id: 2, target: "a", evict: [], wake: true });
    await settle();
    t.runner.abortSwap(2, "unload");
    a.stopped();
    await settle();
    expect(a.starts).toBe(1);
    expect(t.events).toEqual(["swapDone 1 ok", "swapDone 2 model_unloaded"]);
  });
});

describe("sleep outside swaps", () => {
  test("sleepModels sleeps each and reports slept; memory let go of is noted", async () => {
    const t = swapHarness(TOML);
    await bringUp(t, "a", 1);
    t.runner.sleepModels(["a"], { kind: "ttl" });
    await settle();
    expect(t.events).toContain("slept a true");
    expect(t.fakes.of("a").asleep).toBe(true);
    expect(t.gate.released).toBe(1);
  });

  test("a model without a sleep API is stopped and reported not asleep", async () => {
    const t = swapHarness(TOML);
    await bringUp(t, "b", 1);
    const b = t.fakes.of("b");
    b.sleepError = new QmError("upstream_start_failed", "no");
    t.runner.sleepModels(["b"], { kind: "ttl" });
    await settle();
    b.stopped();
    await settle();
    expect(t.events).toContain("slept b false");
    expect(b.state).toBe("stopped");
  });
});

describe("RAM while asleep", () => {
  test("a level-1 sleeper's est_ram_gb is charged to the RAM budget until it wakes or stops", async () => {
    const { LiveBudget } = await import("../../src/runtime/live-budget.ts");
    const cfg = config(`[resources]\nram_budget_gb = 32\n${TOML}`);
    const budget = new LiveBudget(cfg.resources);
    expect(budget.ramGb()).toBe(32);
    budget.sleeping("a", 20);
    expect(budget.ramGb()).toBe(12);
    budget.sleeping("b", 40);
    expect(budget.ramGb()).toBeGreaterThan(0); // full, but still a budget (0 means none)
    expect(budget.ramGb()).toBeLessThan(0.001);
    budget.sleeping("b", null);
    budget.sleeping("a", null);
    expect(budget.ramGb()).toBe(32);
    // Without a RAM budget nothing is charged.
    const none = new LiveBudget(config(TOML).resources);
    none.sleeping("a", 20);
    expect(none.ramGb()).toBe(0);
  });
});

describe("sleep in the runtime (real scheduler, fake servers and timers)", () => {
  test("TTL sleeps the model in its process; status, RAM and events say so; a request wakes it", async () => {
    const { Runtime } = await import("../../src/runtime/runtime.ts");
    const { FakeTimers } = await import("../support/fake-timers.ts");
    const cfg = config(
      `[resources]\ngpu_probe = "off"\nram_budget_gb = 64\n` +
        `[models.v]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\nevict = "sleep"\nttl_s = 5\nest_vram_gb = 8\nest_ram_gb = 16\n`,
    );
    const timers = new FakeTimers();
    const fakes = fakeServers();
    const rt = new Runtime(cfg, {
      clock: timers,
      timers,
      log: createLogger("error", () => {}),
      makeProcess: fakes.make,
    });
    const events: string[] = [];
    rt.subscribe((e) => {
      if (e.type === "model") events.push(`${e.model}:${e.state}:${e.detail ?? ""}`);
    });
    const grant = rt.acquire(cfg.models.v!, new AbortController().signal);
    await settle();
    fakes.of("v").ready();
    (await grant).release();
    const pid = fakes.of("v").pid;
    timers.advance(5000);
    await settle();
    const s = rt.status();
    expect(s.models[0]).toMatchObject({ state: "sleeping", pid });
    expect(s.resources).toMatchObject({ vram_used_gb: 0, ram_used_gb: 16 });
    expect(rt.budget.ramGb()).toBe(48);
    expect(fakes.of("v").sleepLevels).toEqual([1]);
    const again = rt.acquire(cfg.models.v!, new AbortController().signal);
    await settle();
    (await again).release();
    expect(fakes.of("v")).toMatchObject({ wakes: 1, starts: 1, pid });
    expect(rt.status().models[0]!.state).toBe("ready");
    expect(rt.budget.ramGb()).toBe(64);
    expect(events).toContain("v:stopping:to sleep");
    expect(events).toContain("v:sleeping:");
    expect(events).toContain("v:starting:waking");
    // Shutdown stops every process.
    rt.beginShutdown();
    const down = rt.stopAll();
    await settle();
    fakes.of("v").stopped();
    await down;
    expect(fakes.of("v").state).toBe("stopped");
  });
});
