/** Rows for the store's tests: a usage row of one request, with the fields a test sets. */
import type { UsageRow } from "../../src/observe/usage.ts";

export function usageRow(fields: Partial<UsageRow> = {}): UsageRow {
  return {
    hour: 0,
    key: "k",
    model: "m",
    requests: 1,
    prompt_tokens: 0,
    completion_tokens: 0,
    cached_tokens: 0,
    wait_ms: 0,
    swaps: 0,
    ...fields,
  };
}
