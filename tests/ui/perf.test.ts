import { describe, expect, test } from "bun:test";
import { quantile, summarize } from "../../src/ui/app/perf.ts";
import type { RequestRecord } from "../../src/ui/app/wire.ts";

const rec = (over: Partial<RequestRecord>): RequestRecord => ({
  time: 0,
  model: "m",
  api: "openai",
  status: 200,
  answered: true,
  wait_ms: 0,
  swap: false,
  duration_ms: 1000,
  ttft_ms: 200,
  prompt_tokens: 10,
  completion_tokens: 40,
  cached_tokens: null,
  finish_reason: "stop",
  ...over,
});

describe("performance figures", () => {
  test("nearest-rank quantiles", () => {
    expect(quantile([], 0.5)).toBeNull();
    expect(quantile([5], 0.9)).toBe(5);
    expect(quantile([4, 1, 3, 2], 0.5)).toBe(2);
    expect(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9)).toBe(9);
  });

  test("per model, loads left out, failures and swaps counted", () => {
    const rows = summarize([
      rec({ model: "b" }),
      rec({ ttft_ms: 100, duration_ms: 600, swap: true, wait_ms: 1500 }),
      rec({ ttft_ms: 300, completion_tokens: null }),
      rec({ status: 503, ttft_ms: null, completion_tokens: null, prompt_tokens: null }),
      rec({ answered: false }),
      rec({ api: "load", duration_ms: 99_999 }),
    ]);
    expect(rows.map((r) => r.model)).toEqual(["b", "m"]);
    const m = rows[1]!;
    expect(m.requests).toBe(4);
    expect(m.failed).toBe(2);
    expect(m.swaps).toBe(1);
    expect(m.ttftP50).toBe(200);
    expect(m.ttftP90).toBe(300);
    // 40 tokens over 0.5 s after the first chunk (80/s) and over 0.8 s (the cut one, 50/s).
    expect(m.tpsP50).toBe(50);
    expect(m.waitP50).toBe(0);
    expect(m.tokensIn).toBe(30);
    expect(m.tokensOut).toBe(80);
  });
});
