/**
 * Which models prefetch reads for (src/runtime/prefetch-plan.ts), and which files
 * (src/runtime/prefetch-files.ts `weightFiles`), over configs from the real loader. Pure.
 */
import { describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { weightFiles } from "../../src/runtime/prefetch-files.ts";
import { type PlanInputs, prefetchPlan } from "../../src/runtime/prefetch-plan.ts";
import type { ModelState } from "../../src/scheduler/types.ts";
import { config } from "../support/config.ts";

const models = config(`
[models.a]
cmd = "llama-server -m /m/a.gguf --port \${PORT}"
[models.b]
cmd = "llama-server --model=/m/b-00001-of-00002.gguf --port \${PORT}"
[models.c]
cmd = "llama-server -m /m/c.gguf --port \${PORT}"
prefetch = false
[models.vllm]
cmd = "vllm serve Qwen/Qwen3-8B --port \${PORT}"
[models.a-small]
cmd = "llama-server -m /m/a.gguf -c 4096 --port \${PORT}"
[models.rel]
cmd = "llama-server -m models/r.gguf --port \${PORT}"
`).models;

function plan(over: Partial<PlanInputs> & { states?: Record<string, ModelState> }) {
  const states = over.states ?? {};
  return prefetchPlan({
    models,
    waitingTargets: [],
    queued: [],
    nextPreload: null,
    state: (id) => states[id] ?? "stopped",
    files: weightFiles,
    ...over,
  }).map((p) => `${p.model}: ${p.files.join(" ")}`);
}

describe("weightFiles", () => {
  test("the GGUF after -m or --model, every part of a split model, absolute", () => {
    expect(weightFiles(models.a!)).toEqual(["/m/a.gguf"]);
    expect(weightFiles(models.b!)).toEqual([
      "/m/b-00001-of-00002.gguf",
      "/m/b-00002-of-00002.gguf",
    ]);
    expect(weightFiles(models.rel!)).toEqual([resolve("models/r.gguf")]);
  });

  test("none without a .gguf file in cmd; prefetch = false still names its files", () => {
    expect(weightFiles(models.vllm!)).toEqual([]);
    expect(weightFiles(models.c!)).toEqual(["/m/c.gguf"]);
  });
});

describe("the plan", () => {
  test("swap targets not spawned yet, then the waiting line front first, then the next preload", () => {
    expect(
      plan({ waitingTargets: ["b"], queued: ["rel", "b", "a", "rel"], nextPreload: "a-small" }),
    ).toEqual([
      "b: /m/b-00001-of-00002.gguf /m/b-00002-of-00002.gguf",
      `rel: ${resolve("models/r.gguf")}`,
      "a: /m/a.gguf",
      // a-small's file is a's, already named: it is still planned, with its own progress.
      "a-small: /m/a.gguf",
    ]);
  });

  test("prefetch = false, no GGUF, or a process already up: left out", () => {
    expect(plan({ queued: ["c", "vllm"] })).toEqual([]);
    for (const s of ["ready", "stopping", "sleeping", "starting"] as const) {
      expect({ s, plan: plan({ queued: ["a"], states: { a: s } }) }).toEqual({ s, plan: [] });
    }
    // A swap target that is starting but not spawned is still read for.
    expect(plan({ waitingTargets: ["a"], states: { a: "starting" } })).toEqual(["a: /m/a.gguf"]);
  });

  test("never a file a running model uses, whatever that model's prefetch", () => {
    expect(plan({ queued: ["a-small"], states: { a: "ready" } })).toEqual([]);
    const withC = config(`
[models.c]
cmd = "llama-server -m /m/c.gguf --port \${PORT}"
prefetch = false
[models.c2]
cmd = "llama-server -m /m/c.gguf -c 2048 --port \${PORT}"
`).models;
    expect(plan({ models: withC, queued: ["c2"], states: { c: "ready" } })).toEqual([]);
    expect(plan({ models: withC, queued: ["c2"] })).toEqual(["c2: /m/c.gguf"]);
  });

  test("unknown models (removed by a reload) are skipped", () => {
    expect(plan({ queued: ["gone", "a"], nextPreload: "gone" })).toEqual(["a: /m/a.gguf"]);
  });
});
