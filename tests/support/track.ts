import type { QmError } from "../../src/shared/errors.ts";

/** Where a promise stands, read after the test let it settle. */
export function track<T>(p: Promise<T>): { done: boolean; value?: T; error?: QmError } {
  const s: { done: boolean; value?: T; error?: QmError } = { done: false };
  p.then(
    (value) => Object.assign(s, { done: true, value }),
    (error: QmError) => Object.assign(s, { done: true, error }),
  );
  return s;
}
