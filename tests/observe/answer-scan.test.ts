/**
 * The passthrough scan reads token counts and the finish reason off an answer's bytes as they
 * pass: the same counts whichever way the bytes are split into chunks.
 */
import { describe, expect, test } from "bun:test";
import { AnswerScan } from "../../src/observe/answer-scan.ts";
import { AnswerUsage } from "../../src/observe/answer-usage.ts";
import { chunk, sseText } from "../support/openai-answers.ts";

const enc = new TextEncoder();

function usageOf(pieces: Uint8Array[]) {
  const f = new AnswerUsage();
  const scan = new AnswerScan(f);
  for (const p of pieces) scan.feed(p);
  return {
    prompt: f.prompt,
    completion: f.completion,
    cached: f.cached,
    finish: f.finishReason,
  };
}

/** The text whole, split in two at every byte, and one byte at a time: all read the same. */
function expectEverySplit(text: string, expected: ReturnType<typeof usageOf>) {
  const bytes = enc.encode(text);
  expect(usageOf([bytes])).toEqual(expected);
  for (let at = 0; at <= bytes.length; at++) {
    expect({ at, got: usageOf([bytes.subarray(0, at), bytes.subarray(at)]) }).toEqual({
      at,
      got: expected,
    });
  }
  expect(usageOf([...bytes].map((b) => Uint8Array.of(b)))).toEqual(expected);
}

describe("answer scan", () => {
  test("an OpenAI stream: finish reason from the last chunk, counts from the usage chunk", () => {
    const text = sseText([
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hi" }),
      chunk({}, "stop"),
      {
        choices: [],
        usage: {
          prompt_tokens: 12,
          completion_tokens: 3,
          prompt_tokens_details: { cached_tokens: 8 },
        },
      },
    ]);
    expectEverySplit(text, { prompt: 12, completion: 3, cached: 8, finish: "stop" });
  });

  test("llama.cpp's timings stand in when there is no usage", () => {
    const text = sseText([
      chunk({ content: "Hi" }),
      chunk({}, "length", {
        timings: { prompt_n: 4, cache_n: 6, predicted_n: 7, predicted_ms: 70 },
      }),
    ]);
    expectEverySplit(text, { prompt: 10, completion: 7, cached: 6, finish: "length" });
  });

  test("a whole JSON answer, pretty-printed", () => {
    const text = JSON.stringify(
      {
        choices: [{ index: 0, message: { content: "x" }, finish_reason: "tool_calls" }],
        usage: { prompt_tokens: 5, completion_tokens: 2 },
      },
      null,
      2,
    );
    expectEverySplit(text, { prompt: 5, completion: 2, cached: null, finish: "tool_calls" });
  });

  test("a native Anthropic stream: input from message_start, output and stop from message_delta", () => {
    const text =
      'event: message_start\ndata: {"type":"message_start","message":{"stop_reason":null,' +
      '"usage":{"input_tokens":3,"cache_read_input_tokens":20,"cache_creation_input_tokens":0,"output_tokens":1}}}\n\n' +
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}\n\n';
    expectEverySplit(text, { prompt: 23, completion: 9, cached: 20, finish: "end_turn" });
  });

  test("the keys inside text (escaped) are not usage", () => {
    const content = 'the "usage": {"prompt_tokens": 99} and "finish_reason": "stop"';
    const text = sseText([chunk({ content })]);
    expectEverySplit(text, { prompt: null, completion: null, cached: null, finish: null });
  });

  test("a usage value that never closes is dropped, and reading goes on", () => {
    const open = `{"usage":{"prompt_tokens":1,"pad":"${"x".repeat(5000)}`;
    const after = enc.encode('"}, "finish_reason":"stop"}');
    const got = usageOf([enc.encode(open), after]);
    expect(got.prompt).toBeNull();
  });
});
