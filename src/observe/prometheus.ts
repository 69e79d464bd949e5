/**
 * qm's Prometheus metrics (text format, `GET /metrics`), on a registry of their own per
 * Gateway (several can live in one process: tests). Names follow Prometheus' rules
 * (https://prometheus.io/docs/practices/naming/): a `qm_` prefix, base units (seconds, bytes),
 * `_total` on counters.
 *
 * Three sources, and no timer of its own:
 * - each finished request's record (`request`): counts, latencies, tokens. This runs for every
 *   request, so its counters are plain sums per series here, handed to prom-client at scrape
 *   time (a counter's `collect`); a prom-client `inc` costs a label check and a hash each;
 * - the runtime's effects as they happen (`swapStarted`/`swapEnded`, `stopped`);
 * - one `GaugeReading` of the runtime's state per scrape for every gauge (gauges.ts).
 */
import { Counter, Histogram, Registry } from "prom-client";
import type { StopReason } from "../scheduler/stop-reason.ts";
import type { HoldChange } from "../scheduler/types.ts";
import { type GaugeReading, Gauges } from "./gauges.ts";
import { type HistogramSeries, SeriesHistogram } from "./histogram.ts";
import { type KeyLoadReading, KeyMetrics } from "./key-metrics.ts";
import { ModelServerGauges, type ProtocolModel, protocolFigures } from "./model-server.ts";
import type { RequestRecord } from "./record.ts";
import { UpstreamMetrics, type UpstreamOptions, type UpstreamTarget } from "./upstream.ts";

/** LLM latencies: a cached short answer in tens of ms, a cold load plus a long answer in minutes. */
const LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** A model load: a second for a small model on a warm disk, minutes for a big one. */
const SWAP_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600];
/** Generation speed: CPU offload at a few tokens/s, a small model on a big GPU at hundreds. */
const TPS_BUCKETS = [1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000];

/** Each stop reason's `qm_evictions_total` label. */
const EVICTION_LABEL: Record<StopReason["kind"], string> = {
  ttl: "ttl",
  keep_alive: "keep_alive",
  unload: "unload",
  // A sleeping model stopped to free the RAM it held for another (scheduler step 3b).
  ram: "budget",
  // Stopped while idle because the GPU's memory ran short (`Scheduler.shed`).
  gpu_pressure: "shed",
  abandoned: "other",
};

interface ApiSeries {
  labels: { model: string; api: string };
  statuses: Map<number, number>;
  duration: HistogramSeries;
  ttft: HistogramSeries;
}

interface ModelSeries {
  labels: { model: string };
  apis: Map<string, ApiSeries>;
  wait: HistogramSeries;
  tps: HistogramSeries;
  /** A count no answer stated stays null (no series). */
  tokens: TokenSums;
}

interface TokenSums {
  prompt: number | null;
  completion: number | null;
  cached: number | null;
}

export interface MetricsSources {
  /** What the gauges show now, read from the runtime's state at each scrape. */
  gauges(): GaugeReading;
  /** Each key's waiting and in-flight requests now (configured keys only); absent: none shown. */
  keys?: (() => KeyLoadReading[]) | undefined;
  /** The model servers whose own metrics are merged in at each scrape (ready, switched on). */
  upstreams?: (() => UpstreamTarget[]) | undefined;
  /** How they are fetched (time limit, size cap, warnings). */
  upstream?: UpstreamOptions | undefined;
  /** Wall-clock milliseconds (the model server protocol's change times); `Date.now` by default. */
  now?: (() => number) | undefined;
}

export class QmMetrics {
  readonly registry = new Registry();
  /**
   * Per model: its label objects, made once (prom-client is handed the same objects on every
   * request), its request counts by API and status and its token sums — summed here and handed
   * to prom-client's counters at scrape time.
   */
  private readonly series = new Map<string, ModelSeries>();
  // The per-request histograms: counted here per series (histogram.ts), shown by prom-client.
  private readonly duration: SeriesHistogram;
  private readonly ttft: SeriesHistogram;
  private readonly tps: SeriesHistogram;
  private readonly wait: SeriesHistogram;
  private readonly swaps: Counter<"model" | "result">;
  private readonly swapDuration: Histogram<"model">;
  private readonly loadFailures: Counter<"model">;
  private readonly stops: Counter<"model" | "reason">;
  private readonly sleeps: Counter<"model" | "result">;
  private readonly wakes: Counter<"model" | "result">;
  private readonly holds: Record<Exclude<HoldChange, "dropped">, Counter<"model">>;
  private readonly holdsDropped: Counter<"model" | "reason">;
  private readonly gauges: Gauges;
  private readonly protocol: ModelServerGauges;
  /** Swaps in progress: when each started (the runtime's clock, ms). */
  private readonly swapStarts = new Map<number, { model: string; at: number }>();
  private readonly upstream: UpstreamMetrics;
  /** Requests served by each peer, by the client's status (`qm_peer_requests_total`). */
  private readonly peerRequests = new Map<string, Map<number, number>>();
  /** Per key × model (`qm_key_*`). */
  private readonly keys: KeyMetrics;

