import { describe, expect, test } from "bun:test";
import { ToolCallWatcher } from "../../src/proxy/tool-calls.ts";

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

function watch(text: string, splits: number[]): boolean {
  const w = new ToolCallWatcher();
  const bytes = enc.encode(text);
  let from = 0;
  for (const at of [...splits, bytes.length]) {
    w.feed(bytes.subarray(from, at));
    from = at;
  }
  return w.sawToolCalls;
}

describe("ToolCallWatcher", () => {
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
