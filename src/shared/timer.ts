/**
 * The one way qm waits. Every timer, delay, interval and timed abort goes through `Timers`,
 * injected, so tests move a fake clock instead of sleeping and assert the order of events rather
 * than elapsed milliseconds; only `realTimers` touches `setTimeout`. (Per-request deadlines are
 * not armed one by one: they join a `Sweep`, ./sweep.ts.) `tests/architecture.test.ts` fails on
 * a raw `setTimeout`, `setInterval` or `AbortSignal.timeout` anywhere else in src/.
 *
 * A timer for any delay, too: `setTimeout` holds at most 2^31 − 1 ms (about 24.8 days); past
 * that Node and Bun fire at once and warn, which turns a far deadline into a busy loop. Long
 * delays are armed in steps, each re-checking how far the deadline still is.
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

/**
 * Resolves in the event loop's next turn, after what this turn wrote has gone out and the I/O
 * waiting meanwhile has run: a long piece of work done a slice per turn holds nothing up.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

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

/**
 * Waits for `work` at most `ms` on `timers`: true when it settled (either way) in time, false
 * when the time ran out first (it keeps running). The timer is cleared either way.
 */
export function within(
  work: Promise<unknown>,
  ms: number,
  timers: Timers = realTimers,
): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = timers.set(() => resolve(false), ms);
    const settled = () => {
      timers.clear(timer);
      resolve(true);
    };
    work.then(settled, settled);
  });
}

/** What `AbortSignal.timeout` aborts with: fetch rejects with it, named `TimeoutError`. */
function timeoutError(): DOMException {
  return new DOMException("timed out", "TimeoutError");
}

/**
 * A signal that aborts (with a `TimeoutError`) once `ms` have passed on `timers`; `ms <= 0`
 * never aborts. `AbortSignal.timeout` on injected timers, and disarmable: `cancel` once the
 * limited work is over, or the timer lives on until it fires.
 */
export function setTimeoutSignal(
  timers: Timers,
  ms: number,
): { signal: AbortSignal; cancel: () => void } {
  const ctl = new AbortController();
  const handle = ms > 0 ? timers.set(() => ctl.abort(timeoutError()), ms) : null;
  return { signal: ctl.signal, cancel: () => handle !== null && timers.clear(handle) };
}

/** A real timer that does not keep the process alive (a fake one has nothing to undo). */
export function unrefTimer(handle: unknown): void {
  (handle as { unref?: () => void } | null)?.unref?.();
}

/**
 * Runs `fn` every `ms` until the returned function is called: one timer at a time, re-armed
 * after each run (a run that overruns delays the next rather than piling up). `unref`: a real
 * timer does not keep the process alive (a background scan).
 */
export function every(
  fn: () => void,
  ms: number,
  timers: Timers = realTimers,
  opts: { unref?: boolean } = {},
): () => void {
  let stopped = false;
  let handle: unknown;
  const arm = () => {
    handle = timers.set(tick, ms);
    if (opts.unref) unrefTimer(handle);
  };
  const tick = () => {
    if (stopped) return;
    fn();
    if (!stopped) arm();
  };
  arm();
  return () => {
    stopped = true;
    timers.clear(handle);
  };
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
