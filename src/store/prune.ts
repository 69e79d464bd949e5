/**
 * The database's bounds (`[store] max_age_days`, `max_mb`): rows older than the age go; then,
 * while the live pages (the file without its free pages) are past the size, the oldest tenth
 * of the activity records and of the stored Responses go, and the freed pages are given back to
 * the file system (`auto_vacuum = INCREMENTAL`).
 */
import type { Database } from "bun:sqlite";

export interface Bounds {
  maxAgeMs: number;
  maxBytes: number;
}

/** Bytes the live pages take (the file's size without its free pages). */
export function liveBytes(db: Database): number {
  const page = db.query<{ page_size: number }, []>("PRAGMA page_size").get()!.page_size;
  const count = db.query<{ page_count: number }, []>("PRAGMA page_count").get()!.page_count;
  const free = db
    .query<{ freelist_count: number }, []>("PRAGMA freelist_count")
    .get()!.freelist_count;
  return (count - free) * page;
}

/** Keeps the bounds; `now` is wall-clock epoch ms. */
export function prune(db: Database, bounds: Bounds, now: number): void {
  const before = now - bounds.maxAgeMs;
  db.transaction(() => {
    db.query("DELETE FROM requests WHERE time_ms < ?").run(before);
    db.query("DELETE FROM responses WHERE created_ms < ?").run(before);
    db.query("DELETE FROM usage WHERE hour_ms < ?").run(before - 3_600_000);
  })();
  for (let round = 0; round < 20 && liveBytes(db) > bounds.maxBytes; round++) {
    const left = db.transaction(() => {
      let n = 0;
      for (const [table, order] of [
        ["requests", "id"],
        ["responses", "created_ms, rowid"],
      ] as const) {
        const rows = db.query<{ n: number }, []>(`SELECT COUNT(*) AS n FROM ${table}`).get()!.n;
        const cut = Math.max(1, Math.ceil(rows / 10));
        if (rows > 0) {
          db.query(
            `DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} ORDER BY ${order} LIMIT ?)`,
          ).run(cut);
        }
        n += rows;
      }
      return n;
    })();
    if (left === 0) break;
  }
  db.run("PRAGMA incremental_vacuum");
}
