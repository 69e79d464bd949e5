/**
 * A model of llm-d-router's endpoint picker as far as qm's gauges reach it: the core metrics
 * extractor, the `lora-affinity-scorer`, `queue-scorer` and `kv-cache-utilization-scorer`, the
 * weighted sum and the `max-score-picker`. Written from the rules docs/cluster.md records, read
 * in llm-d-router's source (files and commits there); none of its code is copied. The real
 * picker cannot be built on this machine (its Go module is not on the module proxy), so the
 * tests drive this model against real `qm serve` processes.
 */
import { type Family, parseExposition } from "../../../src/observe/exposition.ts";

/**
 * The names the extractor reads for an endpoint of the default engine ("vllm"), llm-d-router
 * `extractor/metrics/factories.go` `defaultEngineConfigs`.
 */
export const MSP = {
  queue: "vllm:num_requests_waiting",
  running: "vllm:num_requests_running",
  kv: "vllm:kv_cache_usage_perc",
  lora: "vllm:lora_requests_info",
} as const;

/** What the extractor keeps of one endpoint (llm-d-router's `fwkdl.Metrics`, the part read here). */
export interface EndpointMetrics {
  waitingQueueSize: number;
  runningRequestsSize: number;
  kvCacheUsagePercent: number;
  activeModels: Set<string>;
  waitingModels: Set<string>;
  maxActiveModels: number;
  /** An extraction updated something (`Metrics.Updated()`): scorers that need it skip others. */
  updated: boolean;
  /** What the extractor could not read (`errors.Join` in `Extract`). */
  errors: string[];
}

export function emptyMetrics(): EndpointMetrics {
  return {
    waitingQueueSize: 0,
    runningRequestsSize: 0,
    kvCacheUsagePercent: 0,
    activeModels: new Set(),
    waitingModels: new Set(),
    maxActiveModels: 0,
    updated: false,
    errors: [],
  };
}

/**
 * A sample's value as `extractValue` reads it (spec.go): a gauge's or a counter's; anything
 * else (untyped, histogram, summary) reads as 0.
 */
function sampleValue(f: Family, i: number): number {
  return f.type === "gauge" || f.type === "counter" ? f.samples[i]!.value : 0;
}

/**
 * A gauge spec's "latest metric" (spec.go `getLatestMetric`): the sample with the greatest
 * timestamp, starting from -1, a later one winning only when strictly greater — with no
 * timestamps (all 0), the first series. A family missing or empty is an error.
 */
function latest(families: Map<string, Family>, name: string): number | string {
  const f = families.get(name);
  if (!f || f.samples.length === 0) return `metric family "${name}" not found`;
  let best = -1;
  let at = -1;
  f.samples.forEach((s, i) => {
    const ts = s.timestamp === null ? 0 : Number(s.timestamp);
    if (ts > at) {
      at = ts;
      best = i;
    }
  });
  return sampleValue(f, best);
}

/** `addAdapters` (extractor.go): split at commas, trim white space, skip empties. */
function adapters(csv: string): Set<string> {
  const out = new Set<string>();
  for (const name of csv.split(",")) {
    const trimmed = name.trim();
    if (trimmed !== "") out.add(trimmed);
  }
  return out;
}

/**
 * One extraction (extractor.go `Extract`) over one scrape's text, onto `into` (a clone of the
 * endpoint's last metrics, as the extractor clones them): each gauge's latest series; of
 * `vllm:lora_requests_info`, the highest-valued series (loraspec.go: a value greater than the
 * best so far, from -1), whose labels fill the model sets (replaced) and `max_lora`.
 */
export function extract(text: string, into: EndpointMetrics): EndpointMetrics {
  const m: EndpointMetrics = {
    ...into,
    activeModels: new Set(into.activeModels),
    waitingModels: new Set(into.waitingModels),
    errors: [],
  };
  const families = new Map(parseExposition(text).map((f) => [f.name, f]));
  const read = (name: string, set: (v: number) => void) => {
    const v = latest(families, name);
    if (typeof v === "string") m.errors.push(v);
    else {
      set(v);
      m.updated = true;
    }
  };
  read(MSP.queue, (v) => {
    m.waitingQueueSize = Math.trunc(v);
  });
  read(MSP.running, (v) => {
    m.runningRequestsSize = Math.trunc(v);
  });
  read(MSP.kv, (v) => {
    m.kvCacheUsagePercent = v;
  });
  const lora = families.get(MSP.lora);
  if (lora && lora.samples.length > 0) {
    let best = -1;
    let at = -1;
    lora.samples.forEach((_, i) => {
      const v = sampleValue(lora, i);
      if (v > best) {
        best = v;
        at = i;
      }
    });
    if (at >= 0) {
      m.activeModels = new Set();
      m.waitingModels = new Set();
      for (const [k, v] of lora.samples[at]!.labels) {
        if (k === "running_lora_adapters") for (const a of adapters(v)) m.activeModels.add(a);
        else if (k === "waiting_lora_adapters") for (const a of adapters(v)) m.waitingModels.add(a);
        else if (k === "max_lora" && v !== "") {
          // strconv.Atoi: an optional sign and decimal digits only.
          if (/^[+-]?\d+$/.test(v)) m.maxActiveModels = Number(v);
          else m.errors.push(`max_lora ${JSON.stringify(v)} is not an integer`);
        }
      }
      m.updated = true;
    }
  }
  return m;
}

