import type { Eviction, EvictionPolicy } from "../policy/types.ts";
import type { ModelTable } from "./models.ts";

/**
 * The policy's answers within one event. Every waiter is re-decided on every pass of the drain,
 * and an answer only changes with the models holding memory or their LRU order
 * (`ModelTable.version`) — or, between events, with a reload or the live memory ceiling — so
 * it is kept until either moves.
 */
export class EvictionMemo {
  private readonly answers = new Map<string, Eviction>();
  private at = -1;

  constructor(
    private readonly models: ModelTable,
    private readonly policy: () => EvictionPolicy,
  ) {}

  /** A new event: every answer is asked afresh. */
  clear(): void {
    if (this.answers.size > 0) this.answers.clear();
  }

  /** The policy's answer for bringing `id` in, over the models holding memory now. */
  evictionFor(id: string): Eviction {
    if (this.at !== this.models.version) {
      this.answers.clear();
      this.at = this.models.version;
    }
    let plan = this.answers.get(id);
    if (!plan) {
      plan = this.policy().evictionFor(id, this.models.runningLru());
      this.answers.set(id, plan);
    }
    return plan;
  }
}
