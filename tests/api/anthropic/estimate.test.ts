/**
 * The token estimate against real counts (estimate.ts): every request of
 * scripts/llama/corpus.ts, counted by a real llama-server through qm's own path
 * (translatePrompt → /apply-template + /tokenize) with the Llama 3.1, Qwen3, Gemma 4 and Phi-3.5
 * templates and tokenizers, recorded in fixtures/token-counts.json by
 * scripts/llama/count-corpus.ts. No
 * server runs here. An entry with images was counted without them (llama-server counts only
 * an image's placeholder), so its images' flat cost is left out of the comparison.
 */
import { describe, expect, test } from "bun:test";
import {
  estimatePrompt,
  estimateText,
  IMAGE_TOKENS,
  promptUpperBound,
} from "../../../src/api/anthropic/translate/estimate.ts";
import { translatePrompt } from "../../../src/api/anthropic/translate/request.ts";
import type { CountTokensRequest } from "../../../src/api/anthropic/wire.ts";
import fixture from "./fixtures/token-counts.json";

interface CountRecord {
  name: string;
  request: CountTokensRequest;
  exact: Record<string, number>;
  images?: number;
}

const records = fixture.records as unknown as CountRecord[];

function measured(r: CountRecord) {
  const prompt = translatePrompt(r.request, "llamacpp");
  const estimate = estimatePrompt(prompt) - (r.images ?? 0) * IMAGE_TOKENS;
  const counts = Object.values(r.exact);
  return { prompt, estimate, most: Math.max(...counts) };
}

describe("estimatePrompt on real llama-server counts", () => {
  test("the fixture covers both families and every request shape", () => {
    expect(fixture.counted_on).toEqual(["llama3", "qwen3", "gemma4", "phi3"]);
    expect(records.length).toBeGreaterThanOrEqual(30);
    const all = records.filter((r) => r.exact.llama3 !== undefined && r.exact.qwen3 !== undefined);
    expect(all.length).toBeGreaterThanOrEqual(records.length - 1);
    const has = (f: (r: CountRecord) => boolean) => records.some(f);
    expect(has((r) => (r.request.tools?.length ?? 0) === 1)).toBe(true);
    expect(has((r) => (r.request.tools?.length ?? 0) > 3)).toBe(true);
    expect(has((r) => JSON.stringify(r.request).includes('"tool_result"'))).toBe(true);
    expect(has((r) => (r.images ?? 0) > 0)).toBe(true);
    expect(has((r) => r.request.thinking !== undefined)).toBe(true);
    // Scripts a Latin-centred vocabulary splits finely: Devanagari, Thai, Arabic, Hangul.
    for (const script of [
      /\p{Script=Devanagari}/u,
      /\p{Script=Thai}/u,
      /\p{Script=Arabic}/u,
      /\p{Script=Hangul}/u,
    ]) {
      expect({
        script: String(script),
        has: has((r) => script.test(JSON.stringify(r.request))),
      }).toEqual({ script: String(script), has: true });
    }
    // Codex CLI's tools (nested objects, arrays of objects, enums) with a tool result.
    expect(has((r) => JSON.stringify(r.request).includes('"update_plan"'))).toBe(true);
  });

  for (const r of records) {
    test(`${r.name}: every family's exact ≤ estimate ≤ 1.5 × the largest (${JSON.stringify(r.exact)})`, () => {
      const { estimate, most } = measured(r);
      // Never below any family's real count: clients budget their context from it.
      for (const [family, n] of Object.entries(r.exact)) {
        expect({ family, estimate: Math.max(estimate, n) }).toEqual({ family, estimate });
      }
      expect(estimate).toBeLessThanOrEqual(1.5 * most);
    });
  }

  // Llama pretty-prints tool schemas and Qwen does not: on tool-heavy prompts they differ by
  // ~1.25×, so the bound against the smaller of the two is looser.
  test("on long prompts it stays within 1.7× of Llama 3.1 and of Qwen3", () => {
    const long = records.filter((r) => Math.min(r.exact.llama3 ?? 0, r.exact.qwen3 ?? 0) >= 500);
    expect(long.length).toBeGreaterThanOrEqual(3);
    for (const r of long) {
      const { estimate } = measured(r);
      const least = Math.min(r.exact.llama3 ?? 0, r.exact.qwen3 ?? 0);
      expect({ name: r.name, within: estimate <= 1.7 * least }).toEqual({
        name: r.name,
        within: true,
      });
    }
  });

  test("promptUpperBound is an upper bound of every real count", () => {
    for (const r of records) {
      const { prompt, most } = measured(r);
      expect({ name: r.name, bound: Math.max(promptUpperBound(prompt), most) }).toEqual({
        name: r.name,
        bound: promptUpperBound(prompt),
      });
    }
  });
});

describe("estimateText", () => {
  test("costs scripts and symbols by class", () => {
    expect(estimateText("")).toBe(0);
    expect(estimateText("Hello")).toBe(1);
    expect(estimateText("configuration")).toBe(3);
    expect(estimateText("1234")).toBe(4);
    expect(estimateText("量化模型")).toBe(4);
    expect(estimateText("🚀")).toBe(2);
    expect(estimateText("a\n    b")).toBe(4);
    // A line break after a symbol run is half a token: Llama and Qwen join it (`",\n`), Gemma not.
    expect(estimateText('",\n')).toBe(2);
    expect(estimateText('",\n",\n')).toBe(3);
  });
});
