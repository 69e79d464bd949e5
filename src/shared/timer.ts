/**
 * A timer for any delay. `setTimeout` holds at most 2^31 − 1 ms (about 24.8 days); past that
 * Node and Bun fire at once and warn, which turns a far deadline into a busy loop. Long delays
 * are armed in steps, each re-checking how far the deadline still is.
 */
const MAX_STEP_MS = 2 ** 31 - 1;

export function setLongTimeout(
  fn: () => void,
  delayMs: number,
  now = () => Date.now(),
): () => void {
  const due = now() + Math.max(0, delayMs);
  let timer: ReturnType<typeof setTimeout>;
  const arm = () => {
    const left = due - now();
    if (left > MAX_STEP_MS) {
      timer = setTimeout(arm, MAX_STEP_MS);
    } else {
      timer = setTimeout(fn, Math.max(0, Math.ceil(left)));
    }
  };
  arm();
  return () => clearTimeout(timer);
}
