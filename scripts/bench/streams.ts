/**
 * Section (b): concurrent SSE streams from the stamp upstream — direct, through the bare
 * forwarder and through qm, one after the other.
 *
 * Method: every chunk carries the epoch ms at which the upstream wrote it (stamp-upstream.ts),
 * and the client subtracts it from the time the read that completed the chunk returned. Both
 * clocks are `performance.timeOrigin + performance.now()` on one machine; `clockCheck` verifies
 * that the upstream's reading falls inside our request's round trip. This gives a true
 * per-chunk one-way latency without comparing two runs; the direct run shows the floor
 * (loopback plus the client's own scheduling with 100 streams in one process).
 */
import { clockCheck, type StreamResult, streamLoad } from "./load.ts";
import type { Target } from "./nonstream.ts";
import { cpuMs, log, othersCpu, percentile, round, rssPeak } from "./util.ts";

export interface StreamSetup {
  urls: Record<Target, string>;
  proxyPid: Record<Target, number | null>;
  ours: () => number[];
  qmPid: number;
  model: string;
  streams: number;
  tokens: number;
}

export interface StreamFigures {
  ms_p50: number;
  ms_p99: number;
  ms_max: number;
  chunks: number;
  reads: number;
  coalesced_reads: number;
  bad_streams: number;
  proxy_cpu_us_per_chunk?: number;
  others_cpu_pct: number;
}

function figures(r: StreamResult, others: number): StreamFigures {
  return {
    ms_p50: round(percentile(r.latencies, 50)),
    ms_p99: round(percentile(r.latencies, 99)),
    ms_max: round(r.latencies.reduce((m, x) => Math.max(m, x), 0)),
    chunks: r.chunks,
    reads: r.reads,
    coalesced_reads: r.coalescedReads,
    bad_streams: r.badStreams,
    others_cpu_pct: others,
  };
}

const PATH = "/v1/chat/completions";

export async function streamRuns(s: StreamSetup) {
  const clock = await clockCheck(`${s.urls.direct}/clock`);
  log(`clock check against the upstream: ${JSON.stringify(clock)}`);
  const out = {} as Record<Target, StreamFigures>;
  let peakRss = 0;
  for (const t of ["direct", "bare", "qm"] as const) {
    // Short streams first, so no path pays first-use costs in the measured run.
    await streamLoad(s.urls[t] + PATH, s.model, s.streams, 20);
    const pid = s.proxyPid[t];
    const cpu0 = pid === null ? 0 : cpuMs(pid);
    const others = othersCpu(s.ours);
    // qm's RSS is sampled only while qm relays: that is the peak under streaming load.
    const sampled = t === "qm" ? rssPeak(() => [s.qmPid]) : null;
    const result = await streamLoad(s.urls[t] + PATH, s.model, s.streams, s.tokens);
    if (sampled) peakRss = Math.max(peakRss, sampled());
    const f = figures(result, others());
    if (pid !== null) f.proxy_cpu_us_per_chunk = round(((cpuMs(pid) - cpu0) * 1000) / f.chunks, 1);
    out[t] = f;
    log(
      `streams ${t}: p50 ${f.ms_p50} ms, p99 ${f.ms_p99} ms, max ${f.ms_max} ms, ` +
        `coalesced reads ${f.coalesced_reads}, others ${f.others_cpu_pct}% CPU`,
    );
  }
  return { ...out, clock, peakRss };
}
