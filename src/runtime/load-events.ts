/**
 * `event: load` on /api/events while models load: one when a load's stage (from its log)
 * changes, and one every `LOAD_EVENT_MS` for each model still loading, so a dashboard or
 * `qm status --watch` shows the progress move without polling status. Nothing is built or
 * published while nobody listens; the ticker runs only while some model is loading.
 */
import type { QmEvent } from "../api/gateway.ts";
import type { Timers } from "../shared/timer.ts";
import type { LoadProgress } from "./load-times.ts";

/** How often a load in progress is reported (the wait-status comments' pace). */
export const LOAD_EVENT_MS = 2000;

export interface LoadEventsDeps {
  timers: Timers;
  progress(id: string): LoadProgress | null;
  publish(event: QmEvent): void;
  listening(): boolean;
}

export class LoadEvents {
  /** Models loading now, each with the stage last reported. */
  private readonly loading = new Map<string, string | null>();
  private timer: unknown = null;

  constructor(private readonly deps: LoadEventsDeps) {}

  /** A model's state changed: `starting` begins its reports, any other state ends them. */
  state(id: string, state: string): void {
    if (state === "starting") {
      this.loading.set(id, null);
      this.arm();
      return;
    }
    this.loading.delete(id);
    if (this.loading.size === 0) this.disarm();
  }

  /** An output line of `id` (already given to its load's stages): report a new stage at once. */
  line(id: string): void {
    if (!this.loading.has(id) || !this.deps.listening()) return;
    const p = this.deps.progress(id);
    const stage = p?.stage ?? null;
    if (p === null || stage === this.loading.get(id)) return;
    this.loading.set(id, stage);
    this.deps.publish(event(id, p));
  }

  /** Stops the ticker (shutdown). */
  close(): void {
    this.loading.clear();
    this.disarm();
  }

  private readonly tick = () => {
    this.timer = null;
    if (this.deps.listening()) {
      for (const id of this.loading.keys()) {
        const p = this.deps.progress(id);
        if (p !== null) this.deps.publish(event(id, p));
      }
    }
    if (this.loading.size > 0) this.arm();
  };

  private arm(): void {
    if (this.timer === null) this.timer = this.deps.timers.set(this.tick, LOAD_EVENT_MS);
  }

  private disarm(): void {
    if (this.timer === null) return;
    this.deps.timers.clear(this.timer);
    this.timer = null;
  }
}

function event(model: string, p: LoadProgress): QmEvent {
  return {
    type: "load",
    model,
    elapsed_ms: Math.round(p.elapsedMs),
    expected_ms: p.expectedMs,
    progress: p.progress ?? null,
    stage: p.stage ?? null,
  };
}
