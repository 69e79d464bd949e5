import { describe, expect, test } from "bun:test";
import {
  count,
  duration,
  gb,
  ms,
  NONE,
  percent,
  rate,
  remaining,
  tokensPerSecond,
} from "../../src/ui/app/format.ts";

describe("figures", () => {
  test("milliseconds", () => {
    expect(ms(0)).toBe("0 ms");
    expect(ms(849.6)).toBe("850 ms");
    expect(ms(1000)).toBe("1.0 s");
    expect(ms(1234)).toBe("1.2 s");
    expect(ms(9949)).toBe("9.9 s");
    expect(ms(12_000)).toBe("12s");
    expect(ms(125_000)).toBe("2m 05s");
    expect(ms(3_720_000)).toBe("1h 02m");
    expect(ms(null)).toBe(NONE);
    expect(ms(Number.NaN)).toBe(NONE);
  });

  test("durations round to the second and never go negative", () => {
    expect(duration(499)).toBe("0s");
    expect(duration(59_600)).toBe("1m 00s");
    expect(duration(-5)).toBe("0s");
  });

  test("sizes, counts, rates, percentages", () => {
    expect(gb(6.54)).toBe("6.5 GB");
    expect(gb(0)).toBe("0 GB");
    expect(gb(null)).toBe(NONE);
    expect(count(3)).toBe("3");
    expect(count(null)).toBe(NONE);
    expect(rate(42.149)).toBe("42.1");
    expect(rate(312.4)).toBe("312");
    expect(rate(null)).toBe(NONE);
    expect(percent(0.426)).toBe("43%");
    expect(percent(1.5)).toBe("100%");
    expect(percent(null)).toBe(NONE);
  });

  test("output speed: tokens after the first chunk, over the time after it", () => {
    expect(tokensPerSecond({ completion_tokens: 50, duration_ms: 1500, ttft_ms: 500 })).toBe(50);
    expect(tokensPerSecond({ completion_tokens: 50, duration_ms: 500, ttft_ms: null })).toBeNull();
    expect(tokensPerSecond({ completion_tokens: null, duration_ms: 900, ttft_ms: 100 })).toBeNull();
    expect(tokensPerSecond({ completion_tokens: 5, duration_ms: 100, ttft_ms: 100 })).toBeNull();
  });

  test("countdowns end at zero", () => {
    expect(remaining(10_000, 4_000)).toBe(6_000);
    expect(remaining(10_000, 10_000)).toBeNull();
    expect(remaining(null, 0)).toBeNull();
  });
});
