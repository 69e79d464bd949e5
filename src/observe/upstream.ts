/**
 * At each scrape of qm's `/metrics`, the model servers' own `/metrics` (per model
 * `scrape_upstream_metrics`, ready models only), fetched in parallel, each within a short
 * timeout and a size cap, parsed (`exposition.ts`), labelled with the model and merged
 * (`merge.ts`) after qm's own. A slow, failing or malformed upstream never fails qm's scrape
 * and delays it by at most the timeout: its series are left out, and
 * `qm_upstream_scrape_errors_total{model}` counts it. The same scrape reads each engine's
 * KV-cache use for the model server protocol (`model-server.ts`): the busiest engine's.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import { readAtMost } from "../shared/read-at-most.ts";
import { ExpositionError, type Family, formatFamily, parseExposition } from "./exposition.ts";
import { mergeUpstream, type Scraped } from "./merge.ts";

export interface UpstreamTarget {
  model: string;
  /** The server's metrics URL: the model's `proxy` + `/metrics`. */
  url: string;
}

export interface UpstreamOptions {
  /** Longest wait for one server's whole answer; default 1000 ms. */
  timeoutMs?: number;
  /** Largest answer taken from one server; default 4 MiB. */
  maxBytes?: number;
  /** Where warnings go (a failing server, a dropped family), each said once until it changes. */
  warn?: (line: string) => void;
  /** The HTTP client; the global `fetch` by default. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  /** The abort signal of one fetch's time limit; `AbortSignal.timeout` by default. */
  timeout?: (ms: number) => AbortSignal;
  /** Milliseconds, for the scrape durations; `performance.now` by default. */
  now?: () => number;
}

const ACCEPT = "text/plain;version=0.0.4;q=1,*/*;q=0.1";

/**
 * The gauges engines report their KV-cache use in (0–1): vLLM's (`kv_cache_usage_perc` since
 * its V1 engine, `gpu_cache_usage_perc` before), llama-server's with `--metrics`, SGLang's.
 */
const KV_USAGE = [
  "vllm:kv_cache_usage_perc",
  "vllm:gpu_cache_usage_perc",
  "llamacpp:kv_cache_usage_ratio",
  "sglang:token_usage",
];

/** An engine's KV-cache use from its families: the first of `KV_USAGE` it has, or null. */
export function kvUsageOf(families: readonly Family[]): number | null {
  for (const name of KV_USAGE) {
    const value = families.find((f) => f.name === name)?.samples[0]?.value;
    if (value !== undefined && Number.isFinite(value)) return Math.min(1, Math.max(0, value));
  }
  return null;
}

/** One scrape of the model servers: their merged families' text, and the busiest KV cache. */
export interface UpstreamScrape {
  /** "" when none answered. */
  text: string;
  /** The highest KV-cache use any scraped engine reports (0–1), or null when none does. */
  kvUsage: number | null;
}

export class UpstreamMetrics {
  private readonly errors: Counter<"model">;
  private readonly duration: Gauge<"model">;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  /** The last error said per model (said again only when it changes, or after a success). */
  private readonly failing = new Map<string, string>();
  /** Families whose drop was said, per model. */
  private readonly dropsSaid = new Set<string>();

  constructor(
    registry: Registry,
    private readonly opts: UpstreamOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 1000;
    this.maxBytes = opts.maxBytes ?? 4 * 2 ** 20;
    this.errors = new Counter({
      name: "qm_upstream_scrape_errors_total",
      help: "Scrapes of a model server's own /metrics that failed (timeout, HTTP error, too large, malformed); its series are left out of that scrape.",
      labelNames: ["model"],
      registers: [registry],
    });
    this.duration = new Gauge({
      name: "qm_upstream_scrape_duration_seconds",
      help: "How long the last scrape of a model server's own /metrics took.",
      labelNames: ["model"],
      registers: [registry],
    });
  }

  /** Scrapes every target in parallel: the merged families' text, and the busiest KV cache. */
  async collect(targets: readonly UpstreamTarget[]): Promise<UpstreamScrape> {
    const results = await Promise.all(targets.map((t) => this.scrapeOne(t)));
    this.duration.reset();
    const scraped: Scraped[] = [];
    let kvUsage: number | null = null;
    for (const r of results) {
      this.duration.set({ model: r.model }, r.seconds);
      if ("error" in r) {
        this.errors.inc({ model: r.model });
        if (this.failing.get(r.model) !== r.error) {
          this.failing.set(r.model, r.error);
          this.warn(`metrics of model ${r.model} left out: ${r.error}`);
        }
        continue;
      }
      this.failing.delete(r.model);
      scraped.push({ model: r.model, families: r.families });
      const kv = kvUsageOf(r.families);
      if (kv !== null) kvUsage = Math.max(kvUsage ?? 0, kv);
    }
    const merged = mergeUpstream(scraped, (model, family, why) => {
      const key = `${model}\u0000${family}`;
      if (this.dropsSaid.has(key)) return;
      this.dropsSaid.add(key);
      this.warn(`metrics of model ${model}: family ${family} dropped: ${why}`);
    });
    return { text: merged.map(formatFamily).join(""), kvUsage };
  }

  private warn(line: string): void {
    this.opts.warn?.(line);
  }

  private async scrapeOne(
    t: UpstreamTarget,
  ): Promise<{ model: string; seconds: number } & ({ families: Family[] } | { error: string })> {
    const now = this.opts.now ?? (() => performance.now());
    const start = now();
    const done = (r: { families: Family[] } | { error: string }) => ({
      model: t.model,
      seconds: Math.max(0, (now() - start) / 1000),
      ...r,
    });
    const signal = (this.opts.timeout ?? ((ms) => AbortSignal.timeout(ms)))(this.timeoutMs);
    try {
      // The race keeps the limit even for a client that ignores its signal.
      const text = await Promise.race([this.fetchText(t.url, signal), whenAborted(signal)]);
      return done({ families: parseExposition(text) });
    } catch (error) {
      if (signal.aborted) return done({ error: `no answer within ${this.timeoutMs} ms` });
      if (error instanceof ExpositionError)
        return done({ error: `not the text format: ${error.message}` });
      return done({ error: error instanceof Error ? error.message : String(error) });
    }
  }

  /** The answer's text, refused past `maxBytes` (read no further than that). */
  private async fetchText(url: string, signal: AbortSignal): Promise<string> {
    const fetcher = this.opts.fetch ?? ((u, init) => fetch(u, init));
    const res = await fetcher(url, {
      signal,
      headers: { accept: ACCEPT },
      redirect: "error",
      // A loopback upstream must never go through an HTTP proxy from the environment.
      proxy: false,
    } as RequestInit);
    const tooLarge = () => new Error(`answer larger than ${this.maxBytes} bytes`);
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      throw new Error(`GET ${url} answered HTTP ${res.status}`);
    }
    const bytes = await readAtMost(res, this.maxBytes);
    if (bytes === null) throw tooLarge();
    return new TextDecoder().decode(bytes);
  }
}

/** Rejects once `signal` aborts. */
function whenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(signal.reason ?? new Error("aborted"));
    if (signal.aborted) fail();
    else signal.addEventListener("abort", fail, { once: true });
  });
}
