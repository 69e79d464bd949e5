/**
 * A llama-server load's progress read off its log: each stage it prints sets a floor, floors
 * only rise, and the load's shown progress is the larger of that floor and the time's estimate,
 * never going back, under 99% until ready. Fixtures: llama-server's own startup logs, captured
 * from the bundled binary (`~/.cache/qm-llama/bin/llama-server -m tiny-*.gguf -c 512`, at its
 * default verbosity and at `-lv 4`).
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadingStatus } from "../../src/proxy/wait-status.ts";
import { LoadStages, stageOf, stagesOf } from "../../src/runtime/load-stages.ts";
import { LoadTimes } from "../../src/runtime/load-times.ts";
import { Runtime } from "../../src/runtime/runtime.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { track } from "../support/track.ts";
import { fakeServers, settle } from "./fake-server.ts";

const fixture = (name: string) =>
  readFileSync(join(import.meta.dir, "fixtures", name), "utf8").split("\n");

/** The stages a log goes through, in order, with the floor each set. */
function walk(lines: string[]): [string, number][] {
  const s = new LoadStages();
  const seen: [string, number][] = [];
  for (const line of lines) if (s.line(line)) seen.push([s.stage!, s.floor]);
  return seen;
}

describe("stages off llama-server's log", () => {
  test("at its default verbosity: opened, vocabulary, context, slots, loaded, listening", () => {
    const seen = walk(fixture("llama-server-start.txt"));
    expect(seen.map(([stage]) => stage)).toEqual([
      "opening the model",
      "reading the vocabulary",
      "context ready",
      "starting slots",
      "model loaded",
      "listening",
    ]);
    expect(seen.at(-1)![1]).toBe(0.99);
  });

  test("at -lv 4: every stage in load order, the floor rising at each", () => {
    const seen = walk(fixture("llama-server-start-lv4.txt"));
    expect(seen.map(([stage]) => stage)).toEqual([
      "opening the model",
      "fitting to memory",
      "reading metadata",
      "reading the vocabulary",
      "loading tensors",
      "creating the context",
      "allocating the KV cache",
      "context ready",
      "warming up",
      "starting slots",
      "model loaded",
      "listening",
    ]);
    for (let i = 1; i < seen.length; i++) expect(seen[i]![1]).toBeGreaterThan(seen[i - 1]![1]);
  });

  test("a line of an earlier stage seen late takes nothing back", () => {
    const s = new LoadStages();
    s.line("0.03.292.823 I llama_context: constructing llama_context");
    expect(
      s.line("0.01.703.089 I llama_model_loader: loaded meta data with 20 key-value pairs"),
    ).toBe(false);
    expect([s.stage, s.floor]).toEqual(["creating the context", 0.85]);
  });

  test("older builds' bare format and progress dots (one per percent) scale the tensors 15% → 80%", () => {
    // The older format, as llama.cpp printed it (`func: message`, no timestamp), and the dots of
    // its default progress callback (`LLAMA_LOG_CONT(".")` per percent, `\n` at 100%).
    expect(stageOf("llm_load_tensors: offloading 32 repeating layers to GPU")).toEqual({
      floor: 0.15,
      stage: "loading tensors",
    });
    const s = new LoadStages();
    s.line("llm_load_tensors: ggml ctx size =    0.30 MiB");
    s.line(".".repeat(50));
    expect(s.floor).toBeCloseTo(0.475, 10);
    expect(s.stage).toBe("loading tensors");
    s.line(".".repeat(80));
    expect(s.floor).toBeCloseTo(0.8, 10);
    s.line("llama_new_context_with_model: n_ctx      = 4096");
    s.line("main: server is listening on http://127.0.0.1:8080 - starting the main loop");
    expect([s.stage, s.floor]).toEqual(["listening", 0.99]);
  });

  test("another server's lines show no stage", () => {
    const vllm = [
      "INFO 12-01 16:40:01 [api_server.py:1043] vLLM API server version 0.9.1",
      "INFO 12-01 16:40:09 [default_loader.py:272] Loading weights took 4.12 seconds",
      "INFO 12-01 16:40:20 [gpu_model_runner.py:1801] Model loading took 14.9 GiB",
      "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
      "a line that says model loaded and listening on a port",
    ];
    expect(stagesOf(vllm)).toEqual({ floor: 0, stage: null });
  });
});

