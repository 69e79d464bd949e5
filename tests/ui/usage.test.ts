/** The Usage page's sums per key. */
import { expect, test } from "bun:test";
import { usageByKey } from "../../src/ui/app/usage.ts";

const row = (key: string, model: string, requests: number, wait = 0) => ({
  hour_ms: 0,
  key,
  model,
  requests,
  prompt_tokens: requests * 10,
  completion_tokens: requests,
  cached_tokens: 0,
  wait_ms: wait,
  swaps: 1,
});

test("per key, busiest first; mean wait per request; models by use", () => {
  expect(
    usageByKey([row("a", "m", 1, 100), row("b", "m", 6), row("a", "n", 3, 300), row("a", "m", 1)]),
  ).toEqual([
    {
      key: "b",
      requests: 6,
      promptTokens: 60,
      completionTokens: 6,
      meanWaitMs: 0,
      swaps: 1,
      models: ["m"],
    },
    {
      key: "a",
      requests: 5,
      promptTokens: 50,
      completionTokens: 5,
      meanWaitMs: 80,
      swaps: 3,
      models: ["n", "m"],
    },
  ]);
  expect(usageByKey([])).toEqual([]);
});
