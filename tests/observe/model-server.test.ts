/**
 * The model server protocol's gauges (src/observe/model-server.ts), as an endpoint picker
 * reads them (docs/cluster.md): one series per name, no `model` label; the residency lists
 * disjoint, escaped, sorted by code point, without repeats; `max_lora` a capacity; the info
 * series' value the time its labels last changed; an engine's own `vllm:*` families renamed
 * out of the way; the KV-cache gauge from the engines qm scrapes.
 */
import { describe, expect, test } from "bun:test";
import { type Family, formatFamily, parseExposition } from "../../src/observe/exposition.ts";
import { mergeUpstream } from "../../src/observe/merge.ts";
import {
  adapterEntry,
  adapterList,
  PROTOCOL_NAMES,
  type ProtocolModel,
  protocolFigures,
} from "../../src/observe/model-server.ts";
import { QmMetrics } from "../../src/observe/prometheus.ts";
import { kvUsageOf } from "../../src/observe/upstream.ts";
import { gauge, reading } from "./readings.ts";

const model = (over: Partial<ProtocolModel> & { names: string[] }): ProtocolModel => ({
  ready: false,
  loading: false,
  inflight: 0,
  queued: 0,
  loadable: false,
  ...over,
});

describe("the residency lists", () => {
  test("a comma, a % and white space at either end are escaped; inner spaces are not", () => {
    expect(adapterEntry("a,b")).toBe("a%2Cb");
    expect(adapterEntry("50%")).toBe("50%25");
    expect(adapterEntry(" x y\t")).toBe("%20x y%09");
    expect(adapterEntry("qwen2.5:7b")).toBe("qwen2.5:7b");
    // Escaping is one to one: a name that looks escaped stays apart from the one it looks like.
    expect(adapterEntry("a%2Cb")).not.toBe(adapterEntry("a,b"));
  });

  test("sorted by code point (not UTF-16 units), without repeats or empty entries", () => {
    // U+FB00 sorts before U+1F600 by code point; by UTF-16 units (JS's default) after it.
    const names = ["😀", "ﬀ", "b", "B", "a", "é", "模", "a", ""];
    expect(adapterList(names)).toBe("B,a,b,é,模,ﬀ,😀");
    expect([...names].sort()).not.toEqual(adapterList(names).split(","));
  });

  test("ready models run, loading or waited-for ones wait; never both; counts over all", () => {
    const f = protocolFigures(
      [
        model({ names: ["chat", "gpt-4o-mini"], ready: true, inflight: 2, queued: 3 }),
        model({ names: ["coder"], loading: true, queued: 1 }),
        model({ names: ["embed"], queued: 2 }), // waits behind a swap
        model({ names: ["idle"], loadable: true }),
        model({ names: ["big"] }), // would evict
        model({ names: [], ready: true, inflight: 1, queued: 1 }), // unlisted: counted, not named
      ],
      0.25,
    );
    expect(f).toEqual({
      waiting: 3 + 1 + 2 + 1,
      running: 2 + 1,
      kvUsage: 0.25,
      loadable: 1,
      runningAdapters: "chat,gpt-4o-mini",
      waitingAdapters: "coder,embed",
      maxLora: 4 + 1,
    });
  });

  test("max_lora is what is listed plus the room left, so a full box has no room to show", () => {
    const full = protocolFigures(
      [model({ names: ["a"], ready: true }), model({ names: ["b"] })],
      0,
    );
    expect(full.maxLora).toBe(1);
    const room = protocolFigures(
      [model({ names: ["a"], ready: true }), model({ names: ["b"], loadable: true })],
      0,
    );
    expect(room.maxLora).toBe(2);
    expect(protocolFigures([], 0)).toMatchObject({ maxLora: 0, runningAdapters: "" });
  });

  test("a KV-cache use outside 0–1 (or not a number) is clamped", () => {
    expect(protocolFigures([], 1.7).kvUsage).toBe(1);
    expect(protocolFigures([], -1).kvUsage).toBe(0);
    expect(protocolFigures([], Number.NaN).kvUsage).toBe(0);
  });
});

function family(text: string, name: string): Family | undefined {
  return parseExposition(text).find((f) => f.name === name);
}

