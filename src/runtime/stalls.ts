/**
 * Counts each model's upstream timeouts since its last normal answer, to tell a model that is
 * stuck (wedged GPU kernel, deadlocked server: every request hangs) from one that was merely
 * slow once. `limit` timeouts within `windowMs`, with no answer in between, mean stuck: the
 * runtime then restarts the model. Pure: the caller passes the time.
 */
export class StallStreaks {
  /** Times of the timeouts since the model's last answer, oldest first. */
  private readonly streaks = new Map<string, number[]>();

  constructor(
    readonly limit = 3,
    readonly windowMs = 10 * 60_000,
  ) {}

  /** Records a timeout; `restart` when it completes a streak (which then starts over). */
  stall(id: string, now: number): { count: number; restart: boolean } {
    const times = (this.streaks.get(id) ?? []).filter((t) => now - t < this.windowMs);
    times.push(now);
    if (times.length >= this.limit) {
      this.streaks.delete(id);
      return { count: times.length, restart: true };
    }
    this.streaks.set(id, times);
    return { count: times.length, restart: false };
  }

  /** A normal answer ends the streak. Cheap when nothing stalled: it runs per request. */
  answered(id: string): void {
    if (this.streaks.size > 0) this.streaks.delete(id);
  }
}