  constructor(private readonly sources: MetricsSources) {
    const registers = [this.registry];
    const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new Counter<L>({ name, help, labelNames, registers });
    const histogram = <L extends string>(
      name: string,
      help: string,
      labelNames: L[],
      buckets: number[],
    ) => new Histogram<L>({ name, help, labelNames, buckets, registers });

    const series = this.series;
    new Counter({
      name: "qm_requests_total",
      help: "Finished requests for a model.",
      labelNames: ["model", "api", "status"],
      registers,
      collect() {
        this.reset();
        for (const m of series.values()) {
          for (const a of m.apis.values()) {
            for (const [status, n] of a.statuses) this.inc({ ...a.labels, status }, n);
          }
        }
      },
    });
    const fast = (name: string, help: string, labelNames: string[], buckets: number[]) =>
      new SeriesHistogram(name, help, labelNames, buckets, this.registry);
    this.duration = fast(
      "qm_request_duration_seconds",
      "From a request's arrival to the end of its answer (waits included).",
      ["model", "api"],
      LATENCY_BUCKETS,
    );
    this.ttft = fast(
      "qm_time_to_first_token_seconds",
      "Streamed answers: from the request's arrival (waits included) to the answer's first chunk.",
      ["model", "api"],
      LATENCY_BUCKETS,
    );
    this.tps = fast(
      "qm_output_tokens_per_second",
      "Streamed answers that stated their completion tokens: tokens over the time from first chunk to end.",
      ["model"],
      TPS_BUCKETS,
    );
    this.wait = fast(
      "qm_queue_wait_seconds",
      "How long a request waited for its model to be granted (queue and load).",
      ["model"],
      LATENCY_BUCKETS,
    );
    const tokenCounter = (name: string, help: string, kind: keyof TokenSums) =>
      new Counter({
        name,
        help,
        labelNames: ["model"],
        registers,
        collect() {
          this.reset();
          for (const m of series.values()) {
            const n = m.tokens[kind];
            if (n !== null) this.inc(m.labels, n);
          }
        },
      });
    tokenCounter("qm_prompt_tokens_total", "Prompt tokens, as answers stated them.", "prompt");
    tokenCounter(
      "qm_completion_tokens_total",
      "Completion tokens, as answers stated them.",
      "completion",
    );
    tokenCounter(
      "qm_cached_tokens_total",
      "Prompt tokens served from the model's cache, as answers stated them.",
      "cached",
    );
    this.swaps = counter("qm_swaps_total", "Model loads (swaps), by how they ended.", [
      "model",
      "result",
    ]);
    this.swapDuration = histogram(
      "qm_swap_duration_seconds",
      "Loads that succeeded: from the swap's start (evictions included) to the model being ready.",
      ["model"],
      SWAP_BUCKETS,
    );
    this.loadFailures = counter("qm_load_failures_total", "Loads that failed.", ["model"]);
    this.stops = counter(
      "qm_evictions_total",
      "Models stopped by qm: by the groups' rules for a swap (swap), to fit a memory budget (budget), idle past their TTL or keep_alive, shed under GPU memory pressure, or unloaded.",
      ["model", "reason"],
    );
    this.sleeps = counter(
      "qm_sleeps_total",
      'Evictions of `evict = "sleep"` models, by how the sleep went: ok (asleep, process kept) or failed (stopped instead). Each is also an eviction in qm_evictions_total.',
      ["model", "result"],
    );
    this.wakes = counter(
      "qm_wakes_total",
      "Sleeping models brought back for a request: ok (woken) or cold (the wake failed and the model was restarted).",
      ["model", "result"],
    );
    this.holds = {
      granted: counter(
        "qm_holds_granted_total",
        "Idle-grace holds granted (renewals included): a model's last request drained with a hold earned.",
        ["model"],
      ),
      expired: counter(
        "qm_holds_expired_total",
        "Holds that ran out with the model still loaded.",
        ["model"],
      ),
      preempted: counter(
        "qm_holds_preempted_total",
        "Holds cut short: a request past its patience evicted the held model.",
        ["model"],
      ),
    };
    this.holdsDropped = counter(
      "qm_holds_dropped_total",
      'Holds dropped for a waiting request: reason "cost" (holding cost more than swapping there and back) or "fairness" (the request reached its bound), under hold_policy = "cost"; or "priority" (a request of a higher-priority key).',
      ["model", "reason"],
    );
    this.gauges = new Gauges(this.registry);
    this.keys = new KeyMetrics(registers, () => sources.keys?.() ?? []);
    this.protocol = new ModelServerGauges(this.registry, sources.now);
    this.upstream = new UpstreamMetrics(this.registry, sources.upstream);
    const peerRequests = this.peerRequests;
    new Counter({
      name: "qm_peer_requests_total",
      help: "Finished requests served by a peer ([peers.NAME]).",
      labelNames: ["peer", "status"],
      registers,
      collect() {
        this.reset();
        for (const [peer, statuses] of peerRequests) {
          for (const [status, n] of statuses) this.inc({ peer, status }, n);
        }
      },
    });
  }

