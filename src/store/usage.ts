/**
 * Usage per key × model × hour (`GET /api/usage`, the dashboard): the in-memory book
 * (`src/observe/usage.ts`) is the first place; each row it changes is queued here as its whole
 * value (idempotent: written twice, it is the same row), and the book is refilled from here at
 * start.
 */
import type { Database } from "bun:sqlite";
import type { UsageRow } from "../observe/usage.ts";
import type { Batch } from "./batch.ts";

/** What a usage row's seven numbers take, roughly, beside its names (`Batch.bytesWritten`). */
const USAGE_NUMBERS_BYTES = 56;

export class UsageRows {
  /**
   * Rows queued and not yet written: one write per row per flush, of its values then. The book
   * hands over its own row object each time (one per key × model × hour), so the object is the key.
   */
  private readonly queued = new Set<UsageRow>();

  constructor(
    private readonly db: Database,
    private readonly batch: Batch,
  ) {}

  put(row: UsageRow): void {
    if (this.queued.has(row)) return;
    this.queued.add(row);
    this.batch.add(() => {
      this.queued.delete(row);
      this.db
        .query(
          `INSERT OR REPLACE INTO usage (hour_ms, key, model, requests, prompt_tokens,
             completion_tokens, cached_tokens, wait_ms, swaps) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          row.hour,
          row.key,
          row.model,
          row.requests,
          row.prompt_tokens,
          row.completion_tokens,
          row.cached_tokens,
          row.wait_ms,
          row.swaps,
        );
      // Seven numbers beside the two names.
      return row.key.length + row.model.length + USAGE_NUMBERS_BYTES;
    });
  }

  /** Every row from `sinceMs` on. */
  since(sinceMs: number): UsageRow[] {
    if (this.batch.failed !== null) return [];
    return this.db
      .query<{ hour_ms: number } & Omit<UsageRow, "hour">, [number]>(
        `SELECT hour_ms, key, model, requests, prompt_tokens, completion_tokens, cached_tokens,
           wait_ms, swaps FROM usage WHERE hour_ms >= ? ORDER BY hour_ms`,
      )
      .all(sinceMs)
      .map(({ hour_ms, ...rest }) => ({ hour: hour_ms, ...rest }));
  }
}
