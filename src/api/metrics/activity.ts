/**
 * The activity log: the latest finished requests (`GET /api/requests`), in a ring of fixed
 * size — recording one costs a slot write, and the oldest is overwritten. Records hold no
 * prompt or answer text.
 */
import type { RequestRecord } from "../exchange/record.ts";

export class ActivityLog {
  private readonly ring: (RequestRecord | undefined)[];
  /** Where the next record goes. */
  private next = 0;
  private count = 0;

  constructor(readonly size: number) {
    this.ring = new Array(size);
  }

  push(r: RequestRecord): void {
    if (this.size === 0) return;
    this.ring[this.next] = r;
    this.next = (this.next + 1) % this.size;
    if (this.count < this.size) this.count++;
  }

  /** Newest first; at most `limit`, only `model`'s when given. */
  list(opts: { limit?: number | undefined; model?: string | undefined } = {}): RequestRecord[] {
    const limit = opts.limit ?? this.count;
    const out: RequestRecord[] = [];
    for (let i = 1; i <= this.count && out.length < limit; i++) {
      const r = this.ring[(this.next - i + this.size) % this.size]!;
      if (opts.model === undefined || r.model === opts.model) out.push(r);
    }
    return out;
  }
}
