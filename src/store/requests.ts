/**
 * The activity records (`GET /api/requests`), each as its JSON, with its capture when
 * `[activity] capture_persist` is on. After a restart the ring is refilled from here and ids go
 * on from the last; a record the ring no longer holds is read from here by id.
 */
import type { Database } from "bun:sqlite";
import type { CaptureJson } from "../observe/capture.ts";
import type { RequestRecord } from "../observe/record.ts";
import type { Batch } from "./batch.ts";

export class RequestRows {
  constructor(
    private readonly db: Database,
    private readonly batch: Batch,
  ) {}

  /**
   * Queues `r` (its id given). `capture` is read when the queue is written, a second later: by
   * then a streamed answer's capture is complete.
   */
  put(r: RequestRecord, capture: (() => CaptureJson | null) | null): void {
    this.batch.add(() => {
      const c = capture?.() ?? null;
      const record = JSON.stringify(r);
      const captured = c === null ? null : JSON.stringify(c);
      this.db
        .query(
          "INSERT OR REPLACE INTO requests (id, time_ms, key, record, capture) VALUES (?, ?, ?, ?, ?)",
        )
        .run(r.id, r.time, r.key, record, captured);
      return r.key.length + record.length + (captured?.length ?? 0);
    });
  }

  /** The largest id kept (0: none). */
  lastId(): number {
    if (this.batch.failed !== null) return 0;
    return (
      this.db.query<{ id: number | null }, []>("SELECT MAX(id) AS id FROM requests").get()?.id ?? 0
    );
  }

  /** The newest `n` records, oldest first. */
  latest(n: number): RequestRecord[] {
    if (this.batch.failed !== null || n <= 0) return [];
    return this.db
      .query<{ record: string }, [number]>(
        "SELECT record FROM (SELECT id, record FROM requests ORDER BY id DESC LIMIT ?) ORDER BY id",
      )
      .all(n)
      .map((row) => JSON.parse(row.record) as RequestRecord);
  }

  /** Record `id` and its capture (null when none was kept), or null. */
  get(id: number): (RequestRecord & { capture: CaptureJson | null }) | null {
    if (this.batch.failed !== null) return null;
    const row = this.db
      .query<{ record: string; capture: string | null }, [number]>(
        "SELECT record, capture FROM requests WHERE id = ?",
      )
      .get(id);
    if (!row) return null;
    const record = JSON.parse(row.record) as RequestRecord;
    return {
      ...record,
      capture: row.capture === null ? null : (JSON.parse(row.capture) as CaptureJson),
    };
  }
}
