import { describe, expect, test } from "bun:test";
import { modelsToml } from "../support/harness.ts";
import { settle } from "./fake-server.ts";
import { bringUp, swapHarness } from "./swap-harness.ts";

describe("swaps", () => {
  test("the evict set stops first, then the guard is asked, then the target starts", async () => {
    const t = swapHarness(modelsToml("a", "b", "c"));
    await bringUp(t, "a", 1);
    t.runner.startSwap({ id: 2, target: "b", evict: ["a"] });
    await settle();
    expect(t.fakes.of("a").state).toBe("stopping");
    expect(t.fakes.of("b").starts).toBe(0);
    expect(t.guards).toHaveLength(1);
    t.fakes.of("a").stopped();
    await settle();
    expect(t.guards.at(-1)).toEqual({ model: "b", evicted: ["a"] });
    expect(t.fakes.of("b").state).toBe("starting");
    t.fakes.of("b").ready();
    await settle();
    expect(t.events).toEqual(["swapDone 1 ok", "swapDone 2 ok"]);
    expect(t.lines.join("\n")).toContain("swap: stopping a to start b");
  });

  test("a guard refusal fails the swap with cannot_fit; the target never starts", async () => {
    const t = swapHarness(modelsToml("a", "b", "c"));
    t.gate.verdict = { ok: false, message: "cannot start a now: it needs more" };
    t.runner.startSwap({ id: 1, target: "a", evict: [] });
    await settle();
    expect(t.fakes.of("a").starts).toBe(0);
    const r = t.results.get(1);
    expect(r?.ok).toBe(false);
    if (r && !r.ok) expect(r.error).toMatchObject({ code: "cannot_fit", status: 503 });
  });

  test("a start failure is the swap's result, its detail logged once", async () => {
    const t = swapHarness(modelsToml("a", "b", "c"));
    t.runner.startSwap({ id: 1, target: "a", evict: [] });
    await settle();
    t.fakes.of("a").stderr = ["error: no such file"];
    const exit = t.fakes.of("a").crash({ code: 2 });
    await settle();
    const r = t.results.get(1);
    if (!r || r.ok) throw new Error("expected a failed swap");
    expect(r.error.code).toBe("upstream_start_failed");
    expect(r.error.message).toBe(
      'model "a" exited while loading (exit code 2): error: no such file; its output is at /api/models/a/logs',
    );
    expect(r.error.exit).toEqual({
      model: "a",
      code: 2,
      signal: null,
      stderrTail: exit.stderrTail,
    });
    const detailLines = t.lines.filter((l) => l.includes('model "a": last stderr lines'));
    expect(detailLines).toHaveLength(1);
    expect(detailLines[0]).toContain("command: run a");
  });
});

describe("abortSwap", () => {
  test("while the evict set stops: the target never starts; reported once, no stopped()", async () => {
    const t = swapHarness(modelsToml("a", "b", "c"));
    await bringUp(t, "a", 1);
    t.runner.startSwap({ id: 2, target: "b", evict: ["a"] });
    await settle();
    t.runner.abortSwap(2, "unload");
    t.runner.abortSwap(2, "unload"); // once is enough
    await settle();
    expect(t.results.has(2)).toBe(false); // the evictee is still on its way down
    t.fakes.of("a").stopped();
    await settle();
    expect(t.fakes.of("b").starts).toBe(0);
    expect(t.events).toEqual(["swapDone 1 ok", "swapDone 2 model_unloaded"]);
    const r = t.results.get(2);
    if (r && !r.ok) expect(r.error.message).toBe('model "b" was unloaded while it was loading');
    expect(t.lines.join("\n")).toContain("stopping b (unload)");
  });

  test("while the target loads: it is stopped; swapDone waits until it is down", async () => {
    const t = swapHarness(modelsToml("a", "b", "c"));
    t.runner.startSwap({ id: 1, target: "a", evict: [] });
    await settle();
    t.runner.abortSwap(1, "abandoned");
    await settle();
    expect(t.fakes.of("a").state).toBe("stopping");
    expect(t.results.has(1)).toBe(false);
    t.fakes.of("a").stopped();
    await settle();
    expect(t.events).toEqual(["swapDone 1 model_unloaded"]);
    expect(t.gate.released).toBe(1);
  });

  test("a start that won the race is still stopped, and the swap reports the abort", async () => {
    const t = swapHarness(modelsToml("a", "b", "c"));
    t.runner.startSwap({ id: 1, target: "a", evict: [] });
    await settle();
    t.fakes.of("a").ready();
    t.runner.abortSwap(1, "unload"); // before the runner saw the start succeed
    await settle();
    expect(t.results.has(1)).toBe(false);
    t.fakes.of("a").stopped();
    await settle();
    expect(t.events).toEqual(["swapDone 1 model_unloaded"]);
  });

  test("an unknown or finished swap is left alone", async () => {
    const t = swapHarness(modelsToml("a", "b", "c"));
    await bringUp(t, "a", 1);
    t.runner.abortSwap(1, "unload");
    t.runner.abortSwap(99, "unload");
    await settle();
    expect(t.fakes.of("a").state).toBe("ready");
    expect(t.events).toEqual(["swapDone 1 ok"]);
  });
});

describe("stops and exits", () => {
  test("stopModels reports each model once it is down", async () => {
    const t = swapHarness(modelsToml("a", "b", "c"));
    await bringUp(t, "a", 1);
    await bringUp(t, "b", 2);
    t.runner.stopModels(["a", "b"], { kind: "ttl" });
    t.fakes.of("b").stopped();
    await settle();
    expect(t.events.slice(2)).toEqual(["stopped b"]);
    t.fakes.of("a").stopped();
    await settle();
    expect(t.events.slice(2)).toEqual(["stopped b", "stopped a"]);
    expect(t.gate.released).toBe(2);
    expect(t.lines.join("\n")).toContain("stopping a, b (ttl)");
  });

  test("an exit nobody asked for becomes exited() with the exit report", async () => {
    const t = swapHarness(modelsToml("a", "b", "c"));
    await bringUp(t, "a", 1);
    t.fakes.of("a").crash({ code: null, signal: "SIGKILL" });
    expect(t.events).toEqual(["swapDone 1 ok", "exited a upstream_crashed"]);
    expect(t.errors[0]?.message).toBe(
      'model "a" exited unexpectedly (signal SIGKILL); its output is at /api/models/a/logs',
    );
    expect(t.errors[0]?.exit).toMatchObject({ model: "a", code: null, signal: "SIGKILL" });
  });

  test("stopAll stops every model; a swap still evicting then never starts its target", async () => {
    const t = swapHarness(modelsToml("a", "b", "c"));
    await bringUp(t, "a", 1);
    t.runner.startSwap({ id: 2, target: "b", evict: ["a"] });
    await settle();
    let done = false;
    void t.runner.stopAll().then(() => {
      done = true;
    });
    await settle();
    expect(done).toBe(false);
    t.fakes.of("a").stopped();
    await settle();
    expect(done).toBe(true);
    expect(t.fakes.of("b").starts).toBe(0);
    expect(t.events).toEqual(["swapDone 1 ok", "swapDone 2 shutting_down"]);
    for (const id of ["a", "b", "c"]) expect(t.fakes.of(id).state).toBe("stopped");
  });
});
