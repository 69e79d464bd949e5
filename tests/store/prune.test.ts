/** The database's bounds: rows past `max_age_days` go; past `max_mb` the oldest go first. */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../src/shared/log.ts";
import { StateDb } from "../../src/store/database.ts";

const dir = mkdtempSync(join(tmpdir(), "qm-prune-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const log = createLogger("error", () => {});
const DAY = 24 * 3600 * 1000;

function open(file: string, now: number, bounds: { maxAgeMs: number; maxBytes: number }) {
  const r = StateDb.open(file, { bounds, log, now: () => now });
  if (!r.ok) throw new Error(r.reason);
  return r.db;
}

const rec = (id: number, time: number) => ({
  id,
  time,
  key: "k",
  model: "m",
  api: "openai" as const,
  status: 200,
  answered: true,
  wait_ms: 0,
  swap: false,
  duration_ms: 1,
  ttft_ms: null,
  prompt_tokens: null,
  completion_tokens: null,
  cached_tokens: null,
  finish_reason: null,
});

describe("bounds", () => {
  test("rows older than max_age_days go at the next open; younger ones stay", () => {
    const file = join(dir, "age.db");
    const big = { maxAgeMs: 100 * DAY, maxBytes: 1 << 30 };
    let db = open(file, 0, big);
    for (let day = 0; day < 10; day++) {
      db.requests.put(rec(day + 1, day * DAY), null);
      db.usage.put({
        hour: day * DAY,
        key: "k",
        model: "m",
        requests: 1,
        prompt_tokens: 0,
        completion_tokens: 0,
        cached_tokens: 0,
        wait_ms: 0,
        swaps: 0,
      });
    }
    db.close();
    db = open(file, 10 * DAY, { maxAgeMs: 3.5 * DAY, maxBytes: 1 << 30 });
    expect(db.requests.latest(100).map((r) => r.id)).toEqual([8, 9, 10]);
    expect(db.usage.since(0).map((u) => u.hour / DAY)).toEqual([7, 8, 9]);
    db.close();
  });

  test("past max_mb the oldest go first, until the rows fit", () => {
    const file = join(dir, "size.db");
    const now = 1_000_000;
    let db = open(file, now, { maxAgeMs: DAY, maxBytes: 1 << 30 });
    const filler = "x".repeat(20_000);
    for (let i = 0; i < 200; i++) {
      db.responses.put(`resp_${String(i).padStart(3, "0")}`, {
        owner: "k",
        response: { id: i, filler },
        conversation: [],
        inputItems: [],
      });
      db.flush();
    }
    expect(db.bytes()).toBeGreaterThan(3 << 20);
    db.close();
    const limit = 1 << 20;
    db = open(file, now, { maxAgeMs: DAY, maxBytes: limit });
    expect(db.bytes()).toBeLessThanOrEqual(limit);
    const left = db.counts().responses;
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(50);
    // The newest are the ones kept.
    expect(db.responses.get("resp_199")).not.toBeNull();
    expect(db.responses.get("resp_000")).toBeNull();
    db.close();
  });
});