describe("in qm's /metrics", () => {
  test("each protocol name is a gauge with exactly one series and no model label", async () => {
    const models = [
      gauge("a", { state: "ready", inflight: 1 }),
      gauge("b", { state: "starting", queued: 2 }),
      // A managed node's model: no protocol part, never reported.
      { id: "node/x", state: "ready" as const, inflight: 5, queued: 5, leases: 0 },
    ];
    const metrics = new QmMetrics({ gauges: () => reading(models), now: () => 1_000_000 });
    const text = await metrics.text();
    for (const name of Object.values(PROTOCOL_NAMES)) {
      const f = family(text, name);
      expect({ name, type: f?.type, series: f?.samples.length }).toEqual({
        name,
        type: "gauge",
        series: 1,
      });
      expect(f!.samples[0]!.labels.map(([k]) => k)).not.toContain("model");
    }
    const value = (name: string) => family(text, name)!.samples[0]!.value;
    expect(value(PROTOCOL_NAMES.waiting)).toBe(2);
    expect(value(PROTOCOL_NAMES.running)).toBe(1);
    expect(value(PROTOCOL_NAMES.kv)).toBe(0);
    const info = family(text, PROTOCOL_NAMES.info)!.samples[0]!;
    expect(Object.fromEntries(info.labels)).toEqual({
      max_lora: "2",
      running_lora_adapters: "a",
      waiting_lora_adapters: "b",
    });
    expect(info.value).toBe(1000);
    // The same under qm's names.
    expect(value("qm_requests_waiting")).toBe(2);
    expect(value("qm_requests_running")).toBe(1);
    expect(Object.fromEntries(family(text, "qm_residency_info")!.samples[0]!.labels)).toEqual({
      max_models: "2",
      running_models: "a",
      waiting_models: "b",
    });
  });

  test("the info series' value moves only when one of its labels does", async () => {
    let now = 5_000;
    let models = [
      gauge("a", { state: "ready" }),
      gauge("b", { protocol: { names: ["b"], loadable: true } }),
    ];
    const metrics = new QmMetrics({ gauges: () => reading(models), now: () => now });
    const infoValue = async () =>
      family(await metrics.text(), PROTOCOL_NAMES.info)!.samples[0]!.value;
    expect(await infoValue()).toBe(5);
    now = 9_000;
    // Busier, but the same residency: the same value.
    models = [gauge("a", { state: "ready", inflight: 3 }), models[1]!];
    expect(await infoValue()).toBe(5);
    // b starts loading: waiting changes, and b is no longer counted as room.
    models = [models[0]!, gauge("b", { state: "starting" })];
    expect(await infoValue()).toBe(9);
    now = 12_500;
    // The room alone changes (max_lora): that is a change too.
    models = [
      models[0]!,
      gauge("b", { state: "starting" }),
      gauge("c", { protocol: { names: ["c"], loadable: true } }),
    ];
    expect(await infoValue()).toBe(12.5);
  });

  test("an engine's own vllm:* families are renamed upstream:vllm:*, never beside qm's", async () => {
    const engine = [
      "# TYPE vllm:num_requests_waiting gauge",
      'vllm:num_requests_waiting{model_name="m"} 7',
      "# TYPE vllm:lora_requests_info gauge",
      'vllm:lora_requests_info{max_lora="4",running_lora_adapters="x",waiting_lora_adapters=""} 1.7e9',
      "# TYPE vllm:e2e_request_latency_seconds histogram",
      'vllm:e2e_request_latency_seconds_bucket{le="+Inf"} 1',
      "vllm:e2e_request_latency_seconds_sum 0.5",
      "vllm:e2e_request_latency_seconds_count 1",
      "# TYPE vllm:kv_cache_usage_perc gauge",
      "vllm:kv_cache_usage_perc 0.4",
      "",
    ].join("\n");
    const metrics = new QmMetrics({
      gauges: () => reading([gauge("m", { state: "ready" })]),
      upstreams: () => [{ model: "m", url: "http://m.test/metrics" }],
      upstream: { fetch: async () => new Response(engine), now: () => 0 },
      now: () => 0,
    });
    const text = await metrics.text();
    const families = parseExposition(text);
    for (const name of Object.values(PROTOCOL_NAMES)) {
      expect({ name, series: families.find((f) => f.name === name)?.samples.length }).toEqual({
        name,
        series: 1,
      });
    }
    expect(text).toContain('upstream:vllm:num_requests_waiting{model="m",model_name="m"} 7');
    expect(text).toContain('upstream:vllm:e2e_request_latency_seconds_count{model="m"} 1');
    expect(text).not.toMatch(/^vllm:[^ {]*\{model=/m);
    // The engine's KV-cache use feeds the protocol's gauge.
    expect(family(text, PROTOCOL_NAMES.kv)!.samples[0]!.value).toBe(0.4);
    expect(family(text, "qm_kv_cache_usage_ratio")!.samples[0]!.value).toBe(0.4);
  });

  test("the KV-cache use: vLLM's, its older name, llama-server's; the busiest engine's", () => {
    const fam = (name: string, value: number) =>
      parseExposition(`# TYPE ${name} gauge\n${name} ${value}\n`);
    expect(kvUsageOf(fam("vllm:gpu_cache_usage_perc", 0.3))).toBe(0.3);
    expect(kvUsageOf(fam("llamacpp:kv_cache_usage_ratio", 0.6))).toBe(0.6);
    expect(kvUsageOf(fam("llamacpp:requests_processing", 3))).toBeNull();
    expect(kvUsageOf(fam("vllm:kv_cache_usage_perc", 2))).toBe(1);
    const merged = mergeUpstream(
      [{ model: "m", families: fam("vllm:kv_cache_usage_perc", 0.5) }],
      () => {},
    );
    expect(merged.map(formatFamily).join("")).toContain(
      'upstream:vllm:kv_cache_usage_perc{model="m"} 0.5',
    );
  });

  test("the busiest of several engines, 0 when none reports", async () => {
    const answers: Record<string, string> = {
      a: "# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio 0.2\n",
      b: "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 0.7\n",
      c: "# TYPE other gauge\nother 1\n",
    };
    let targets = ["a", "b", "c"];
    const metrics = new QmMetrics({
      gauges: () => reading([]),
      upstreams: () => targets.map((model) => ({ model, url: `http://${model}.test/metrics` })),
      upstream: {
        fetch: async (url) => new Response(answers[new URL(url).hostname.split(".")[0]!]),
        now: () => 0,
      },
      now: () => 0,
    });
    const kv = async () => family(await metrics.text(), PROTOCOL_NAMES.kv)!.samples[0]!.value;
    expect(await kv()).toBe(0.7);
    targets = ["c"];
    expect(await kv()).toBe(0);
  });
});
