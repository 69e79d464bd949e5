import { realTimers, type Timers } from "./timer.ts";

/** Resolves after `ms` (on `timers`), or early when `signal` aborts. */
export function delay(
  ms: number,
  signal?: AbortSignal,
  timers: Timers = realTimers,
): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      timers.clear(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = timers.set(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
