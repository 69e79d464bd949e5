/**
 * Usage per key × model × hour: what each key asked of each model, hour by hour — requests,
 * prompt / completion / cached tokens (as the answers stated them), the time its requests
 * waited for their model, and the swaps they caused (requests that found their model not
 * loaded). Fed by every finished request's record; read by `GET /api/usage` and the dashboard;
 * kept across restarts by the database (src/store/usage.ts), which refills it at start.
 *
 * Bounded: rows older than the store's `max_age_days` are let go as hours pass; keys are the
 * configured names and models the configured ids, so an hour holds a bounded set of rows.
 */
import type { RequestRecord } from "./record.ts";

const HOUR_MS = 3_600_000;

/** One key's use of one model in one hour (`GET /api/usage`; snake_case as the wire). */
export interface UsageRow {
  /** The hour's start, wall-clock epoch ms. */
  hour: number;
  key: string;
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  /** Milliseconds its requests waited for the model, summed. */
  wait_ms: number;
  /** Its requests that found the model not loaded (each waited for a load). */
  swaps: number;
}

export class UsageBook {
  private readonly rows = new Map<string, UsageRow>();
  private oldestHour = Number.POSITIVE_INFINITY;
  /** The row the last record went to: the next one from the same key and model usually goes there too. */
  private last: UsageRow | null = null;

  constructor(
    /** Rows older than this are let go. */
    private readonly maxAgeMs: number,
    /** Hears every row a record changed (the database queues it). */
    private readonly changed: (row: UsageRow) => void = () => {},
  ) {}

  /** A finished request. */
  add(r: RequestRecord): void {
    const hour = Math.floor(r.time / HOUR_MS) * HOUR_MS;
    const row = this.row(hour, r.key, r.model);
    row.requests++;
    row.prompt_tokens += r.prompt_tokens ?? 0;
    row.completion_tokens += r.completion_tokens ?? 0;
    row.cached_tokens += r.cached_tokens ?? 0;
    row.wait_ms += r.wait_ms ?? 0;
    if (r.swap) row.swaps++;
    this.changed(row);
    if (hour - this.oldestHour > this.maxAgeMs + HOUR_MS) this.prune(hour - this.maxAgeMs);
  }

  /** Rows a database kept (at start): each replaces what the book held for its hour. */
  load(rows: Iterable<UsageRow>): void {
    this.last = null;
    for (const r of rows) {
      this.rows.set(idOf(r.hour, r.key, r.model), { ...r });
      this.oldestHour = Math.min(this.oldestHour, r.hour);
    }
  }

  /**
   * The rows from `since` (epoch ms; the hour it falls in counts) to `until`, hour by hour,
   * only `key`'s when given.
   */
  query(opts: { key?: string | undefined; since: number; until?: number | undefined }): UsageRow[] {
    const from = Math.floor(opts.since / HOUR_MS) * HOUR_MS;
    const out: UsageRow[] = [];
    for (const r of this.rows.values()) {
      if (r.hour < from || (opts.until !== undefined && r.hour > opts.until)) continue;
      if (opts.key !== undefined && r.key !== opts.key) continue;
      out.push({ ...r });
    }
    return out.sort(
      (a, b) => a.hour - b.hour || a.key.localeCompare(b.key) || a.model.localeCompare(b.model),
    );
  }

  get size(): number {
    return this.rows.size;
  }

  private row(hour: number, key: string, model: string): UsageRow {
    const last = this.last;
    if (last !== null && last.hour === hour && last.key === key && last.model === model)
      return last;
    const id = idOf(hour, key, model);
    let row = this.rows.get(id);
    if (!row) {
      row = emptyRow(hour, key, model);
      this.rows.set(id, row);
      this.oldestHour = Math.min(this.oldestHour, hour);
    }
    this.last = row;
    return row;
  }

  private prune(before: number): void {
    this.last = null;
    let oldest = Number.POSITIVE_INFINITY;
    for (const [id, r] of this.rows) {
      if (r.hour < before) this.rows.delete(id);
      else oldest = Math.min(oldest, r.hour);
    }
    this.oldestHour = oldest;
  }
}

function emptyRow(hour: number, key: string, model: string): UsageRow {
  return {
    hour,
    key,
    model,
    requests: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    cached_tokens: 0,
    wait_ms: 0,
    swaps: 0,
  };
}

/** Each key's rows summed (its `hour` the first row's, `model` ""), in the order keys first come. */
export function sumByKey(rows: readonly UsageRow[]): UsageRow[] {
  const by = new Map<string, UsageRow>();
  for (const r of rows) {
    let t = by.get(r.key);
    if (!t) {
      t = emptyRow(r.hour, r.key, "");
      by.set(r.key, t);
    }
    t.requests += r.requests;
    t.prompt_tokens += r.prompt_tokens;
    t.completion_tokens += r.completion_tokens;
    t.cached_tokens += r.cached_tokens;
    t.wait_ms += r.wait_ms;
    t.swaps += r.swaps;
  }
  return [...by.values()];
}

function idOf(hour: number, key: string, model: string): string {
  return `${hour}\u0000${key}\u0000${model}`;
}
