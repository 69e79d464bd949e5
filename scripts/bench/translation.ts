/**
 * The measurement every translation section shares (Anthropic (e), Ollama (g), Responses (h)):
 * warm both routes up, then alternate passthrough and translated rounds of the same stamped
 * streams, and report qm's CPU per stream and the per-chunk latency of each route, the ratio
 * of their CPU and the latency the translation adds.
 */
import type { StreamResult } from "./load.ts";
import { cpuMs, log, othersCpu, percentile, round } from "./util.ts";

export type Route = "passthrough" | "translated";

export interface TranslationSetup {
  qmUrl: string;
  qmPid: number;
  ours: () => number[];
  model: string;
  streams: number;
  tokens: number;
  rounds: number;
}

export interface RouteFigures {
  cpu_ms_per_stream: number;
  cpu_us_per_chunk: number;
  /** qm CPU per stream of each run, in the order measured, to show the spread. */
  cpu_ms_per_stream_runs: number[];
  chunk_ms_p50: number;
  chunk_ms_p99: number;
  chunk_ms_max: number;
  chunks: number;
  reads: number;
  bad_streams: number;
  others_cpu_pct: number;
}

/** Streams that warm each route's JIT up before anything is measured. */
const WARMUP_TOKENS = 200;

/**
 * `run(route, tokens)` sends `s.streams` concurrent streams of `tokens` stamped tokens through
 * one route. Shorter streams go first, on both routes: the JIT needs a few thousand chunks on
 * each before its cost per chunk settles (and a first translated request may ask the upstream
 * for its context size, cached after).
 */
export async function compareRoutes(
  label: string,
  s: TranslationSetup,
  run: (route: Route, tokens: number) => Promise<StreamResult>,
) {
  const routes: Route[] = ["passthrough", "translated"];
  for (const r of routes) {
    const w = await run(r, WARMUP_TOKENS);
    if (w.badStreams > 0) throw new Error(`${label} warm-up: ${w.badStreams} bad ${r} streams`);
  }
  const acc = {} as Record<Route, { res: StreamResult[]; cpu: number[]; others: number[] }>;
  for (const r of routes) acc[r] = { res: [], cpu: [], others: [] };
  for (let i = 0; i < s.rounds; i++) {
    const order = i % 2 === 0 ? routes : [...routes].reverse();
    for (const r of order) {
      const others = othersCpu(s.ours);
      const cpu0 = cpuMs(s.qmPid);
      const res = await run(r, s.tokens);
      acc[r].cpu.push(cpuMs(s.qmPid) - cpu0);
      acc[r].others.push(others());
      acc[r].res.push(res);
      log(
        `${label} ${r} run ${i + 1}: p50 ${round(percentile(res.latencies, 50))} ms, ` +
          `p99 ${round(percentile(res.latencies, 99))} ms, qm CPU ` +
          `${round((acc[r].cpu.at(-1) ?? 0) / s.streams, 1)} ms/stream`,
      );
    }
  }
  const out = {} as Record<Route, RouteFigures>;
  const sum = (xs: number[]) => xs.reduce((n, x) => n + x, 0);
  for (const r of routes) {
    const a = acc[r];
    const latencies = a.res.flatMap((x) => x.latencies);
    const cpu = sum(a.cpu);
    const chunks = sum(a.res.map((x) => x.chunks));
    out[r] = {
      cpu_ms_per_stream: round(cpu / (s.streams * s.rounds), 1),
      cpu_us_per_chunk: round((cpu * 1000) / chunks, 1),
      cpu_ms_per_stream_runs: a.cpu.map((c) => round(c / s.streams, 1)),
      chunk_ms_p50: round(percentile(latencies, 50)),
      chunk_ms_p99: round(percentile(latencies, 99)),
      chunk_ms_max: round(latencies.reduce((m, x) => Math.max(m, x), 0)),
      chunks,
      reads: sum(a.res.map((x) => x.reads)),
      bad_streams: sum(a.res.map((x) => x.badStreams)),
      others_cpu_pct: round(sum(a.others) / a.others.length, 1),
    };
  }
  const { passthrough, translated } = out;
  return {
    tokens: s.tokens,
    streams: s.streams,
    rounds: s.rounds,
    passthrough,
    translated,
    cpu_ratio: round(translated.cpu_ms_per_stream / passthrough.cpu_ms_per_stream),
    added_ms_p50_over_passthrough: round(translated.chunk_ms_p50 - passthrough.chunk_ms_p50),
    added_ms_p99_over_passthrough: round(translated.chunk_ms_p99 - passthrough.chunk_ms_p99),
  };
}
