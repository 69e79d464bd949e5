/** Usage per key × model × hour, and the activity ring refilled after a restart. */
import { describe, expect, test } from "bun:test";
import { ActivityLog } from "../../src/observe/activity.ts";
import type { RequestRecord } from "../../src/observe/record.ts";
import { UsageBook, type UsageRow } from "../../src/observe/usage.ts";

const HOUR = 3_600_000;
const rec = (over: Partial<RequestRecord> = {}): RequestRecord => ({
  id: 0,
  time: 10 * HOUR + 5,
  key: "alice",
  model: "m",
  api: "openai",
  status: 200,
  answered: true,
  wait_ms: 100,
  swap: false,
  duration_ms: 1,
  ttft_ms: null,
  prompt_tokens: 10,
  completion_tokens: 5,
  cached_tokens: 2,
  finish_reason: null,
  ...over,
});

describe("the usage book", () => {
  test("sums per key, model and hour; a count the answer did not state adds nothing", () => {
    const changed: UsageRow[] = [];
    const book = new UsageBook(30 * 24 * HOUR, (r) => changed.push({ ...r }));
    book.add(rec());
    book.add(rec({ swap: true, prompt_tokens: null, wait_ms: null }));
    book.add(rec({ key: "bob" }));
    book.add(rec({ model: "n" }));
    book.add(rec({ time: 11 * HOUR }));
    expect(book.query({ since: 0 })).toEqual([
      {
        hour: 10 * HOUR,
        key: "alice",
        model: "m",
        requests: 2,
        prompt_tokens: 10,
        completion_tokens: 10,
        cached_tokens: 4,
        wait_ms: 100,
        swaps: 1,
      },
      {
        hour: 10 * HOUR,
        key: "alice",
        model: "n",
        requests: 1,
        prompt_tokens: 10,
        completion_tokens: 5,
        cached_tokens: 2,
        wait_ms: 100,
        swaps: 0,
      },
      {
        hour: 10 * HOUR,
        key: "bob",
        model: "m",
        requests: 1,
        prompt_tokens: 10,
        completion_tokens: 5,
        cached_tokens: 2,
        wait_ms: 100,
        swaps: 0,
      },
      {
        hour: 11 * HOUR,
        key: "alice",
        model: "m",
        requests: 1,
        prompt_tokens: 10,
        completion_tokens: 5,
        cached_tokens: 2,
        wait_ms: 100,
        swaps: 0,
      },
    ]);
    expect(changed).toHaveLength(5);
    expect(book.query({ since: 11 * HOUR + 10, key: "alice" }).map((r) => r.hour)).toEqual([
      11 * HOUR,
    ]);
    expect(book.query({ since: 0, until: 10 * HOUR, key: "bob" })).toHaveLength(1);
  });

  test("rows a database kept come back; hours past the age are let go", () => {
    const book = new UsageBook(2 * HOUR);
    book.load([
      {
        hour: 0,
        key: "a",
        model: "m",
        requests: 3,
        prompt_tokens: 1,
        completion_tokens: 1,
        cached_tokens: 0,
        wait_ms: 0,
        swaps: 0,
      },
    ]);
    book.add(rec({ time: 5, key: "a" }));
    expect(book.query({ since: 0 })[0]?.requests).toBe(4);
    book.add(rec({ time: 10 * HOUR }));
    expect(book.query({ since: 0 }).map((r) => r.hour)).toEqual([10 * HOUR]);
    expect(book.size).toBe(1);
  });

  test("a record counts in the row the book holds now: after a refill, and after its hour was let go", () => {
    const book = new UsageBook(2 * HOUR);
    book.add(rec({ time: 5, key: "a" }));
    book.load([{ ...book.query({ since: 0 })[0]!, requests: 7 }]);
    book.add(rec({ time: 5, key: "a" }));
    expect(book.query({ since: 0 }).map((r) => r.requests)).toEqual([8]);
    book.add(rec({ time: 10 * HOUR, key: "a" }));
    book.add(rec({ time: 20 * HOUR, key: "a" }));
    book.add(rec({ time: 20 * HOUR, key: "a" }));
    expect(book.query({ since: 0 }).map((r) => [r.hour, r.requests])).toEqual([[20 * HOUR, 2]]);
    expect(book.size).toBe(1);
  });
});

describe("the activity ring after a restart", () => {
  test("the newest run of ids goes back in its slots; ids go on; an older one is looked up", () => {
    const log = new ActivityLog(3);
    const kept = [1, 2, 4, 5, 6, 7].map((id) => rec({ id, key: id % 2 ? "alice" : "bob" }));
    log.restore(kept, 7);
    expect(log.list().map((r) => r.id)).toEqual([7, 6, 5]);
    expect(log.get(6)?.key).toBe("bob");
    expect(log.get(6, "alice")).toBeNull();
    expect(log.push(rec())).toBe(8);
    expect(log.get(8)?.id).toBe(8);
    expect(log.get(5)).toBeNull();
    log.older = (id) => (id === 2 ? { ...rec({ id: 2, key: "bob" }), capture: null } : null);
    expect(log.get(2)?.id).toBe(2);
    expect(log.get(2, "alice")).toBeNull();
    expect(log.get(3)).toBeNull();
  });

  test("a gap before the last id: only the run after it comes back", () => {
    const log = new ActivityLog(10);
    log.restore(
      [1, 2, 9, 10].map((id) => rec({ id })),
      10,
    );
    expect(log.list().map((r) => r.id)).toEqual([10, 9]);
    expect(log.push(rec())).toBe(11);
  });
});
