/**
 * What a followed peer's events say, applied at most every `APPLY_EVERY_MS` (on the injected
 * timers): the first news after a quiet spell at once, what follows within the spell together
 * at its end. In between only the latest status snapshot is kept, unparsed, with the model
 * changes that came after it, so a peer flooding qm with events costs a string assignment each
 * rather than a parse, a table update and an `event: peer` to every listener.
 */
import type { Timers } from "../shared/timer.ts";
import { APPLY_EVERY_MS, MAX_PEER_MODELS } from "./limits.ts";
import type { Offer } from "./route.ts";

/** Applies one batch: the latest status event's data (or null), then the model changes. */
export type ApplyNews = (status: string | null, models: ReadonlyMap<string, Offer>) => void;

export class PeerNews {
  private status: string | null = null;
  private models = new Map<string, Offer>();
  /** Clock ms of the last apply. */
  private appliedAt = Number.NEGATIVE_INFINITY;
  private timer: unknown = null;

  constructor(
    private readonly timers: Timers,
    private readonly applyNews: ApplyNews,
  ) {}

  /** An `event: status`: it replaces everything before it. */
  snapshot(data: string): void {
    this.status = data;
    this.models.clear();
    this.soon();
  }

  /**
   * An `event: model`. False when refused: a model not pending yet while `MAX_PEER_MODELS`
   * are (the table could not take more anyway).
   */
  model(id: string, offer: Offer): boolean {
    if (!this.models.has(id) && this.models.size >= MAX_PEER_MODELS) return false;
    this.models.delete(id); // kept in the order the changes came
    this.models.set(id, offer);
    this.soon();
    return true;
  }

  /** Applies what is pending now (the stream ended or failed: what it said still counts). */
  flush(): void {
    if (this.timer !== null) {
      this.timers.clear(this.timer);
      this.timer = null;
    }
    if (this.status === null && this.models.size === 0) return;
    const { status, models } = this;
    this.status = null;
    this.models = new Map();
    this.appliedAt = this.timers.now();
    this.applyNews(status, models);
  }

  /** Drops what is pending and the timer (the watch stops). */
  stop(): void {
    if (this.timer !== null) this.timers.clear(this.timer);
    this.timer = null;
    this.status = null;
    this.models = new Map();
  }

  private soon(): void {
    if (this.timer !== null) return;
    const wait = this.appliedAt + APPLY_EVERY_MS - this.timers.now();
    if (wait <= 0) {
      this.flush();
      return;
    }
    this.timer = this.timers.set(() => {
      this.timer = null;
      this.flush();
    }, wait);
  }
}