/**
 * `lora-affinity-scorer` (scorer/loraaffinity/lora_affinity.go): 1.0 where the model is active,
 * 0.8 where active + waiting models are fewer than `max_lora`, 0.6 where it is waiting, else 0.
 * (A later revision counts the union of the two sets; qm's sets are disjoint, so both agree.)
 */
export function loraAffinity(model: string, e: EndpointMetrics): number {
  if (e.activeModels.has(model)) return 1;
  if (e.activeModels.size + e.waitingModels.size < e.maxActiveModels) return 0.8;
  if (e.waitingModels.has(model)) return 0.6;
  return 0;
}

/**
 * `queue-scorer` (scorer/queuedepth/queue.go): min-max over the endpoints with metrics, the
 * shortest queue 1 and the longest 0, all equal 1; an endpoint without metrics is not scored.
 */
export function queueScores(es: readonly EndpointMetrics[]): (number | null)[] {
  const q = es.map((e) => (e.updated ? e.waitingQueueSize : null));
  const known = q.filter((v): v is number => v !== null);
  const min = Math.min(...known);
  const max = Math.max(...known);
  return q.map((v) => (v === null ? null : max === min ? 1 : (max - v) / (max - min)));
}

/** `kv-cache-utilization-scorer` (scorer/kvcacheutilization): 1 − use; unscored without metrics. */
export function kvScore(e: EndpointMetrics): number | null {
  return e.updated ? 1 - e.kvCacheUsagePercent : null;
}

export interface Weights {
  "lora-affinity-scorer": number;
  "queue-scorer": number;
  "kv-cache-utilization-scorer": number;
}

/** Each scorer's score clamped to 0–1 times its weight, summed (scheduler_profile.go). */
export function scores(model: string, es: readonly EndpointMetrics[], w: Weights): number[] {
  const clamp = (s: number) => Math.min(1, Math.max(0, s));
  const queue = queueScores(es);
  return es.map((e, i) => {
    let total = clamp(loraAffinity(model, e)) * w["lora-affinity-scorer"];
    if (queue[i] !== null) total += clamp(queue[i]!) * w["queue-scorer"];
    const kv = kvScore(e);
    if (kv !== null) total += clamp(kv) * w["kv-cache-utilization-scorer"];
    return total;
  });
}

/**
 * `max-score-picker` (picker/maxscore/picker.go): the highest score; equal scores take turns
 * (its round-robin rotation within a tier), here by a counter the caller keeps.
 */
export function pick(totals: readonly number[], turn = 0): number {
  const best = Math.max(...totals);
  const tier = totals.flatMap((t, i) => (t === best ? [i] : []));
  return tier[turn % tier.length]!;
}

/** One endpoint as the picker sees it: scraped as the data source does, metrics kept. */
export class Endpoint {
  metrics = emptyMetrics();
  lastError: string | null = null;

  constructor(
    readonly name: string,
    /** `http://host:port`: the inference port, where `/metrics` is scraped too. */
    readonly base: string,
  ) {}

  /**
   * One poll (source/http/datasource.go `Dispatch`): `GET /metrics` on the endpoint's own
   * host and port, no credentials, within 1 s (`defaultStepTimeout`), a 200 required; then an
   * extraction. A failed poll leaves the last metrics as they were.
   */
  async poll(): Promise<void> {
    try {
      const res = await fetch(`${this.base}/metrics`, { signal: AbortSignal.timeout(1000) });
      if (res.status !== 200) {
        this.lastError = `unexpected status code ${res.status}`;
        await res.body?.cancel();
        return;
      }
      this.metrics = extract(await res.text(), this.metrics);
      this.lastError = this.metrics.errors[0] ?? null;
    } catch (error) {
      this.lastError = error instanceof Error ? error.message : String(error);
    }
  }
}

/** The picker over some endpoints: poll them all, then choose one for a model. */
export class Picker {
  private turn = 0;

  constructor(
    readonly endpoints: readonly Endpoint[],
    readonly weights: Weights,
  ) {}

  async poll(): Promise<void> {
    await Promise.all(this.endpoints.map((e) => e.poll()));
  }

  choose(model: string): Endpoint {
    const totals = scores(
      model,
      this.endpoints.map((e) => e.metrics),
      this.weights,
    );
    return this.endpoints[pick(totals, this.turn++)]!;
  }
}
