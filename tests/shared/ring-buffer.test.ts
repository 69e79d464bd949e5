/** The ring buffer that keeps a process's last log lines (src/shared/ring-buffer.ts). */
import { describe, expect, test } from "bun:test";
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
