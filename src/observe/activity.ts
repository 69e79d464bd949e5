/**
 * The activity log: the latest finished requests (`GET /api/requests`), in a ring of fixed
 * size — the oldest is overwritten. Records hold no prompt or answer text; with
 * `[activity] capture`, each slot also holds its request's `Capture` (`capture.ts`),
 * shown only by `get` (`GET /api/requests/{id}`), and dropped with its record.
 *
 * Each record gets the next id (1, 2, …): the slot of id `n` is `(n - 1) % size`, so a look-up
 * by id is one index.
 *
 * Kept as columns (typed arrays, and references to strings every request shares: model ids,
 * API names, finish reasons), not as the record objects: a thousand live objects per log would
 * each be copied out of the young heap by the garbage collector, a cost paid on every request.
 * A record object is built again only when the log is read.
 */
import { type Capture, type CaptureJson, type CaptureStore, captureJson } from "./capture.ts";
import type { ApiName, RequestRecord } from "./record.ts";

/** A number column's "null". */
const NONE = -1;

export class ActivityLog {
  /** Where the next record goes. */
  private next = 0;
  private count = 0;
  /** Records ever pushed: the last one's id. */
  private pushed = 0;
  private readonly time: Float64Array;
  private readonly status: Uint16Array;
  /** Bit 0: answered; bit 1: swap. */
  private readonly flags: Uint8Array;
  private readonly nums: Float64Array;
  private readonly model: string[];
  /** Key names: a handful of configured names, shared strings like the model ids. */
  private readonly key: string[];
  private readonly api: ApiName[];
  private readonly finish: (string | null)[];
  /** Each slot's capture; only made when there is a store. */
  private readonly captures: (Capture | null)[];

  /** `store`: where captures are kept (`[activity] capture`), or null. */
  constructor(
    readonly size: number,
    readonly store: CaptureStore | null = null,
  ) {
    this.time = new Float64Array(size);
    this.status = new Uint16Array(size);
    this.flags = new Uint8Array(size);
    this.nums = new Float64Array(size * NUMS);
    this.model = new Array(size);
    this.key = new Array(size);
    this.api = new Array(size);
    this.finish = new Array(size);
    this.captures = store ? new Array(size).fill(null) : [];
  }

  /** Keeps `r` (and its capture), the oldest overwritten; returns the id it gave it. */
  push(r: RequestRecord, capture: Capture | null = null): number {
    const id = ++this.pushed;
    if (this.size === 0) {
      if (capture) this.store?.drop(capture);
      return id;
    }
    const i = this.next;
    this.time[i] = r.time;
    this.status[i] = r.status;
    this.flags[i] = (r.answered ? 1 : 0) | (r.swap ? 2 : 0);
    const n = this.nums;
    const at = i * NUMS;
    n[at] = r.wait_ms ?? NONE;
    n[at + 1] = r.duration_ms;
    n[at + 2] = r.ttft_ms ?? NONE;
    n[at + 3] = r.prompt_tokens ?? NONE;
    n[at + 4] = r.completion_tokens ?? NONE;
    n[at + 5] = r.cached_tokens ?? NONE;
    this.model[i] = r.model;
    this.key[i] = r.key;
    this.api[i] = r.api;
    this.finish[i] = r.finish_reason;
    if (this.store) {
      const old = this.captures[i];
      if (old) this.store.drop(old);
      this.captures[i] = capture;
    }
    this.next = (i + 1) % this.size;
    if (this.count < this.size) this.count++;
    return id;
  }

  /**
   * The record `id` with what was captured of it (null: not captured, or dropped since); null
   * when it is not kept, or — with `key` — not that key's.
   */
  get(id: number, key?: string): (RequestRecord & { capture: CaptureJson | null }) | null {
    if (!Number.isSafeInteger(id) || id < 1 || id > this.pushed) return null;
    if (id <= this.pushed - this.count) {
      const old = this.older?.(id) ?? null;
      return old && (key === undefined || old.key === key) ? old : null;
    }
    const i = (id - 1) % this.size;
    if (key !== undefined && this.key[i] !== key) return null;
    const capture = this.captures[i] ?? null;
    if (capture === null && this.older) {
      // Restored after a restart: its capture, if one was kept, is in the database.
      const old = this.older(id);
      if (old?.capture) return { ...this.at(i, id), capture: old.capture };
    }
    return { ...this.at(i, id), capture: captureJson(capture) };
  }

  /** Newest first; at most `limit`, only `model`'s and only `key`'s when given. */
  list(
    opts: { limit?: number | undefined; model?: string | undefined; key?: string | undefined } = {},
  ): RequestRecord[] {
    const limit = opts.limit ?? this.count;
    const out: RequestRecord[] = [];
    for (let k = 1; k <= this.count && out.length < limit; k++) {
      const i = (this.next - k + this.size) % this.size;
      if (
        (opts.model === undefined || this.model[i] === opts.model) &&
        (opts.key === undefined || this.key[i] === opts.key)
      ) {
        out.push(this.at(i, this.pushed - k + 1));
      }
    }
    return out;
  }

  /**
   * Where a record the ring no longer holds is looked up by id (a database), with what was
   * captured of it; null: nowhere.
   */
  older: ((id: number) => (RequestRecord & { capture: CaptureJson | null }) | null) | null = null;

  /**
   * Refills the ring after a restart with the latest records a database kept (`records`,
   * oldest first, the last one's id `lastId`): the newest run of consecutive ids ending at
   * `lastId` goes back in its slots, and ids go on after `lastId`. Only before the first push.
   */
  restore(records: readonly RequestRecord[], lastId: number): void {
    if (this.pushed !== 0 || !Number.isSafeInteger(lastId) || lastId <= 0) return;
    let from = records.length;
    while (from > 0 && records[from - 1]!.id === lastId - (records.length - from)) from--;
    const run = records.slice(Math.max(from, records.length - this.size));
    this.pushed = lastId - run.length;
    this.next = this.size === 0 ? 0 : this.pushed % this.size;
    for (const r of run) this.push(r);
  }

  private at(i: number, id: number): RequestRecord {
    const n = this.nums;
    const at = i * NUMS;
    const orNull = (v: number) => (v === NONE ? null : v);
    return {
      id,
      time: this.time[i]!,
      key: this.key[i]!,
      model: this.model[i]!,
      api: this.api[i]!,
      status: this.status[i]!,
      answered: (this.flags[i]! & 1) !== 0,
      wait_ms: orNull(n[at]!),
      swap: (this.flags[i]! & 2) !== 0,
      duration_ms: n[at + 1]!,
      ttft_ms: orNull(n[at + 2]!),
      prompt_tokens: orNull(n[at + 3]!),
      completion_tokens: orNull(n[at + 4]!),
      cached_tokens: orNull(n[at + 5]!),
      finish_reason: this.finish[i] ?? null,
    };
  }
}

/** The number columns per record: wait, duration, ttft, prompt, completion, cached. */
const NUMS = 6;
