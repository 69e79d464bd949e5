/** Time reaches the core only through this interface; tests pass a fake one. */
export interface Clock {
  /** Milliseconds, monotonic within a process. */
  now(): number;
}

export const systemClock: Clock = { now: () => performance.now() };
