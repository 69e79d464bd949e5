/**
 * A peer's circuit breaker, pure and on the caller's clock: closed (up) → a failure opens it
 * for a backoff of 1 s, doubling to at most 60 s → once that passes it is half-open (probing):
 * one request, or the background probe, goes through; success closes it and resets the
 * backoff, failure opens it again for the next backoff. See design.md.
 */

export const FIRST_BACKOFF_MS = 1000;
export const MAX_BACKOFF_MS = 60_000;

export type PeerHealth = "up" | "down" | "probing";

export class Breaker {
  private open = false;
  /** A half-open trial is in flight: nothing else goes through until it ends. */
  private trial = false;
  private backoffMs = 0;
  /** Clock ms until which the peer is down (open); 0 when closed. */
  downUntil = 0;
  lastError: string | null = null;

  /**
   * May a request go to the peer now? "pass" while closed; in half-open only the first asker
   * gets "trial" (its outcome decides, or `abandon` gives the trial back); else "no".
   */
  allow(now: number): "pass" | "trial" | "no" {
    if (!this.open) return "pass";
    if (now < this.downUntil || this.trial) return "no";
    this.trial = true;
    return "trial";
  }

  /** The trial ended saying nothing of the peer (the client left): the next asker may try. */
  abandon(): void {
    this.trial = false;
  }

  /** Would `allow` say yes (without taking the half-open trial)? For routing choices. */
  available(now: number): boolean {
    return !this.open || (now >= this.downUntil && !this.trial);
  }

  succeeded(): void {
    this.open = false;
    this.trial = false;
    this.backoffMs = 0;
    this.downUntil = 0;
  }

  failed(now: number, error: string): void {
    this.backoffMs =
      this.backoffMs === 0 ? FIRST_BACKOFF_MS : Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    this.open = true;
    this.trial = false;
    this.downUntil = now + this.backoffMs;
    this.lastError = error;
  }

  health(now: number): PeerHealth {
    if (!this.open) return "up";
    return this.trial || now >= this.downUntil ? "probing" : "down";
  }
}
