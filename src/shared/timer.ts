/**
 * A timer for any delay. `setTimeout` holds at most 2^31 − 1 ms (about 24.8 days); past that
 * Node and Bun fire at once and warn, which turns a far deadline into a busy loop. Long delays
 * are armed in steps, each re-checking how far the deadline still is.
 */
const MAX_STEP_MS = 2 ** 31 - 1;

export interface TimerApi {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const REAL: TimerApi = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

export function setLongTimeout(
  fn: () => void,
  delayMs: number,
  now = () => Date.now(),
  timers: TimerApi = REAL,
): () => void {
  const due = now() + Math.max(0, delayMs);
  let handle: unknown;
  const arm = () => {
    const left = due - now();
    if (left > MAX_STEP_MS) {
      handle = timers.set(arm, MAX_STEP_MS);
    } else {
      handle = timers.set(fn, Math.max(0, Math.ceil(left)));
    }
  };
  arm();
  return () => timers.clear(handle);
}
