/** Helpers for tests that supervise real processes: captured logs, liveness, deferreds. */
import { readFileSync } from "node:fs";
import { createLogger, type Logger } from "../../src/shared/log.ts";

/**
 * A debug-level logger whose lines land in `lines`, with the time each was written.
 * `waitFor(text)` resolves with that time once a line containing `text` is logged.
 */
export function captureLogger(): {
  log: Logger;
  lines: string[];
  waitFor(text: string): Promise<number>;
} {
  const lines: string[] = [];
  const times: number[] = [];
  const waiters: { text: string; resolve: (t: number) => void }[] = [];
  const log = createLogger("debug", (line) => {
    const now = performance.now();
    lines.push(line);
    times.push(now);
    for (const w of waiters.filter((w) => line.includes(w.text))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(now);
    }
  });
  const waitFor = (text: string) => {
    const i = lines.findIndex((l) => l.includes(text));
    if (i >= 0) return Promise.resolve(times[i] as number);
    return new Promise<number>((resolve) => waiters.push({ text, resolve }));
  };
  return { log, lines, waitFor };
}

/**
 * kill(pid, 0), but a zombie counts as dead: an orphan that was killed waits for init to
 * reap it, and some container inits take their time.
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/PID/stat: "pid (comm) S ..."; comm may contain ") ", so look after the last one.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat[stat.lastIndexOf(")") + 2] !== "Z";
  } catch {
    return true; // no procfs (macOS): trust kill(2)
  }
}

/** A promise with its resolve function, for awaiting callbacks. */
export function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