describe("combined with the time's estimate", () => {
  test("the larger wins, it never goes back, and stays under 99% until ready", () => {
    let now = 0;
    const t = new LoadTimes(() => now);
    t.state("m", "starting");
    now = 10_000;
    t.state("m", "ready"); // one load of 10 s: the next is expected to take as long
    t.state("m", "starting");
    now += 1000;
    expect(t.progress("m")).toMatchObject({ progress: 0.1, stage: null });
    t.line("m", "0.00.010.019 I srv    load_model: loading model '/models/m.gguf'");
    expect(t.progress("m")).toMatchObject({ progress: 0.1, stage: "opening the model" });
    t.line("m", "0.03.292.823 I llama_context: constructing llama_context");
    expect(t.progress("m")!.progress).toBe(0.85);
    now += 8500; // 9.5 s of 10: the time's estimate is ahead again
    expect(t.progress("m")!.progress).toBe(0.95);
    now += 60_000; // far past the expected time
    expect(t.progress("m")).toMatchObject({ progress: 0.99, stage: "creating the context" });
    t.state("m", "ready");
    expect(t.progress("m")).toBeNull();
    // Lines of a ready model change nothing; a new load starts from nothing.
    t.line("m", "0.03.292.823 I llama_context: constructing llama_context");
    t.state("m", "starting");
    expect(t.progress("m")).toMatchObject({ progress: 0, stage: null });
  });

  test("with no load measured before, the stage alone gives the fraction", () => {
    let now = 0;
    const t = new LoadTimes(() => now);
    t.state("m", "starting");
    now = 3000;
    expect(t.progress("m")).toMatchObject({ expectedMs: null, progress: null, stage: null });
    t.line("m", "0.03.272.046 I load_tensors: loading model tensors, this can take a while...");
    expect(t.progress("m")).toMatchObject({ progress: 0.15, stage: "loading tensors" });
  });

  test("the wait-status comment shows the stage after `loading N%`", () => {
    const at = (p: Parameters<typeof loadingStatus>[0]) => loadingStatus(p);
    expect(
      at({ elapsedMs: 3000, expectedMs: 10_000, progress: 0.42, stage: "loading tensors" }),
    ).toBe("qm-status: loading 42% eta 7s (loading tensors)");
    expect(
      at({ elapsedMs: 3000, expectedMs: null, progress: 0.15, stage: "loading tensors" }),
    ).toBe("qm-status: loading 15% (loading tensors)");
    expect(at({ elapsedMs: 3400, expectedMs: null, progress: null, stage: null })).toBe(
      "qm-status: loading 3s",
    );
  });
});

describe("in the runtime", () => {
  test("a starting model's output lines move its status `load` (progress and stage)", async () => {
    const cfg = config(
      `[resources]\ngpu_probe = "off"\n[models.m]\ncmd = "llama-server -m m.gguf --port \${PORT}"\nproxy = "http://127.0.0.1:9"\n`,
    );
    const timers = new FakeTimers();
    const fakes = fakeServers();
    const rt = new Runtime(cfg, {
      clock: timers,
      timers,
      log: silentLogger,
      makeProcess: fakes.make,
    });
    const lease = track(rt.acquire(cfg.models.m!, new AbortController().signal));
    await settle();
    expect(fakes.of("m").state).toBe("starting");
    const load = () => rt.status().models.find((m) => m.id === "m")!.load;
    expect(load()).toMatchObject({ progress: null, stage: null });
    rt.modelLine(
      "m",
      "0.03.272.046 I load_tensors: loading model tensors, this can take a while...",
    );
    expect(load()).toMatchObject({ progress: 0.15, stage: "loading tensors" });
    expect(rt.loadProgress("m")).toMatchObject({ stage: "loading tensors" });
    fakes.of("m").ready();
    await settle();
    expect(lease.value).toBeDefined();
    expect(load()).toBeNull();
  });
});
