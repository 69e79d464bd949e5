/** Gauge readings for tests of the metrics: the models given, the rest of the gauges at rest. */
import type { GaugeReading, ModelGauge } from "../../src/observe/gauges.ts";

export function reading(models: ModelGauge[]): GaugeReading {
  return {
    version: "1",
    uptimeS: 1,
    models,
    queueDepth: 0,
    swapsInProgress: 0,
    vram: { budgetGb: 0, ceilingGb: 0, usedGb: 0 },
    gpu: null,
    gpuReadingAgeS: null,
    peers: [],
  };
}

/** One of this box's models, stopped and idle unless `over` says otherwise; named by id and `aliases`. */
export const gauge = (
  id: string,
  over: Partial<ModelGauge> = {},
  aliases: string[] = [],
): ModelGauge => ({
  id,
  state: "stopped",
  inflight: 0,
  queued: 0,
  leases: 0,
  protocol: { names: [id, ...aliases], loadable: false },
  ...over,
});
