/**
 * Section (e): what translation costs. The same streamed answer of `tokens` tokens from one
 * text-stamped upstream (stamp-upstream.ts `--stamp-text`), asked for through qm two ways:
 *
 * - passthrough: `POST /v1/chat/completions`, relayed byte for byte;
 * - translated: `POST /v1/messages`, each OpenAI chunk parsed and rewritten as Anthropic
 *   `content_block_delta` events (src/api/anthropic/stream-body.ts, translate/stream.ts).
 *
 * Each token's text is `<sent_ms>|`, the epoch ms at which the upstream wrote it, so the stamp
 * reaches the client on both routes (a side field would not survive translation). Per chunk:
 * the client's receive time of the read that completed the event minus that stamp; the two
 * routes' percentiles are compared, so loopback and the client's own scheduling cancel out.
 * qm's CPU (utime + stime from /proc) is read around each run and divided by the streams.
 *
 * Runs alternate between the routes (P T, then T P, …) and are pooled, so a neighbour that
 * starts or stops mid-way skews both routes rather than one.
 */
import { type StreamResult, stampedStreams } from "./load.ts";
import { cpuMs, log, othersCpu, percentile, round } from "./util.ts";

export type Route = "passthrough" | "translated";

export interface AnthropicSetup {
  qmUrl: string;
  qmPid: number;
  ours: () => number[];
  model: string;
  streams: number;
  tokens: number;
  rounds: number;
}

const WARMUP_TOKENS = 200;

const PATHS: Record<Route, string> = {
  passthrough: "/v1/chat/completions",
  translated: "/v1/messages",
};

/** How each route says the stream ended normally. */
const TERMINATOR: Record<Route, string> = {
  passthrough: "data: [DONE]",
  translated: "event: message_stop",
};

/** A stamped text as it appears in a JSON string on either route: `"<epoch ms>|"`. */
const STAMP = /"(\d+(?:\.\d+)?)\|"/g;

function request(route: Route, model: string, tokens: number): RequestInit {
  const messages = [{ role: "user", content: "stream please" }];
  const body = JSON.stringify({ model, stream: true, max_tokens: tokens, messages });
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (route === "translated") headers["anthropic-version"] = "2023-06-01";
  return { method: "POST", headers, body };
}

/** `streams` concurrent streams of `tokens` stamped tokens through one route. */
function run(s: AnthropicSetup, route: Route, tokens: number): Promise<StreamResult> {
  return stampedStreams({
    url: s.qmUrl + PATHS[route],
    init: request(route, s.model, tokens),
    streams: s.streams,
    expected: tokens,
    end: TERMINATOR[route],
    // Each token's text is `<sent_ms>|`, inside whichever event the route carries it in.
    stamps: (complete) => [...complete.matchAll(STAMP)].map((m) => Number(m[1])),
  });
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

export async function anthropicRuns(s: AnthropicSetup) {
  const routes: Route[] = ["passthrough", "translated"];
  // Shorter streams first: the first /v1/messages request also asks the upstream for its
  // context size (cached after), and the JIT needs a few thousand chunks on each route before
  // its cost per chunk settles (with only 400, the first measured translated run cost ~15%
  // more CPU than the second).
  for (const r of routes) {
    const w = await run(s, r, WARMUP_TOKENS);
    if (w.badStreams > 0) throw new Error(`anthropic warm-up: ${w.badStreams} bad ${r} streams`);
  }
  const acc = {} as Record<Route, { res: StreamResult[]; cpu: number[]; others: number[] }>;
  for (const r of routes) acc[r] = { res: [], cpu: [], others: [] };
  for (let i = 0; i < s.rounds; i++) {
    const order = i % 2 === 0 ? routes : [...routes].reverse();
    for (const r of order) {
      const others = othersCpu(s.ours);
      const cpu0 = cpuMs(s.qmPid);
      const res = await run(s, r, s.tokens);
      acc[r].cpu.push(cpuMs(s.qmPid) - cpu0);
      acc[r].others.push(others());
      acc[r].res.push(res);
      log(
        `anthropic ${r} run ${i + 1}: p50 ${round(percentile(res.latencies, 50))} ms, ` +
          `p99 ${round(percentile(res.latencies, 99))} ms, qm CPU ` +
          `${round((acc[r].cpu.at(-1) ?? 0) / s.streams, 1)} ms/stream`,
      );
    }
  }
  const out = {} as Record<Route, RouteFigures>;
  for (const r of routes) {
    const a = acc[r];
    const latencies = a.res.flatMap((x) => x.latencies);
    const sum = (xs: number[]) => xs.reduce((n, x) => n + x, 0);
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
