/**
 * The per-key series (`qm_key_*`): requests, tokens and wait per key × model, summed from the
 * records, and each configured key's waiting and in-flight requests, read at each scrape.
 * Bounded: keys are the configured names and `anonymous`. Label values are key names, never
 * secrets.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { RequestRecord } from "./record.ts";

/** One key's requests right now (`qm_key_waiting`, `qm_key_inflight`). */
export interface KeyLoadReading {
  key: string;
  waiting: number;
  inflight: number;
}

/** Per key and model: what its requests asked (the `qm_key_*` counters). */
interface KeySeries {
  labels: { key: string; model: string };
  requests: number;
  prompt: number;
  completion: number;
  cached: number;
  waitS: number;
}

export class KeyMetrics {
  private readonly keySeries = new Map<string, KeySeries>();

  /** The per-key series: counters summed in `request`, gauges read at each scrape. */
  constructor(registers: Registry[], loads: () => KeyLoadReading[]) {
    const keySeries = this.keySeries;
    const sum = (name: string, help: string, value: (k: KeySeries) => number) =>
      new Counter({
        name,
        help,
        labelNames: ["key", "model"],
        registers,
        collect() {
          this.reset();
          for (const k of keySeries.values()) this.inc(k.labels, value(k));
        },
      });
    sum(
      "qm_key_requests_total",
      "Finished requests for a model, by the key's name.",
      (k) => k.requests,
    );
    new Counter({
      name: "qm_key_tokens_total",
      help: "Tokens as answers stated them, by the key's name and kind (prompt, completion, cached).",
      labelNames: ["key", "model", "kind"],
      registers,
      collect() {
        this.reset();
        for (const k of keySeries.values()) {
          this.inc({ ...k.labels, kind: "prompt" }, k.prompt);
          this.inc({ ...k.labels, kind: "completion" }, k.completion);
          this.inc({ ...k.labels, kind: "cached" }, k.cached);
        }
      },
    });
    sum(
      "qm_key_wait_seconds_total",
      "Time the key's requests waited for their model (queue and load), summed.",
      (k) => k.waitS,
    );
    const load = (name: string, help: string, value: (r: KeyLoadReading) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ["key"],
        registers,
        collect() {
          this.reset();
          for (const r of loads()) this.set({ key: r.key }, value(r));
        },
      });
    load("qm_key_waiting", "The key's requests waiting for a model now.", (r) => r.waiting);
    load("qm_key_inflight", "The key's requests being answered now.", (r) => r.inflight);
  }

  /** One finished request, counted against its key and model. */
  request(r: RequestRecord): void {
    const id = `${r.key}\u0000${r.model}`;
    let k = this.keySeries.get(id);
    if (!k) {
      k = {
        labels: { key: r.key, model: r.model },
        requests: 0,
        prompt: 0,
        completion: 0,
        cached: 0,
        waitS: 0,
      };
      this.keySeries.set(id, k);
    }
    k.requests++;
    k.prompt += r.prompt_tokens ?? 0;
    k.completion += r.completion_tokens ?? 0;
    k.cached += r.cached_tokens ?? 0;
    k.waitS += (r.wait_ms ?? 0) / 1000;
  }
}
