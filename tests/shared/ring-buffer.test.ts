/** src/shared/ring-buffer.ts and src/shared/log.ts (used by the supervisor). */
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../src/shared/log.ts";
import { RingBuffer } from "../../src/shared/ring-buffer.ts";

describe("RingBuffer", () => {
  test("keeps the newest items, oldest first", () => {
    const r = new RingBuffer<number>(3);
    expect(r.toArray()).toEqual([]);
    for (let i = 1; i <= 5; i++) r.push(i);
    expect(r.size).toBe(3);
    expect(r.toArray()).toEqual([3, 4, 5]);
    expect(r.tail(2)).toEqual([4, 5]);
    expect(r.tail(10)).toEqual([3, 4, 5]);
    expect(r.tail(0)).toEqual([]);
    r.clear();
    expect(r.toArray()).toEqual([]);
    r.push(9);
    expect(r.toArray()).toEqual([9]);
  });

  test("rejects a capacity below 1", () => {
    expect(() => new RingBuffer(0)).toThrow(RangeError);
  });
});

describe("createLogger", () => {
  const at = new Date("2026-11-30T03:00:00.000Z");

  test("formats lines and filters by level", () => {
    const lines: string[] = [];
    const log = createLogger(
      "info",
      (l) => lines.push(l),
      () => at,
    );
    log.debug("hidden");
    log.info("hello");
    log.warn("careful");
    log.error("broken");
    expect(lines).toEqual([
      "2026-11-30T03:00:00.000Z INFO  hello",
      "2026-11-30T03:00:00.000Z WARN  careful",
      "2026-11-30T03:00:00.000Z ERROR broken",
    ]);
    expect(log.enabled("debug")).toBe(false);
    expect(log.enabled("warn")).toBe(true);
  });

  test("debug level writes everything", () => {
    const lines: string[] = [];
    createLogger(
      "debug",
      (l) => lines.push(l),
      () => at,
    ).debug("x");
    expect(lines).toEqual(["2026-11-30T03:00:00.000Z DEBUG x"]);
  });
});
