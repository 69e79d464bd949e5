import { describe, expect, test } from "bun:test";
import { StallStreaks } from "../../src/runtime/stalls.ts";

const MIN = 60_000;

describe("StallStreaks", () => {
  test("three timeouts within ten minutes, no answer between: restart, then a new streak", () => {
    const s = new StallStreaks();
    expect(s.stall("m", 0)).toEqual({ count: 1, restart: false });
    expect(s.stall("m", 4 * MIN)).toEqual({ count: 2, restart: false });
    expect(s.stall("other", 5 * MIN)).toEqual({ count: 1, restart: false });
    expect(s.stall("m", 9 * MIN)).toEqual({ count: 3, restart: true });
    expect(s.stall("m", 9 * MIN + 1)).toEqual({ count: 1, restart: false });
  });

  test("an answer in between ends the streak", () => {
    const s = new StallStreaks();
    s.stall("m", 0);
    s.stall("m", 1);
    s.answered("m");
    expect(s.stall("m", 2)).toEqual({ count: 1, restart: false });
  });

  test("timeouts older than the window do not count", () => {
    const s = new StallStreaks(3, 10 * MIN);
    s.stall("m", 0);
    s.stall("m", 6 * MIN);
    // The first is 10 minutes old now: only two in the window.
    expect(s.stall("m", 10 * MIN)).toEqual({ count: 2, restart: false });
    expect(s.stall("m", 11 * MIN)).toEqual({ count: 3, restart: true });
  });
});
