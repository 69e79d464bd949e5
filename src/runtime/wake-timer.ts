import { setLongTimeout, type Timers } from "../shared/timer.ts";

/** The scheduler's one wake timer (`Effects.wakeAt`): each arming replaces the last. */
export class WakeTimer {
  private cancel: (() => void) | null = null;

  constructor(
    private readonly timers: Timers,
    private readonly wake: () => void,
  ) {}

  /** Fires `wake` once the clock reaches `atMs`; null disarms. */
  at(atMs: number | null): void {
    this.disarm();
    if (atMs === null) return;
    // Timers may fire a fraction of a millisecond early; round up so the deadline has passed.
    const delay = Math.max(0, Math.ceil(atMs - this.timers.now()));
    this.cancel = setLongTimeout(
      () => {
        this.cancel = null;
        this.wake();
      },
      delay,
      this.timers,
    );
  }

  disarm(): void {
    this.cancel?.();
    this.cancel = null;
  }
}
