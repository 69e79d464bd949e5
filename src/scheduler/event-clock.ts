import type { Clock } from "../shared/clock.ts";

/**
 * The clock as one event sees it: read when the event starts, the same for all it decides (a
 * request costs two clock reads, not one per step). Outside an event it reads the real clock.
 */
export class EventClock implements Clock {
  private at: number | null = null;

  constructor(private readonly clock: Clock) {}

  now(): number {
    return this.at ?? this.clock.now();
  }

  begin(): void {
    this.at = this.clock.now();
  }

  end(): void {
    this.at = null;
  }
}
