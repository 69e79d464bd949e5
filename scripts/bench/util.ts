/**
 * Small shared helpers of the benchmark: the cross-process clock, percentiles, free ports,
 * and what /proc says about a process.
 */
import { readFileSync } from "node:fs";
import { cpus } from "node:os";

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

/** A port that was free a moment ago (the tests' own helper: bind port 0, release it). */
export { freePort } from "../../tests/support/net.ts";

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

/**
 * Samples the summed RSS of `pids()` every `everyMs` until the returned function is called,
 * which gives the highest seen, MB (0 when nothing was sampled).
 */
export function rssPeak(pids: () => readonly number[], everyMs = 25): () => number {
  let peak = 0;
  const sampler = setInterval(() => {
    const now = pids().reduce((n, pid) => n + (rssMb(pid) ?? 0), 0);
    peak = Math.max(peak, now);
  }, everyMs);
  return () => {
    clearInterval(sampler);
    return peak;
  };
}

/** A process's RSS once it has settled: 1 s on, the median of five readings 100 ms apart, MB. */
export async function idleRss(pid: number): Promise<number> {
  await Bun.sleep(1000);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(rssMb(pid) ?? Number.NaN);
    await Bun.sleep(100);
  }
  return round(percentile(samples, 50), 1);
}

/** How long after a load qm's memory is read again: the issue's "a minute after the load". */
export const SETTLE_MS = 60_000;

/** A process's RSS `SETTLE_MS` from now (qm gives freed memory back after a quiet spell), MB. */
export async function settledRss(pid: number): Promise<number> {
  await Bun.sleep(SETTLE_MS);
  return round(rssMb(pid) ?? Number.NaN, 1);
}

/**
 * Drops `file` from the page cache (`dd iflag=nocache count=0`: posix_fadvise DONTNEED over the
 * whole file; read-only, so a running executable can be named). A binary just built or copied
 * is wholly cached, and the kernel then maps its neighbouring pages on each fault: a process
 * started from it shows megabytes more file-backed RSS than one started from a binary read in
 * on demand. The side-by-side runs drop each binary before starting it, so both start alike.
 */
export function dropFromPageCache(file: string): void {
  const dd = Bun.spawnSync(["dd", `if=${file}`, "iflag=nocache", "count=0", "status=none"], {
    stderr: "pipe",
  });
  if (dd.exitCode !== 0) throw new Error(`cannot drop ${file} from the page cache: ${dd.stderr}`);
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

/** Busy CPU time of the whole machine so far, in ms (all cores; steal excluded). */
function machineBusyMs(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] as string;
  // cpu user nice system idle iowait irq softirq steal …
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0)) * TICK_MS;
}

/**
 * Starts watching how much CPU processes other than `ours` used; the returned function gives
 * their share of the whole machine, in %, since the start. Anything well above 0 means
 * something else on the box competed with the measurement and the figures are skewed.
 */
export function othersCpu(ours: () => number[]): () => number {
  const sum = () => ours().reduce((n, pid) => n + (cpuMs(pid) || 0), 0);
  const busy0 = machineBusyMs();
  const ours0 = sum();
  const t0 = performance.now();
  return () => {
    const others = machineBusyMs() - busy0 - (sum() - ours0);
    const capacity = (performance.now() - t0) * cpus().length;
    return round(Math.max(0, (100 * others) / capacity), 1);
  };
}

let tag = "bench";

/** The prefix of every progress line (another script reusing these helpers sets its own). */
export function setLogTag(name: string): void {
  tag = name;
}

export function log(message: string): void {
  process.stderr.write(`[${tag}] ${message}\n`);
}

/** Shell-style single quoting for a word inside a model `cmd` (qm splits it like sh does). */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'"'"'`)}'`;
}

/** Deterministic pseudo-random numbers, so every run measures the same problem. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
