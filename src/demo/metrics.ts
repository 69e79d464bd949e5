/**
 * The demo upstream's `GET /metrics` (`--metrics`), in the Prometheus text format under
 * llama-server's `llamacpp:` prefix, so qm's merge of model servers' own metrics
 * (`scrape_upstream_metrics`) can be seen and tested without a real engine: a counter, a gauge
 * and a histogram over the inference requests it answers. Without `--metrics` the route
 * answers 501, as llama-server's does.
 */

/** Time to an answer's headers: a cached reply in milliseconds, a slow start in seconds. */
const BOUNDS = [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];

export class DemoMetrics {
  private requests = 0;
  private processing = 0;
  private readonly buckets = new Array<number>(BOUNDS.length).fill(0);
  private sum = 0;

  /** An inference request began; call the returned function once its answer has started. */
  begin(now: () => number): () => void {
    const start = now();
    this.processing++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.processing--;
      this.requests++;
      const seconds = Math.max(0, (now() - start) / 1000);
      this.sum += seconds;
      BOUNDS.forEach((le, i) => {
        if (seconds <= le) this.buckets[i]!++;
      });
    };
  }

  text(): string {
    const h = "llamacpp:request_duration_seconds";
    return [
      "# HELP llamacpp:requests_total Inference requests answered.",
      "# TYPE llamacpp:requests_total counter",
      `llamacpp:requests_total ${this.requests}`,
      "# HELP llamacpp:requests_processing Inference requests being answered now.",
      "# TYPE llamacpp:requests_processing gauge",
      `llamacpp:requests_processing ${this.processing}`,
      `# HELP ${h} Time from an inference request to its answer's start.`,
      `# TYPE ${h} histogram`,
      ...BOUNDS.map((le, i) => `${h}_bucket{le="${le}"} ${this.buckets[i]}`),
      `${h}_bucket{le="+Inf"} ${this.requests}`,
      `${h}_sum ${this.sum}`,
      `${h}_count ${this.requests}`,
      "",
    ].join("\n");
  }
}

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