  /** One finished request (the exchange's record). */
  request(r: RequestRecord): void {
    this.keys.request(r);
    if (r.peer !== undefined) {
      const statuses = this.peerRequests.get(r.peer) ?? new Map<number, number>();
      this.peerRequests.set(r.peer, statuses);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
    const m = this.seriesOf(r.model);
    let a = m.apis.get(r.api);
    if (!a) {
      const labels = { model: r.model, api: r.api };
      a = {
        labels,
        statuses: new Map(),
        duration: this.duration.series(labels),
        ttft: this.ttft.series(labels),
      };
      m.apis.set(r.api, a);
    }
    a.statuses.set(r.status, (a.statuses.get(r.status) ?? 0) + 1);
    a.duration.observe(r.duration_ms / 1000);
    if (r.wait_ms !== null) m.wait.observe(r.wait_ms / 1000);
    if (r.ttft_ms !== null) {
      a.ttft.observe(r.ttft_ms / 1000);
      const generating = r.duration_ms - r.ttft_ms;
      if (r.completion_tokens !== null && r.completion_tokens > 0 && generating > 0) {
        m.tps.observe(r.completion_tokens / (generating / 1000));
      }
    }
    const t = m.tokens;
    if (r.prompt_tokens !== null) t.prompt = (t.prompt ?? 0) + r.prompt_tokens;
    if (r.completion_tokens !== null) t.completion = (t.completion ?? 0) + r.completion_tokens;
    if (r.cached_tokens !== null) t.cached = (t.cached ?? 0) + r.cached_tokens;
  }

  private seriesOf(model: string): ModelSeries {
    let m = this.series.get(model);
    if (!m) {
      const labels = { model };
      m = {
        labels,
        apis: new Map(),
        wait: this.wait.series(labels),
        tps: this.tps.series(labels),
        tokens: { prompt: null, completion: null, cached: null },
      };
      this.series.set(model, m);
    }
    return m;
  }

  /**
   * A swap started (`atMs`: the runtime's clock); its evictions count at once: `budget` for
   * those stopped to fit a memory budget, `swap` for those the groups' rules stop.
   */
  swapStarted(
    id: number,
    model: string,
    evict: readonly string[],
    budget: readonly string[],
    atMs: number,
  ): void {
    this.swapStarts.set(id, { model, at: atMs });
    for (const m of evict) {
      this.stops.inc({ model: m, reason: budget.includes(m) ? "budget" : "swap" });
    }
  }

  /** A swap ended: `ok`, failed, or `aborted` (the target was unloaded before it was ready). */
  swapEnded(id: number, result: "ok" | "failed" | "aborted", atMs: number): void {
    const start = this.swapStarts.get(id);
    if (!start) return;
    this.swapStarts.delete(id);
    this.swaps.inc({ model: start.model, result });
    if (result === "ok")
      this.swapDuration.observe({ model: start.model }, (atMs - start.at) / 1000);
    if (result === "failed") this.loadFailures.inc({ model: start.model });
  }

  /** Models stopped outside a swap, with the scheduler's reason. */
  stopped(models: readonly string[], reason: StopReason): void {
    const label = EVICTION_LABEL[reason.kind];
    for (const model of models) this.stops.inc({ model, reason: label });
  }

  /** An `evict = "sleep"` model was put to sleep (`ok`) or could not be and was stopped. */
  slept(model: string, ok: boolean): void {
    this.sleeps.inc({ model, result: ok ? "ok" : "failed" });
  }

  /** A sleeping model was woken (`ok`) or, failing that, restarted cold. */
  woke(model: string, result: "ok" | "cold"): void {
    this.wakes.inc({ model, result });
  }

  /**
   * A model's hold was granted, ran out, was preempted, or was dropped by cost (the scheduler's
   * `holdChanged`; `reason` for `dropped`).
   */
  hold(model: string, change: HoldChange, reason?: string): void {
    if (change === "dropped") this.holdsDropped.inc({ model, reason: reason ?? "cost" });
    else this.holds[change].inc({ model });
  }

  /**
   * The text format, gauges read from the runtime's state now; then the model servers' own metrics,
   * each labelled with its model (upstream.ts), fetched first so that this scrape's
   * `qm_upstream_scrape_*` series describe them and the model server protocol's KV-cache gauge
   * reads them.
   */
  async text(): Promise<string> {
    const targets = this.sources.upstreams?.() ?? [];
    const upstream = await this.upstream.collect(targets);
    const reading = this.sources.gauges();
    const models = [...reading.models];
    this.gauges.set({ ...reading, models });
    const own: ProtocolModel[] = [];
    for (const m of models) {
      if (!m.protocol) continue;
      own.push({
        ready: m.state === "ready",
        loading: m.state === "starting",
        inflight: m.inflight,
        queued: m.queued,
        names: m.protocol.names,
        loadable: m.protocol.loadable,
      });
    }
    this.protocol.set(protocolFigures(own, upstream.kvUsage ?? 0));
    return (await this.registry.metrics()) + upstream.text;
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
