/**
 * Section (a): non-streamed latency and throughput at 1 and 32 clients against one upstream
 * process, four ways — direct, through the bare forwarder, through the router floor (the bare
 * forwarder plus what any model router must do: scripts/bench/router-floor.ts), through qm.
 *
 * This box's CPUs are shared with whatever else runs on it, and a closed loop on 2 cores is
 * very sensitive to that (direct throughput at 32 clients was seen anywhere from 7k to 21k
 * req/s between runs). So the targets are measured in interleaved rounds, in a rotating order,
 * and the pooled figures compared; every cell also says how busy other processes kept the
 * machine, and how much CPU the proxy process spent per request — a figure that contention
 * disturbs far less than throughput does.
 */
import { closedLoop } from "./load.ts";
import { cpuMs, log, othersCpu, percentile, round } from "./util.ts";

/** The targets of the stream section, which has no router floor. */
export type Target = "direct" | "bare" | "qm";
export type NonStreamTarget = Target | "floor";
export const TARGETS: readonly NonStreamTarget[] = ["direct", "bare", "floor", "qm"];

export interface NonStreamSetup {
  urls: Record<NonStreamTarget, string>;
  /** Proxy process per target (none for direct). */
  proxyPid: Record<NonStreamTarget, number | null>;
  /** Every process of the benchmark, for the "others" CPU figure. */
  ours: () => number[];
  body: string;
  warmupMs: number;
  roundMs: number;
  rounds: number;
}

export interface Cell {
  p50_ms: number;
  p99_ms: number;
  rps: number;
  /** Throughput of each round, in the order measured, to show the spread. */
  rps_rounds: number[];
  requests: number;
  errors: number;
  proxy_cpu_us_per_req?: number;
  others_cpu_pct: number;
}

interface Acc {
  latencies: number[];
  errors: number;
  seconds: number;
  rounds: number[];
  proxyCpuMs: number;
  others: number[];
}

const PATH = "/v1/chat/completions";

export async function nonStreamCells(
  s: NonStreamSetup,
  concurrency: number,
): Promise<Record<NonStreamTarget, Cell>> {
  for (const t of TARGETS) await closedLoop(s.urls[t] + PATH, s.body, concurrency, s.warmupMs);
  const acc = {} as Record<NonStreamTarget, Acc>;
  for (const t of TARGETS) {
    acc[t] = { latencies: [], errors: 0, seconds: 0, rounds: [], proxyCpuMs: 0, others: [] };
  }
  for (let r = 0; r < s.rounds; r++) {
    // Rotate the order so no target always runs right after the same one.
    const order = TARGETS.map((_, i) => TARGETS[(i + r) % TARGETS.length] as NonStreamTarget);
    for (const t of order) {
      const pid = s.proxyPid[t];
      const cpu0 = pid === null ? 0 : cpuMs(pid);
      const others = othersCpu(s.ours);
      const res = await closedLoop(s.urls[t] + PATH, s.body, concurrency, s.roundMs);
      const a = acc[t];
      a.others.push(others());
      if (pid !== null) a.proxyCpuMs += cpuMs(pid) - cpu0;
      for (const x of res.latencies) a.latencies.push(x);
      a.errors += res.errors;
      a.seconds += res.seconds;
      a.rounds.push(round(res.latencies.length / res.seconds, 1));
    }
  }
  const out = {} as Record<NonStreamTarget, Cell>;
  for (const t of TARGETS) {
    const a = acc[t];
    const cell: Cell = {
      p50_ms: round(percentile(a.latencies, 50)),
      p99_ms: round(percentile(a.latencies, 99)),
      rps: round(a.latencies.length / a.seconds, 1),
      rps_rounds: a.rounds,
      requests: a.latencies.length,
      errors: a.errors,
      others_cpu_pct: round(a.others.reduce((x, y) => x + y, 0) / a.others.length, 1),
    };
    if (s.proxyPid[t] !== null) {
      cell.proxy_cpu_us_per_req = round((a.proxyCpuMs * 1000) / a.latencies.length, 1);
    }
    out[t] = cell;
    log(
      `c${concurrency} ${t}: p50 ${cell.p50_ms} ms, p99 ${cell.p99_ms} ms, ${cell.rps} req/s ` +
        `(rounds ${cell.rps_rounds.join(", ")}), others ${cell.others_cpu_pct}% CPU`,
    );
  }
  return out;
}
