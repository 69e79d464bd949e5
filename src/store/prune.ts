/**
 * The database's bounds (`[store] max_age_days`, `max_mb`): rows older than the age go; then,
 * while the live pages (the file without its free pages) are past the size, the oldest tenth
 * of the activity records and of the stored Responses go, and the freed pages are given back to
 * the file system (`auto_vacuum = INCREMENTAL`).
 *
 * As steps: each statement touches at most `PRUNE_SLICE` rows or `VACUUM_PAGES` pages, and the
 * caller runs the next when it likes — all at once when the file opens, one per turn of the
 * event loop while qm serves (`Batch.startChore`), so a database at its size bound (a tenth of
 * hundreds of thousands of rows, once a minute) holds no stream up for more than a step.
 */
import type { Database } from "bun:sqlite";

export interface Bounds {
  maxAgeMs: number;
  maxBytes: number;
}

/** Rows one step deletes at most (a few ms of a qm thread on this box's disk). */
export const PRUNE_SLICE = 500;
/** Pages one step gives back to the file system at most (512 KiB at SQLite's 4 KiB pages). */
export const VACUUM_PAGES = 128;
/** Size rounds at most: each deletes the oldest tenth, so 20 rounds leave about 12 %. */
const SIZE_ROUNDS = 20;

/** Bytes the live pages take (the file's size without its free pages). */
export function liveBytes(db: Database): number {
  const page = db.query<{ page_size: number }, []>("PRAGMA page_size").get()!.page_size;
  const count = db.query<{ page_count: number }, []>("PRAGMA page_count").get()!.page_count;
  return (count - freePages(db)) * page;
}

function freePages(db: Database): number {
  return db.query<{ freelist_count: number }, []>("PRAGMA freelist_count").get()!.freelist_count;
}

/**
 * About how many rows `table` holds: the span of its rowids, which grow with time and are
 * deleted oldest first. `COUNT(*)` reads the whole table (tens of ms at hundreds of thousands
 * of rows); this reads two ends of its b-tree — each in a query of its own: SQLite reads a
 * lone `MIN` or `MAX` off the index, but both in one select scan the table (25 ms at 300 000).
 */
function rowSpan(db: Database, table: string): number {
  const r = db
    .query<{ lo: number | null; hi: number | null }, []>(
      `SELECT (SELECT MIN(rowid) FROM ${table}) AS lo, (SELECT MAX(rowid) FROM ${table}) AS hi`,
    )
    .get()!;
  return r.lo === null || r.hi === null ? 0 : r.hi - r.lo + 1;
}

/** Deletes `table`'s rows where `column < cutoff`, `PRUNE_SLICE` per step. */
function* deleteOlder(db: Database, table: string, column: string, cutoff: number) {
  const del = db.query(
    `DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE ${column} < ? LIMIT ${PRUNE_SLICE})`,
  );
  while (del.run(cutoff).changes > 0) yield;
}

/** Deletes `table`'s oldest `count` rows (by `order`), `PRUNE_SLICE` per step. */
function* deleteOldest(db: Database, table: string, order: string, count: number) {
  const del = db.query(
    `DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} ORDER BY ${order} LIMIT ?)`,
  );
  for (let left = count; left > 0; left -= PRUNE_SLICE) {
    if (del.run(Math.min(left, PRUNE_SLICE)).changes === 0) return;
    yield;
  }
}

/** Keeps the bounds, a bounded step per `next()`; `now` is wall-clock epoch ms. */
export function* pruneSteps(db: Database, bounds: Bounds, now: number): Generator<void> {
  const before = now - bounds.maxAgeMs;
  yield* deleteOlder(db, "requests", "time_ms", before);
  yield* deleteOlder(db, "responses", "created_ms", before);
  yield* deleteOlder(db, "usage", "hour_ms", before - 3_600_000);
  for (let round = 0; round < SIZE_ROUNDS && liveBytes(db) > bounds.maxBytes; round++) {
    let rows = 0;
    for (const [table, order] of [
      ["requests", "id"],
      ["responses", "created_ms, rowid"],
    ] as const) {
      const span = rowSpan(db, table);
      rows += span;
      if (span > 0) yield* deleteOldest(db, table, order, Math.ceil(span / 10));
    }
    if (rows === 0) break;
  }
  while (freePages(db) > 0) {
    db.run(`PRAGMA incremental_vacuum(${VACUUM_PAGES})`);
    yield;
  }
}

/** Keeps the bounds now, every step at once (at open, before anything is served). */
export function prune(db: Database, bounds: Bounds, now: number): void {
  for (const _ of pruneSteps(db, bounds, now));
}
