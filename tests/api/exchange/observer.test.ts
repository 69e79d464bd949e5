/**
 * The observer's tail mode: an OpenAI answer is not scanned as it passes; its last chunks are
 * kept (by reference) and scanned once when the exchange ends, and that finds what a scan of
 * every chunk found — whatever way the stream was cut into chunks.
 */
import { describe, expect, test } from "bun:test";
import { Observer, TAIL_BYTES } from "../../../src/api/exchange/observer.ts";
import { OPENAI_TOOL_CALLS } from "../../../src/proxy/end-scan.ts";

const enc = new TextEncoder();

function event(json: string): string {
  return `data: ${json}\n\n`;
}

/** A chat stream of `tokens` deltas ending in `finish`, with a usage event and `[DONE]`. */
function chatStream(tokens: number, finish: string): Uint8Array {
  let s = "";
  for (let i = 0; i < tokens; i++) {
    s += event(`{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"tok ${i}"}}]}`);
  }
  s += event(`{"choices":[{"finish_reason":"${finish}","index":0,"delta":{}}]}`);
  s += event(
    '{"choices":[],"usage":{"prompt_tokens":31,"completion_tokens":17,"prompt_tokens_details":{"cached_tokens":4}},"timings":{"prompt_n":27,"cache_n":4,"predicted_n":17}}',
  );
  s += "data: [DONE]\n\n";
  return enc.encode(s);
}

function seen(o: Observer) {
  const f = o.usage;
  return {
    prompt: f.prompt,
    completion: f.completion,
    cached: f.cached,
    finish: f.finishReason,
    tools: o.toolCalls,
  };
}

const WANT = { prompt: 31, completion: 17, cached: 4, finish: "tool_calls", tools: true };

describe("an observer in tail mode", () => {
  test("scans nothing until the answer is over, then finds the ending and the usage", () => {
    const o = new Observer(OPENAI_TOOL_CALLS, { tail: true });
    o.chunk(chatStream(20, "tool_calls"));
    expect(seen(o)).toEqual({
      prompt: null,
      completion: null,
      cached: null,
      finish: null,
      tools: false,
    });
    o.settle();
    expect(seen(o)).toEqual(WANT);
  });

  test("finds them however the stream is cut in two", () => {
    const bytes = chatStream(3, "tool_calls");
    for (let i = 1; i < bytes.length; i++) {
      const o = new Observer(OPENAI_TOOL_CALLS, { tail: true });
      o.chunk(bytes.subarray(0, i));
      o.chunk(bytes.subarray(i));
      o.settle();
      expect({ split: i, got: seen(o) }).toEqual({ split: i, got: WANT });
    }
  });

  test("finds them in a long stream cut into many small chunks, keeping only its end", () => {
    const bytes = chatStream(5000, "tool_calls");
    expect(bytes.length).toBeGreaterThan(10 * TAIL_BYTES);
    const o = new Observer(OPENAI_TOOL_CALLS, { tail: true });
    for (let i = 0; i < bytes.length; i += 37) o.chunk(bytes.subarray(i, i + 37));
    o.settle();
    expect(seen(o)).toEqual(WANT);
  });

  test("a plain stop is no tool-call ending", () => {
    const o = new Observer(OPENAI_TOOL_CALLS, { tail: true });
    o.chunk(chatStream(10, "stop"));
    o.settle();
    expect(seen(o)).toEqual({ ...WANT, finish: "stop", tools: false });
  });

  test("a whole JSON answer far larger than the tail is read at its end", () => {
    const content = "x".repeat(20 * TAIL_BYTES);
    const body = enc.encode(
      `{"choices":[{"index":0,"message":{"role":"assistant","content":"${content}"},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":31,"completion_tokens":17,"prompt_tokens_details":{"cached_tokens":4}}}`,
    );
    const o = new Observer(OPENAI_TOOL_CALLS, { tail: true });
    o.chunk(body);
    o.settle();
    expect(seen(o)).toEqual(WANT);
  });

  test("settling twice scans once; with figures off, only the tool-call ending is read", () => {
    const o = new Observer(OPENAI_TOOL_CALLS, { tail: true });
    o.ignoreUsage();
    o.chunk(chatStream(3, "tool_calls"));
    o.settle();
    o.settle();
    expect(seen(o)).toEqual({
      prompt: null,
      completion: null,
      cached: null,
      finish: null,
      tools: true,
    });
  });
});
