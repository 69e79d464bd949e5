/**
 * Preload (`server.preload`, `preload = true`): the listed models are loaded at startup, one
 * after another in order, once the listeners are up. A preload only fills room that is free:
 * one the policy cannot admit, or could admit only by evicting something (another preload
 * included), is skipped with a log line. Each load is an ordinary request through the
 * scheduler, so requests arriving meanwhile follow the normal decision tree.
 */
import type { Eviction } from "../policy/types.ts";
import type { Logger } from "../shared/log.ts";

export interface PreloadStatus {
  /** Not tried yet, in order. */
  pending: string[];
  /** Being loaded now, or null. */
  loading: string | null;
  /** Loaded (ready when it was granted). */
  done: string[];
  /** Not loaded, and why (no room, a failed start, shutdown). */
  skipped: { model: string; reason: string }[];
}

export interface PreloadDeps {
  log: Logger;
  /** The policy's answer for loading `model` now, beside what is resident. */
  evictionFor(model: string): Eviction;
  /** Is the model already up or on its way (a request got there first)? */
  active(model: string): boolean;
  /** Loads the model as a request would and lets it go once granted; rejects on failure. */
  load(model: string): Promise<void>;
  /** qm is shutting down: what is left is skipped. */
  closing(): boolean;
}

export class Preload {
  private readonly state: PreloadStatus;
  private started = false;

  constructor(
    order: readonly string[],
    private readonly deps: PreloadDeps,
  ) {
    this.state = { pending: [...order], loading: null, done: [], skipped: [] };
  }

  get configured(): boolean {
    return this.state.done.length + this.state.skipped.length + this.state.pending.length > 0;
  }

  status(): PreloadStatus {
    return {
      pending: [...this.state.pending],
      loading: this.state.loading,
      done: [...this.state.done],
      skipped: this.state.skipped.map((s) => ({ ...s })),
    };
  }

  /** Starts the loads (once); resolves when every one was tried. */
  run(): Promise<void> {
    if (this.started) return Promise.resolve();
    this.started = true;
    return this.next();
  }

  private async next(): Promise<void> {
    for (let id = this.state.pending.shift(); id !== undefined; id = this.state.pending.shift()) {
      await this.one(id);
    }
  }

  private async one(id: string): Promise<void> {
    const { log } = this.deps;
    const skip = (reason: string) => {
      this.state.skipped.push({ model: id, reason });
      log.info(`preload: skipped ${id}: ${reason}`);
    };
    if (this.deps.closing()) return skip("qm is shutting down");
    if (!this.deps.active(id)) {
      const answer = this.deps.evictionFor(id);
      if (!answer.ok) return skip(answer.reason);
      if (answer.evict.length > 0) {
        return skip(`it does not fit beside ${answer.evict.join(", ")} (a preload never evicts)`);
      }
    }
    this.state.loading = id;
    log.info(`preload: loading ${id}`);
    try {
      await this.deps.load(id);
      this.state.done.push(id);
    } catch (err) {
      skip(err instanceof Error ? err.message : String(err));
    } finally {
      this.state.loading = null;
    }
  }
}
