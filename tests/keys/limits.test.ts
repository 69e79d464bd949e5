/** `rpm` and `tokens_per_min` over a sliding minute, on times the test gives. */
import { describe, expect, test } from "bun:test";
import { KeyLimits } from "../../src/keys/limits.ts";

describe("rpm", () => {
  test("admits rpm requests a minute, then names the wait until the oldest is a minute old", () => {
    const l = new KeyLimits();
    const rpm = { rpm: 3, tokensPerMin: 0 };
    expect(l.admit("a", rpm, 0)).toBeNull();
    expect(l.admit("a", rpm, 10_000)).toBeNull();
    expect(l.admit("a", rpm, 20_000)).toBeNull();
    const refused = l.admit("a", rpm, 30_000);
    expect(refused).toEqual({
      message: 'key "a" sent 3 requests in the last minute, its limit (rpm)',
      retryAfterS: 30,
    });
    // A refused request is not counted; the first leaves the minute at 60 s.
    expect(l.admit("a", rpm, 59_999)?.retryAfterS).toBe(1);
    expect(l.admit("a", rpm, 60_000)).toBeNull();
    expect(l.admit("a", rpm, 60_001)?.retryAfterS).toBe(10);
  });

  test("each key has its own minute; 0 is no limit", () => {
    const l = new KeyLimits();
    expect(l.admit("a", { rpm: 1, tokensPerMin: 0 }, 0)).toBeNull();
    expect(l.admit("b", { rpm: 1, tokensPerMin: 0 }, 0)).toBeNull();
    expect(l.admit("a", { rpm: 1, tokensPerMin: 0 }, 1)).not.toBeNull();
    for (let i = 0; i < 1000; i++) expect(l.admit("c", { rpm: 0, tokensPerMin: 0 }, i)).toBeNull();
  });

  test("a long run keeps only the last minute", () => {
    const l = new KeyLimits();
    for (let t = 0; t < 3_600_000; t += 100) {
      expect(l.admit("a", { rpm: 600, tokensPerMin: 0 }, t)).toBeNull();
    }
    expect(l.admit("a", { rpm: 600, tokensPerMin: 0 }, 3_600_000 - 50)?.retryAfterS).toBe(1);
  });
});

describe("tokens_per_min", () => {
  const tpm = { rpm: 0, tokensPerMin: 1000 };

  test("admitted while the minute's tokens are under the limit; the wait is until enough leave", () => {
    const l = new KeyLimits();
    expect(l.admit("a", tpm, 0)).toBeNull();
    l.spent("a", 600, 1_500); // second 1
    expect(l.admit("a", tpm, 2_000)).toBeNull();
    l.spent("a", 500, 10_200); // second 10
    expect(l.tokensInLastMinute("a", 10_500)).toBe(1100);
    const refused = l.admit("a", tpm, 20_000);
    expect(refused?.message).toBe(
      'key "a" used 1100 tokens in the last minute; its limit is 1000 (tokens_per_min)',
    );
    // Second 1 leaves the minute at 61 s: then 500 are left, under the limit.
    expect(refused?.retryAfterS).toBe(41);
    expect(l.admit("a", tpm, 60_999)).not.toBeNull();
    expect(l.admit("a", tpm, 61_000)).toBeNull();
    expect(l.tokensInLastMinute("a", 61_000)).toBe(500);
  });

  test("buckets of an earlier minute never count again", () => {
    const l = new KeyLimits();
    l.spent("a", 5000, 0);
    expect(l.admit("a", tpm, 30_000)).not.toBeNull();
    expect(l.admit("a", tpm, 120_000)).toBeNull();
    l.spent("a", 10, 120_000); // the same bucket index as second 0
    expect(l.tokensInLastMinute("a", 120_000)).toBe(10);
  });

  test("no tokens, no spend: nothing counted", () => {
    const l = new KeyLimits();
    l.spent("a", 0, 0);
    l.spent("a", Number.NaN, 0);
    expect(l.tokensInLastMinute("a", 1)).toBe(0);
  });
});
