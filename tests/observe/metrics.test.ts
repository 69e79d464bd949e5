/**
 * Prometheus metrics: a scrape after scripted requests counts them with the right labels; the
 * runtime's swaps and stops are counted; gauges come from the runtime's state at scrape time
 * (and are left out when unknown); `server.metrics_on_api` serves `/metrics` on the API listeners; the
 * metrics listener serves it and nothing else.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GaugeReading } from "../../src/observe/gauges.ts";
import { PROTOCOL_NAMES } from "../../src/observe/model-server.ts";
import { QmMetrics } from "../../src/observe/prometheus.ts";
import { serveMetrics } from "../../src/runtime/serve.ts";
import type { StopReason } from "../../src/scheduler/stop-reason.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { useFakeFetch } from "../support/fake-fetch.ts";
import { fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { appOf, bodyOf, call, post } from "../support/in-process.ts";
import { chunk, completion, sseResponse, sseText } from "../support/openai-answers.ts";
import { colonLint } from "./lint.ts";

const up = useFakeFetch();
const PROTOCOL: string[] = Object.values(PROTOCOL_NAMES);
const TOML = (server = "") =>
  `[server]\nlog_level = "error"\n${server}\n${modelToml("m", up)}${modelToml("n", up)}`;
const chat = (model: string, extra: object = {}) => ({
  model,
  messages: [{ role: "user", content: "hi" }],
  ...extra,
});

/** The value of one sample line: `name{labels} value` with exactly these labels, or null. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(",");
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = (m[2] ?? "").split(",").filter(Boolean).sort().join(",");
    if (got === want) return Number(m[3]);
  }
  return null;
}

describe("requests, as a scrape shows them", () => {
  test("counts by model, API and status; latencies, tokens and first-token times", async () => {
    const gw = fakeGateway(TOML("metrics_on_api = true"));
    gw.states.m = "ready";
    const app = appOf(gw);
    up.answer = () => completion({ content: "x" }, "stop");
    await (await post(app, "/v1/chat/completions", chat("m"))).text();
    await (await post(app, "/v1/chat/completions", chat("m"))).text();
    await (await post(app, "/v1/messages", { ...chat("n"), max_tokens: 9 })).text();
    up.answer = () =>
      sseResponse(
        sseText([
          chunk({ content: "a" }),
          chunk({}, "stop"),
          {
            choices: [],
            usage: {
              prompt_tokens: 5,
              completion_tokens: 2,
              prompt_tokens_details: { cached_tokens: 4 },
            },
          },
        ]),
      );
    await (await post(app, "/v1/chat/completions", chat("m", { stream: true }))).text();
    up.answer = () => Response.json({ error: { message: "no" } }, { status: 400 });
    await (await post(app, "/v1/chat/completions", chat("m"))).text();

    const res = await call(app, "GET", "/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
    const text = await res.text();
    const m = { model: "m" };
    expect(sample(text, "qm_requests_total", { ...m, api: "openai", status: "200" })).toBe(3);
    expect(sample(text, "qm_requests_total", { ...m, api: "openai", status: "400" })).toBe(1);
    expect(sample(text, "qm_requests_total", { model: "n", api: "anthropic", status: "200" })).toBe(
      1,
    );
    expect(sample(text, "qm_request_duration_seconds_count", { ...m, api: "openai" })).toBe(4);
    expect(
      sample(text, "qm_request_duration_seconds_bucket", { ...m, api: "openai", le: "+Inf" }),
    ).toBe(4);
    // Only the stream has a first token.
    expect(sample(text, "qm_time_to_first_token_seconds_count", { ...m, api: "openai" })).toBe(1);
    expect(sample(text, "qm_prompt_tokens_total", m)).toBe(9 + 9 + 5);
    expect(sample(text, "qm_completion_tokens_total", m)).toBe(4 + 4 + 2);
    expect(sample(text, "qm_cached_tokens_total", m)).toBe(4);
    expect(sample(text, "qm_prompt_tokens_total", { model: "n" })).toBe(9);
    expect(sample(text, "qm_queue_wait_seconds_count", m)).toBe(4);
    // Gauges from the state: "m" is ready, "n" too (the fake readies what it grants).
    expect(sample(text, "qm_model_state", { ...m, state: "ready" })).toBe(1);
    expect(sample(text, "qm_model_state", { ...m, state: "stopped" })).toBe(0);
    expect(sample(text, "qm_queue_depth")).toBe(0);
  });

  test("the text is the exposition format: TYPE before samples, every sample line well formed", async () => {
    const gw = fakeGateway(TOML());
    gw.states.m = "ready";
    up.answer = () => completion({ content: "x" }, "stop");
    await (await post(appOf(gw), "/v1/chat/completions", chat("m"))).text();
    const text = await gw.metrics.text();
    const typed = new Set<string>();
    for (const line of text.split("\n")) {
      if (line === "" || line.startsWith("# HELP ")) continue;
      // qm's own names, and the model server protocol's four gauges (vLLM's names).
      const type = /^# TYPE (qm_[a-z_]+|vllm:[a-z_]+) (counter|gauge|histogram)$/.exec(line);
      if (type) {
        if (type[1]!.startsWith("vllm:")) expect(PROTOCOL).toContain(type[1]!);
        typed.add(type[1]!);
        continue;
      }
      const m =
        /^(qm_[a-z_]+?|vllm:[a-z_]+)(_bucket|_sum|_count)?(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+-]+$|^(qm_[a-z_]+?)(_bucket|_count)\{.*le="\+Inf".*\} \d+$/.exec(
          line,
        );
      expect({ line, ok: m !== null }).toEqual({ line, ok: true });
      const base = m![1] ?? m![5]!;
      const known = typed.has(base) || typed.has(base + (m![2] ?? ""));
      expect({ line, typed: known }).toEqual({ line, typed: true });
    }
  });

  test.skipIf(!Bun.which("promtool"))(
    "promtool check metrics accepts a real scrape (skipped where promtool is not on PATH)",
    async () => {
      const gw = fakeGateway(TOML());
      const text = await gw.metrics.text();
      const dir = mkdtempSync(join(tmpdir(), "qm-metrics-"));
      try {
        const file = join(dir, "scrape.txt");
        writeFileSync(file, text);
        const p = Bun.spawnSync(["sh", "-c", `promtool check metrics < ${file}`]);
        // Exit 3 is "linted with problems": the protocol's vLLM names have colons; nothing else.
        const complaints = p.stderr.toString().split("\n").filter(Boolean);
        expect({ rc: p.exitCode, other: complaints.filter((l) => !colonLint(l)) }).toEqual({
          rc: 3,
          other: [],
        });
        expect(complaints).toHaveLength(4);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  test("each gateway has its own registry", async () => {
    const a = fakeGateway(TOML());
    const b = fakeGateway(TOML());
    a.states.m = "ready";
    up.answer = () => completion({ content: "x" }, "stop");
    await (await post(appOf(a), "/v1/chat/completions", chat("m"))).text();
    expect(
      sample(await a.metrics.text(), "qm_requests_total", {
        model: "m",
        api: "openai",
        status: "200",
      }),
    ).toBe(1);
    expect(
      sample(await b.metrics.text(), "qm_requests_total", {
        model: "m",
        api: "openai",
        status: "200",
      }),
    ).toBeNull();
  });
});

function reading(gpu: GaugeReading["gpu"] = null, gpuReadingAgeS: number | null = null) {
  return {
    version: "9.9.9",
    uptimeS: 5,
    models: [],
    queueDepth: 2,
    swapsInProgress: 0,
    vram: { budgetGb: 24, ceilingGb: 22, usedGb: 6.5 },
    gpu,
    gpuReadingAgeS,
    peers: [],
  } satisfies GaugeReading;
}

describe("the runtime's side", () => {
  test("swaps by result with their load time; evictions by reason; load failures", async () => {
    const metrics = new QmMetrics({ gauges: () => reading() });
    metrics.swapStarted(1, "big", ["small", "tiny", "mid"], ["mid"], 1000);
    metrics.swapEnded(1, "ok", 13_500);
    metrics.swapStarted(2, "big", [], [], 20_000);
    metrics.swapEnded(2, "failed", 21_000);
    metrics.swapStarted(3, "big", [], [], 30_000);
    metrics.swapEnded(3, "aborted", 31_000);
    metrics.swapEnded(99, "ok", 40_000); // unknown swap: nothing
    metrics.stopped(["small"], { kind: "ttl" });
    metrics.stopped(["tiny"], { kind: "gpu_pressure" });
    const text = await metrics.text();
    expect(sample(text, "qm_swaps_total", { model: "big", result: "ok" })).toBe(1);
    expect(sample(text, "qm_swaps_total", { model: "big", result: "failed" })).toBe(1);
    expect(sample(text, "qm_swaps_total", { model: "big", result: "aborted" })).toBe(1);
    expect(sample(text, "qm_swap_duration_seconds_sum", { model: "big" })).toBe(12.5);
    expect(sample(text, "qm_swap_duration_seconds_count", { model: "big" })).toBe(1);
    expect(sample(text, "qm_load_failures_total", { model: "big" })).toBe(1);
    expect(sample(text, "qm_evictions_total", { model: "small", reason: "swap" })).toBe(1);
    expect(sample(text, "qm_evictions_total", { model: "small", reason: "ttl" })).toBe(1);
    expect(sample(text, "qm_evictions_total", { model: "mid", reason: "budget" })).toBe(1);
    expect(sample(text, "qm_evictions_total", { model: "mid", reason: "swap" })).toBeNull();
    expect(sample(text, "qm_evictions_total", { model: "tiny", reason: "shed" })).toBe(1);
  });

  test("each stop reason counts under one of a few label values", async () => {
    const metrics = new QmMetrics({ gauges: () => reading() });
    const reasons: [StopReason, string][] = [
      [{ kind: "ttl" }, "ttl"],
      [{ kind: "unload" }, "unload"],
      [{ kind: "keep_alive" }, "keep_alive"],
      [{ kind: "gpu_pressure" }, "shed"],
      [{ kind: "ram", for: "t" }, "budget"],
      [{ kind: "abandoned" }, "other"],
    ];
    for (const [i, [reason]] of reasons.entries()) metrics.stopped([`m${i}`], reason);
    const text = await metrics.text();
    expect(
      reasons.map(([, reason], i) =>
        sample(text, "qm_evictions_total", { model: `m${i}`, reason }),
      ),
    ).toEqual(reasons.map(() => 1));
  });

  test("memory in bytes; the GPU's figures only while a reading is known", async () => {
    let gpu: GaugeReading["gpu"] = null;
    let age: number | null = null;
    const metrics = new QmMetrics({ gauges: () => reading(gpu, age) });
    let text = await metrics.text();
    expect(sample(text, "qm_vram_budget_bytes")).toBe(24 * 2 ** 30);
    expect(sample(text, "qm_vram_used_bytes")).toBe(6.5 * 2 ** 30);
    expect(sample(text, "qm_queue_depth")).toBe(2);
    expect(sample(text, "qm_info", { version: "9.9.9" })).toBe(1);
    expect(text).not.toContain("qm_gpu_");
    gpu = { totalGb: 24, usedGb: 8, foreignGb: 1.5 };
    age = 3;
    text = await metrics.text();
    expect(sample(text, "qm_gpu_memory_foreign_bytes")).toBe(1.5 * 2 ** 30);
    expect(sample(text, "qm_gpu_memory_total_bytes")).toBe(24 * 2 ** 30);
    expect(sample(text, "qm_gpu_reading_age_seconds")).toBe(3);
    gpu = null;
    age = null;
    expect(await metrics.text()).not.toContain("qm_gpu_");
  });
});

describe("where /metrics is served", () => {
  test("not on the API listeners by default; with metrics_on_api, behind the API key", async () => {
    expect((await call(appOf(fakeGateway(TOML())), "GET", "/metrics")).status).toBe(404);
    const app = appOf(fakeGateway(TOML('metrics_on_api = true\napi_keys = ["k"]')));
    expect((await call(app, "GET", "/metrics")).status).toBe(401);
    const ok = await call(app, "GET", "/metrics", null, { authorization: "Bearer k" });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("# TYPE qm_requests_total counter");
  });

  let stop: (() => void) | null = null;
  afterEach(() => {
    stop?.();
    stop = null;
  });

  test("the metrics listener serves GET /metrics and nothing else", async () => {
    const gw = fakeGateway(TOML());
    const server = serveMetrics(gw, "127.0.0.1", 0, silentLogger);
    stop = () => void server.stop(true);
    const base = `http://127.0.0.1:${server.port}`;
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("qm_model_state");
    const head = await fetch(`${base}/metrics`, { method: "HEAD" });
    expect(head.status).toBe(200);
    for (const path of ["/v1/models", "/api/status", "/", "/metrics/x"]) {
      const other = await fetch(base + path);
      expect({ path, status: other.status }).toEqual({ path, status: 404 });
      expect((await bodyOf(other)).error.code).toBe("not_found");
    }
    const post = await fetch(`${base}/metrics`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect((await bodyOf(post)).error.code).toBe("method_not_allowed");
  });
});
