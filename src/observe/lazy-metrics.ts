/**
 * The metrics as the runtime counts into them, without prom-client until something serves them.
 *
 * prom-client and qm's registry (prometheus.ts) cost about 2 MB of heap and ~17 000 objects;
 * with no `metrics_listen` and `metrics_on_api = false` (the default) nothing ever reads them, so
 * `metricsFor` hands out `noMetrics`, which counts nothing and loads nothing. When a listener
 * serves them, `LazyMetrics` loads prometheus.ts with a dynamic `import()` (its own chunk of the
 * bundle, evaluated only then) and counts into it; what is counted while it loads waits in a
 * queue and is replayed, in order, once it is there, and a scrape waits for it. Whether metrics
 * are served is read once at start: both keys need a restart (src/runtime/reload-diff.ts).
 *
 * Only types come from prometheus.ts here: they are erased, so this file loads nothing heavy.
 */
import type { StopReason } from "../scheduler/stop-reason.ts";
import type { HoldChange } from "../scheduler/types.ts";
import type { MetricsSources, QmMetrics } from "./prometheus.ts";
import type { RequestRecord } from "./record.ts";

/** What the runtime and the routes use of the metrics (`QmMetrics` is one). */
export type Metrics = Pick<
  QmMetrics,
  "request" | "swapStarted" | "swapEnded" | "stopped" | "slept" | "woke" | "hold" | "text"
> & { readonly contentType: string };

/** The Prometheus text format's content type (prom-client's `Registry.contentType`). */
const TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8";

/** Metrics nobody serves: every count is dropped, and there is nothing to show. */
export const noMetrics: Metrics = {
  request() {},
  swapStarted() {},
  swapEnded() {},
  stopped() {},
  slept() {},
  woke() {},
  hold() {},
  text: async () => "",
  contentType: TEXT_FORMAT,
};

/** The real metrics, loaded on first need; counts made before it is there are replayed. */
export class LazyMetrics implements Metrics {
  private real: QmMetrics | null = null;
  private pending: ((m: QmMetrics) => void)[] = [];
  private readonly loaded: Promise<QmMetrics>;

  constructor(sources: MetricsSources) {
    this.loaded = import("./prometheus.ts").then(({ QmMetrics }) => {
      const real = new QmMetrics(sources);
      for (const count of this.pending) count(real);
      this.pending = [];
      this.real = real;
      return real;
    });
  }

  private count(fn: (m: QmMetrics) => void): void {
    if (this.real) fn(this.real);
    else this.pending.push(fn);
  }

  request(r: RequestRecord): void {
    this.count((m) => m.request(r));
  }

  swapStarted(
    id: number,
    model: string,
    evict: readonly string[],
    budget: readonly string[],
    atMs: number,
  ): void {
    this.count((m) => m.swapStarted(id, model, evict, budget, atMs));
  }

  swapEnded(id: number, result: "ok" | "failed" | "aborted", atMs: number): void {
    this.count((m) => m.swapEnded(id, result, atMs));
  }

  stopped(models: readonly string[], reason: StopReason): void {
    this.count((m) => m.stopped(models, reason));
  }

  slept(model: string, ok: boolean): void {
    this.count((m) => m.slept(model, ok));
  }

  woke(model: string, result: "ok" | "cold"): void {
    this.count((m) => m.woke(model, result));
  }

  hold(model: string, change: HoldChange, reason?: string): void {
    this.count((m) => m.hold(model, change, reason));
  }

  async text(): Promise<string> {
    return (await this.loaded).text();
  }

  get contentType(): string {
    return this.real?.contentType ?? TEXT_FORMAT;
  }
}

/** The metrics qm counts into: real ones when a listener serves them (`served`), else none. */
export function metricsFor(served: boolean, sources: MetricsSources): Metrics {
  return served ? new LazyMetrics(sources) : noMetrics;
}
