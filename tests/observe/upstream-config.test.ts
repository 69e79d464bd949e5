/**
 * `scrape_upstream_metrics`: "auto" (the default) is on for llama-server started with
 * `--metrics` and for vLLM, off otherwise; true or false decides; anything else is refused,
 * naming the key.
 */
import { describe, expect, test } from "bun:test";
import { ConfigError } from "../../src/config/errors.ts";
import { mintVariant } from "../../src/config/variant.ts";
import { config } from "../support/config.ts";

const model = (cmd: string, extra = "") =>
  config(`[models.m]\ncmd = "${cmd}"\nproxy = "http://127.0.0.1:9"\n${extra}\n`).models.m!;

describe("scrape_upstream_metrics", () => {
  const auto: [string, boolean][] = [
    ["llama-server --port 1 -m x.gguf --metrics", true],
    ["/opt/llama.cpp/build/bin/llama-server --metrics -m x.gguf", true],
    ["llama-server --port 1 -m x.gguf", false],
    ["vllm serve Qwen/Qwen2.5-7B", true],
    ["python -m vllm.entrypoints.openai.api_server --model x", true],
    ["run-model --metrics", false],
  ];
  for (const [cmd, on] of auto) {
    test(`"auto": ${cmd} → ${on}`, () => {
      expect(model(cmd).scrapeUpstreamMetrics).toBe(on);
    });
  }

  test("an explicit value wins either way", () => {
    expect(
      model("llama-server --metrics", "scrape_upstream_metrics = false").scrapeUpstreamMetrics,
    ).toBe(false);
    expect(model("run-model", "scrape_upstream_metrics = true").scrapeUpstreamMetrics).toBe(true);
    expect(model("run-model", 'scrape_upstream_metrics = "auto"').scrapeUpstreamMetrics).toBe(
      false,
    );
  });

  test("another value is a config error naming the key", () => {
    let error: unknown;
    try {
      model("run-model", 'scrape_upstream_metrics = "yes"');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(String((error as Error).message)).toContain("models.m.scrape_upstream_metrics");
  });

  test("a ?ctx= variant keeps its base's setting", () => {
    const base = model("llama-server --port 1 --metrics");
    expect(mintVariant(base, { ctx: 4096, port: 5, estVramGb: 0 }).scrapeUpstreamMetrics).toBe(
      true,
    );
  });
});
