/**
 * The pure parts of "a peer cannot hurt qm" (src/peers/limits.ts, news.ts): the event stream's
 * bound on a line and on an event, checked on the bytes however they are split (CR, LF, CRLF,
 * a CRLF cut in two); a peer's news applied at most every 100 ms, the latest status and the
 * changes after it kept, nothing lost at a flush.
 */
import { describe, expect, test } from "bun:test";
import {
  APPLY_EVERY_MS,
  EventBound,
  MAX_PEER_MODELS,
  PEER_EVENT_BYTES_PER_S,
  ReadBudget,
} from "../../src/peers/limits.ts";
import { PeerNews } from "../../src/peers/news.ts";
import type { Offer } from "../../src/peers/route.ts";
import { FakeTimers } from "../support/fake-timers.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

/** Feeds `text` cut at `split` (and whole when -1); the first bound crossed, or null. */
function feed(max: number, text: string, split: number): string | null {
  const b = new EventBound(max);
  const all = bytes(text);
  const parts = split < 0 ? [all] : [all.subarray(0, split), all.subarray(split)];
  for (const p of parts) {
    const over = b.feed(p);
    if (over !== null) return over;
  }
  return null;
}

describe("EventBound", () => {
  const cases: [string, string, "line" | "event" | null][] = [
    ["lines at the bound, events split by blank lines", "data: 12\n\ndata: 34\r\n\r\n", null],
    ["a line one past the bound", "data: 123\n", "line"],
    ["an event of short lines past the bound", "a: 12\nb: 12\n\n", "event"],
    ["CR alone ends lines and events", "a: 1\rb\r\rc: 2\r\r", null],
    ["CRLF ends a line once, not twice (no empty line between)", "a: 12\r\nb: 1\r\n\r\n", "event"],
    ["an endless line with no terminator", "x".repeat(100), "line"],
  ];
  test.each(cases)("%s, split at every byte", (_, text, want) => {
    for (let split = -1; split <= bytes(text).length; split++) {
      const got = feed(8, text, split);
      const kind = got === null ? null : got.includes("a line over") ? "line" : "event";
      expect({ split, kind }).toEqual({ split, kind: want });
    }
  });

  test("the message names the bound", () => {
    expect(new EventBound(4 * 2 ** 20).feed(bytes("x".repeat(4 * 2 ** 20 + 1)))).toBe(
      "its /api/events sent a line over 4 MiB (the bound on a peer's event)",
    );
  });

  test("a long stream of short lines in big chunks is scanned in linear time", () => {
    const chunk = bytes("event: model\ndata: {}\n\n".repeat(200_000)); // 4.6 MB, 600 000 lines
    const b = new EventBound();
    const t0 = performance.now();
    for (let i = 0; i < 5; i++) expect(b.feed(chunk)).toBeNull();
    // Quadratic scanning would take minutes here; linear, well under a second.
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});

describe("PeerNews", () => {
  function news() {
    const timers = new FakeTimers();
    const applied: { status: string | null; models: [string, Offer][] }[] = [];
    const n = new PeerNews(timers, (status, models) =>
      applied.push({ status, models: [...models] }),
    );
    return { timers, n, applied };
  }

  test("the first news at once; a flood within 100 ms as one batch at its end", () => {
    const { timers, n, applied } = news();
    n.snapshot("s0");
    expect(applied).toEqual([{ status: "s0", models: [] }]);
    for (let i = 1; i <= 10_000; i++) n.snapshot(`s${i}`);
    n.model("m", "ready");
    expect(applied).toHaveLength(1);
    timers.advance(APPLY_EVERY_MS - 1);
    expect(applied).toHaveLength(1);
    timers.advance(1);
    expect(applied).toEqual([
      { status: "s0", models: [] },
      { status: "s10000", models: [["m", "ready"]] },
    ]);
    // Quiet for 100 ms: the next news goes at once again.
    timers.advance(APPLY_EVERY_MS);
    n.model("m", "offered");
    expect(applied.at(-1)).toEqual({ status: null, models: [["m", "offered"]] });
  });

  test("a status drops the changes before it; changes keep their order, the latest state each", () => {
    const { timers, n, applied } = news();
    n.snapshot("first");
    n.model("a", "ready");
    n.snapshot("second");
    n.model("b", "ready");
    n.model("a", "offered");
    n.model("b", "offered");
    timers.advance(APPLY_EVERY_MS);
    expect(applied.at(-1)).toEqual({
      status: "second",
      models: [
        ["a", "offered"],
        ["b", "offered"],
      ],
    });
  });

  test("flush applies what is pending now; stop drops it and leaves no timer", () => {
    const { timers, n, applied } = news();
    n.snapshot("s0");
    n.model("x", "ready");
    n.flush();
    expect(applied.at(-1)).toEqual({ status: null, models: [["x", "ready"]] });
    expect(timers.pending).toBe(0);
    n.model("y", "ready");
    expect(timers.pending).toBe(1);
    n.stop();
    expect(timers.pending).toBe(0);
    timers.advance(1000);
    expect(applied).toHaveLength(2);
  });

  test("no more than the model cap is held between applies", () => {
    const { n } = news();
    n.snapshot("s");
    for (let i = 0; i < MAX_PEER_MODELS; i++) expect(n.model(`m${i}`, "ready")).toBe(true);
    expect(n.model("one-more", "ready")).toBe(false);
    expect(n.model("m0", "offered")).toBe(true);
  });
});

describe("ReadBudget", () => {
  test("a burst at once, then the rate: the wait is what the excess takes to refill", () => {
    const b = new ReadBudget(0, 1000, 100); // 1000 bytes at once, then 100 bytes/s
    expect(b.take(1000, 0)).toBe(0);
    expect(b.take(50, 0)).toBe(500); // 50 bytes short: half a second
    expect(b.take(0, 500)).toBe(0);
    // Refilled for 10 s, but never past the burst.
    expect(b.take(1000, 10_500)).toBe(0);
    expect(b.take(1, 10_500)).toBe(10);
  });

  test("the shipped rate: a flood of 64 KiB chunks is read at 1 MiB/s past its burst", () => {
    const b = new ReadBudget(0);
    let now = 0;
    let read = 0;
    while (now < 10_000) {
      now += b.take(65536, now);
      read += 65536;
    }
    // 8 MiB at once, then about 1 MiB a second for the rest of the 10 s.
    expect(read / 2 ** 20).toBeGreaterThan(8 + 9);
    expect(read / 2 ** 20).toBeLessThan(8 + 11);
    expect(PEER_EVENT_BYTES_PER_S).toBe(2 ** 20);
  });
});
