/** The pure non-streaming response translation (docs/translation.md §3.5). */
import { describe, expect, test } from "bun:test";
import { sanitizeToolId } from "../../../src/api/anthropic/ids.ts";
import { fromOpenAI, type ResponseOptions } from "../../../src/api/anthropic/translate/response.ts";
import { repair, toolInput } from "../../../src/api/chat/tool-json.ts";

const opts = (extra: Partial<ResponseOptions> = {}): ResponseOptions => ({
  id: "msg_test",
  model: "claude-local",
  stopSequences: [],
  inputTokens: 7,
  ...extra,
});

const completion = (message: object, finish: string | null, extra: object = {}) => ({
  id: "chatcmpl-x",
  object: "chat.completion",
  choices: [
    { index: 0, message: { role: "assistant", ...message }, finish_reason: finish, ...extra },
  ],
});

const call = (id: string, name: string, args: string) => ({
  id,
  type: "function",
  function: { name, arguments: args },
});

describe("non-streaming", () => {
  test("text, usage with cached tokens, requested model echoed", () => {
    const msg = fromOpenAI(
      {
        ...completion({ content: "Hi" }, "stop"),
        usage: {
          prompt_tokens: 10,
          completion_tokens: 2,
          prompt_tokens_details: { cached_tokens: 4 },
        },
      },
      opts(),
    );
    expect(msg).toEqual({
      id: "msg_test",
      type: "message",
      role: "assistant",
      model: "claude-local",
      content: [{ type: "text", text: "Hi" }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: {
        input_tokens: 6,
        output_tokens: 2,
        cache_read_input_tokens: 4,
        cache_creation_input_tokens: 0,
      },
    });
  });

  test("llama.cpp timings.cache_n counts as cache read; no usage falls back to estimates", () => {
    const llama = fromOpenAI(
      {
        ...completion({ content: "Hi" }, "stop"),
        usage: { prompt_tokens: 10, completion_tokens: 2 },
        timings: { cache_n: 8 },
      },
      opts(),
    );
    expect(llama.usage).toMatchObject({ input_tokens: 2, cache_read_input_tokens: 8 });
    const none = fromOpenAI(completion({ content: "12345678" }, "stop"), opts());
    expect(none.usage).toEqual({
      input_tokens: 7,
      output_tokens: 2,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    });
  });

  test("reasoning + parallel tools → thinking first, tool_use stop", () => {
    const msg = fromOpenAI(
      completion(
        {
          reasoning: "r",
          content: null,
          tool_calls: [call("call_a", "f", '{"x":1}'), call("call_b", "g", "{}")],
        },
        "tool_calls",
      ),
      opts(),
    );
    expect(msg.content).toEqual([
      { type: "thinking", thinking: "r", signature: "" },
      { type: "tool_use", id: "call_a", name: "f", input: { x: 1 } },
      { type: "tool_use", id: "call_b", name: "g", input: {} },
    ]);
    expect(msg.stop_reason).toBe("tool_use");
  });

  test("broken tool JSON does not crash; it is repaired and reported", () => {
    const seen: string[] = [];
    const msg = fromOpenAI(
      completion({ content: null, tool_calls: [call("c", "f", '{"x": tru')] }, "tool_calls"),
      {
        ...opts(),
        onToolInput: (name, how) => seen.push(`${name}:${how}`),
      },
    );
    expect(msg.content).toEqual([{ type: "tool_use", id: "c", name: "f", input: { x: true } }]);
    expect(seen).toEqual(["f:repaired"]);
    const hopeless = fromOpenAI(
      completion({ tool_calls: [call("c", "f", "not json at all")] }, "tool_calls"),
      opts(),
    );
    expect(hopeless.content).toEqual([{ type: "tool_use", id: "c", name: "f", input: {} }]);
  });

  test("finish_reason → stop_reason, vLLM's stop_reason as a stop sequence", () => {
    const stop = (finish: string | null, extra: object = {}, seqs: string[] = []) =>
      fromOpenAI(completion({ content: "x" }, finish, extra), opts({ stopSequences: seqs }));
    expect(stop("length").stop_reason).toBe("max_tokens");
    expect(stop("content_filter").stop_reason).toBe("refusal");
    expect(stop(null).stop_reason).toBe("end_turn");
    expect(stop("weird").stop_reason).toBe("end_turn");
    const seq = stop("stop", { stop_reason: "END" }, ["END"]);
    expect([seq.stop_reason, seq.stop_sequence]).toEqual(["stop_sequence", "END"]);
    const other = stop("stop", { stop_reason: 128009 }, ["END"]);
    expect([other.stop_reason, other.stop_sequence]).toEqual(["end_turn", null]);
    // vLLM says "stop" for a forced tool call.
    const forced = fromOpenAI(completion({ tool_calls: [call("c", "f", "{}")] }, "stop"), opts());
    expect(forced.stop_reason).toBe("tool_use");
  });

  test("nothing at all is an empty content list, not an empty text block", () => {
    expect(fromOpenAI(completion({ content: "" }, "length"), opts()).content).toEqual([]);
  });

  test("no choices is an upstream failure", () => {
    expect(() => fromOpenAI({ error: "x" }, opts())).toThrow("answered without any choices");
  });
});

describe("tool ids and arguments", () => {
  test("ids are sanitised, missing ids invented", () => {
    expect(sanitizeToolId("functions.Bash:0")).toBe("functions_Bash_0");
    expect(sanitizeToolId("toolu_01ABC-x")).toBe("toolu_01ABC-x");
    expect(sanitizeToolId(undefined)).toMatch(/^toolu_[0-9a-f]{24}$/);
    const msg = fromOpenAI(
      completion(
        { tool_calls: [{ type: "function", function: { name: "f", arguments: { a: 1 } } }] },
        "tool_calls",
      ),
      opts(),
    );
    const block = msg.content[0] as { id: string; input: unknown };
    expect(block.id).toMatch(/^[a-zA-Z0-9_-]+$/);
    expect(block.input).toEqual({ a: 1 });
  });

  test.each([
    ['{"a": "unterminated', { a: "unterminated" }],
    ['{"a": [1, 2', { a: [1, 2] }],
    ['{"a": 1,', { a: 1 }],
    ['{"a": -', { a: null }],
    ['{"a": 1.', { a: 1 }],
    ['{"a": {"b": fal', { a: { b: false } }],
    ['{"a": "x\\', { a: "x" }],
    ['{"a":', { a: null }],
  ])("repair(%p)", (text, want) => {
    expect(repair(text)).toEqual(want);
  });

  test("double-encoded, empty and non-object arguments", () => {
    expect(toolInput(JSON.stringify('{"a":1}'))).toEqual({ input: { a: 1 }, how: "repaired" });
    expect(toolInput("")).toEqual({ input: {}, how: "ok" });
    expect(toolInput("[1,2]")).toEqual({ input: {}, how: "failed" });
  });
});
