/**
 * Small shared helpers of the benchmark: the cross-process clock, percentiles, free ports,
 * and what /proc says about a process.
 */
import { readFileSync } from "node:fs";

/**
 * Wall-clock epoch milliseconds with sub-millisecond precision, comparable across processes
 * on one machine. Bun's `process.hrtime` counts from each process's own start, so it cannot
 * be compared between the upstream and the client; `timeOrigin + now()` can (checked at run
 * time by `clockCheck` in load.ts: a round trip brackets the other process's reading).
 */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Nearest-rank percentile of an unsorted sample (sorts a copy); NaN when empty. */
export function percentile(sample: readonly number[], p: number): number {
  if (sample.length === 0) return Number.NaN;
  const sorted = Float64Array.from(sample).sort();
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

/** Rounds for the report: three decimals are microseconds when the unit is ms. */
export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/**
 * A port that was free a moment ago: bind port 0, read what the kernel chose, release it.
 * Racy in principle (another process may take it before we do), harmless on a bench box.
 */
export function freePort(): number {
  const server = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: { data() {} },
  });
  const port = server.port;
  server.stop(true);
  return port;
}

/** Resident set size of one process (not its children), in MB; null once it is gone. */
export function rssMb(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

// USER_HZ is 100 on every Linux build that Bun supports (sysconf(_SC_CLK_TCK)).
const TICK_MS = 10;

/** User + system CPU time the process has used so far, in ms (10 ms resolution). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 2 (comm) may contain spaces; everything after its closing paren is space-separated.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // rest[0] is field 3 (state), so utime (14) and stime (15) are rest[11] and rest[12].
    return (Number(rest[11]) + Number(rest[12])) * TICK_MS;
  } catch {
    return Number.NaN;
  }
}

export function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

/** Shell-style single quoting for a word inside a model `cmd` (qm splits it like sh does). */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'"'"'`)}'`;
}
