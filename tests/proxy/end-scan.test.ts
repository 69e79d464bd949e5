import { describe, expect, test } from "bun:test";
import {
  ANTHROPIC_TOOL_USE,
  type EndPattern,
  EndScan,
  OPENAI_TOOL_CALLS,
} from "../../src/proxy/end-scan.ts";

const enc = new TextEncoder();

function chunk(delta: object, finish: string | null) {
  return `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

const TOOL_STREAM =
  chunk(
    {
      role: "assistant",
      tool_calls: [
        { index: 0, id: "c1", type: "function", function: { name: "f", arguments: "" } },
      ],
    },
    null,
  ) +
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] }, null) +
  chunk({}, "tool_calls") +
  "data: [DONE]\n\n";
const PLAIN_STREAM =
  chunk({ role: "assistant", content: "talking about tool_calls" }, null) +
  chunk({ content: ' "tool_calls" literally' }, null) +
  chunk({}, "stop") +
  "data: [DONE]\n\n";

function watch(text: string, splits: number[], p: EndPattern = OPENAI_TOOL_CALLS): boolean {
  const w = new EndScan(p);
  const bytes = enc.encode(text);
  let from = 0;
  for (const at of [...splits, bytes.length]) {
    w.feed(bytes.subarray(from, at));
    from = at;
  }
  return w.found;
}

describe("EndScan: OpenAI finish_reason tool_calls", () => {
  test("finds finish_reason tool_calls however the stream is split in two", () => {
    const n = enc.encode(TOOL_STREAM).length;
    for (let i = 0; i <= n; i++) expect(watch(TOOL_STREAM, [i])).toBe(true);
  });

  test("finds it split into single bytes", () => {
    const n = enc.encode(TOOL_STREAM).length;
    expect(
      watch(
        TOOL_STREAM,
        Array.from({ length: n }, (_, i) => i),
      ),
    ).toBe(true);
  });

  test("tool_calls deltas and the word in content are not a tool-call finish", () => {
    const n = enc.encode(PLAIN_STREAM).length;
    for (let i = 0; i <= n; i++) expect(watch(PLAIN_STREAM, [i])).toBe(false);
  });

  test("a non-streamed, pretty-printed JSON response counts too", () => {
    const body = JSON.stringify(
      {
        choices: [
          { index: 0, message: { role: "assistant", tool_calls: [] }, finish_reason: "tool_calls" },
        ],
      },
      null,
      2,
    );
    expect(watch(body, [])).toBe(true);
    expect(
      watch(body.replace('"finish_reason": "tool_calls"', '"finish_reason": "stop"'), []),
    ).toBe(false);
  });
});

function event(type: string, data: object) {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

const TOOL_USE_STREAM =
  event("message_start", { message: { id: "m", content: [], stop_reason: null } }) +
  event("content_block_start", {
    index: 0,
    content_block: { type: "tool_use", id: "t1", name: "f", input: {} },
  }) +
  event("content_block_delta", {
    index: 0,
    delta: { type: "input_json_delta", partial_json: '{"stop_reason":"tool_use"' },
  }) +
  event("content_block_stop", { index: 0 }) +
  event("message_delta", { delta: { stop_reason: "tool_use" }, usage: { output_tokens: 3 } }) +
  event("message_stop", {});

describe("EndScan: Anthropic stop_reason tool_use", () => {
  test("finds it in a message_delta however the stream is split in two", () => {
    const n = enc.encode(TOOL_USE_STREAM).length;
    for (let i = 0; i <= n; i++) {
      expect(watch(TOOL_USE_STREAM, [i], ANTHROPIC_TOOL_USE)).toBe(true);
    }
  });

  test("a tool_use content block, or the words inside escaped JSON, are not a tool-use end", () => {
    const plain = TOOL_USE_STREAM.replace(
      '"delta":{"stop_reason":"tool_use"}',
      '"delta":{"stop_reason":"end_turn"}',
    );
    expect(plain).not.toBe(TOOL_USE_STREAM);
    const n = enc.encode(plain).length;
    for (let i = 0; i <= n; i++) expect(watch(plain, [i], ANTHROPIC_TOOL_USE)).toBe(false);
    const bytes = Array.from({ length: n }, (_, i) => i);
    expect(watch(plain, bytes, ANTHROPIC_TOOL_USE)).toBe(false);
    expect(watch(TOOL_USE_STREAM, bytes, ANTHROPIC_TOOL_USE)).toBe(true);
  });

  test("a whole JSON message counts too", () => {
    const body = JSON.stringify({ type: "message", content: [], stop_reason: "tool_use" }, null, 1);
    expect(watch(body, [], ANTHROPIC_TOOL_USE)).toBe(true);
  });
});
