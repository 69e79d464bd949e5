/**
 * A Prometheus histogram for the per-request figures, shown through prom-client's registry
 * (its text format, content type and the rest of `/metrics`) but counted here: prom-client's
 * `observe` validates and hashes the labels on every call, which on qm's hot path cost more
 * than everything else a finished request records. Here each label set is a series made once
 * (`series(labels)`), and observing is a bucket search and three additions. What a scrape shows
 * is exactly what a prom-client `Histogram` with the same buckets would show (tested).
 */
import type { Registry } from "prom-client";

export class HistogramSeries {
  /** Observations per bucket (not cumulative); the last is past every bound (+Inf only). */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > b[i]!) i++;
    this.counts[i]! += 1;
    this.sum += value;
    this.count += 1;
  }
}

/** One sample as prom-client's registry formats it (`le` first, then the series' labels). */
interface Value {
  labels: Record<string, string | number>;
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
  metricName: string;
}

export class SeriesHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly all = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** The series of one label set (the same object for the same values). */
  series(labels: Readonly<Record<string, string>>): HistogramSeries {
    const key = this.labelNames.map((n) => labels[n] ?? "").join("\u0000");
    let s = this.all.get(key);
    if (!s) {
      s = new HistogramSeries({ ...labels }, this.bounds);
      this.all.set(key, s);
    }
    return s;
  }

  reset(): void {
    this.all.clear();
  }

  /** What prom-client's registry formats: cumulative buckets, `+Inf`, `_sum`, `_count`. */
  get(): Promise<{
    name: string;
    help: string;
    type: string;
    values: Value[];
    aggregator: string;
  }> {
    const values: Value[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.all.values()) {
      let acc = 0;
      const shared = s.labels;
      this.bounds.forEach((le, i) => {
        acc += s.counts[i]!;
        values.push({ labels: { le }, sharedLabels: shared, value: acc, metricName: bucket });
      });
      values.push({
        labels: { le: "+Inf" },
        sharedLabels: shared,
        value: s.count,
        metricName: bucket,
      });
      values.push({
        labels: {},
        sharedLabels: shared,
        value: s.sum,
        metricName: `${this.name}_sum`,
      });
      values.push({
        labels: {},
        sharedLabels: shared,
        value: s.count,
        metricName: `${this.name}_count`,
      });
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      values,
      aggregator: this.aggregator,
    });
  }
}
