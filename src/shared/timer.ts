/**
 * Timers as qm's time-keeping code takes them: injected, so tests move a fake clock instead of
 * sleeping. And a timer for any delay: `setTimeout` holds at most 2^31 − 1 ms (about 24.8
 * days); past that Node and Bun fire at once and warn, which turns a far deadline into a busy
 * loop. Long delays are armed in steps, each re-checking how far the deadline still is.
 */
const MAX_STEP_MS = 2 ** 31 - 1;

export interface Timers {
  now(): number;
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const realTimers: Timers = {
  now: () => performance.now(),
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as Timer),
};

export function setLongTimeout(
  fn: () => void,
  delayMs: number,
  timers: Timers = realTimers,
): () => void {
  const due = timers.now() + Math.max(0, delayMs);
  let handle: unknown;
  const arm = () => {
    const left = due - timers.now();
    handle = timers.set(
      left > MAX_STEP_MS ? arm : fn,
      Math.max(0, Math.min(MAX_STEP_MS, Math.ceil(left))),
    );
  };
  arm();
  return () => timers.clear(handle);
}

/** How a promise settled: its response or its error; null while it has not yet. */
export type Settled = { ok: true; res: Response } | { ok: false; error: unknown } | null;

/**
 * The promise's outcome if it settles within `ms`, else null (it keeps running). A streaming
 * route waits this long for the upstream's headers before it commits to `200`, so that a quick
 * refusal stays an HTTP error.
 */
export function settleWithin(p: Promise<Response>, ms: number, timers: Timers): Promise<Settled> {
  return new Promise((resolve) => {
    const timer = timers.set(() => resolve(null), ms);
    p.then(
      (res) => {
        timers.clear(timer);
        resolve({ ok: true, res });
      },
      (error) => {
        timers.clear(timer);
        resolve({ ok: false, error });
      },
    );
  });
}
