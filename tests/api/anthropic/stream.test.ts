/**
 * OpenAI SSE bytes → Anthropic events (docs/translation.md §3.6), through the real stream
 * body. Every scripted upstream is also replayed split at every byte offset; the output
 * must not change.
 */
import { describe, expect, test } from "bun:test";
import { chunk, sseResponse, sseText } from "../../support/openai-answers.ts";
import { build } from "./grammar.ts";
import { bodyOf, encoder, everySplit, OPTS, run, tc } from "./replay.ts";
import { parseEvents, types } from "./support.ts";

describe("streaming translation", () => {
  test("plain text: the exact event sequence, usage from the trailing chunk", async () => {
    const { events, built, toolCalls } = await everySplit(
      sseText([
        chunk({ role: "assistant", content: null }),
        chunk({ content: "Hel" }),
        chunk({ content: "lo ☃" }),
        chunk({}, "stop"),
        { id: "x", choices: [], usage: { prompt_tokens: 11, completion_tokens: 3 } },
      ]),
    );
    expect(types(events)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events[0]!.data.message).toMatchObject({
      id: "msg_1",
      model: "claude-local",
      role: "assistant",
      content: [],
    });
    expect(built.message.content).toEqual([{ type: "text", text: "Hello ☃" }]);
    expect(built.message.stop_reason).toBe("end_turn");
    expect(built.message.usage).toEqual({
      input_tokens: 11,
      output_tokens: 3,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    });
    expect(toolCalls).toBe(false);
  });

  test("interleaved reasoning makes alternating blocks, each thinking block signed", async () => {
    const { built, events } = await everySplit(
      sseText([
        chunk({ reasoning_content: "a" }),
        chunk({ content: "b" }),
        chunk({ reasoning: "c" }), // vLLM's field name
        chunk({ content: "d", reasoning_content: "" }),
        chunk({}, "stop"),
      ]),
    );
    expect(built.message.content).toEqual([
      { type: "thinking", thinking: "a", signature: "" },
      { type: "text", text: "b" },
      { type: "thinking", thinking: "c", signature: "" },
      { type: "text", text: "d" },
    ]);
    const sigs = events.filter(
      (e) => (e.data.delta as { type?: string })?.type === "signature_delta",
    );
    expect(sigs.map((e) => e.data.index)).toEqual([0, 2]);
  });

  test("parallel tool calls with split, interleaved arguments", async () => {
    const { built, toolCalls } = await everySplit(
      sseText([
        chunk({ content: "Let me check." }),
        chunk(tc(0, { id: "call_a", name: "get_weather", args: "" })),
        chunk(tc(0, { args: '{"city":' })),
        chunk(tc(1, { id: "call_b", name: "get_time", args: '{"tz":"UTC"}' })),
        chunk(tc(0, { args: '"Paris"}' })),
        chunk({}, "tool_calls"),
        { choices: [], usage: { prompt_tokens: 20, completion_tokens: 9 } },
      ]),
    );
    expect(built.message.content).toEqual([
      { type: "text", text: "Let me check." },
      { type: "tool_use", id: "call_a", name: "get_weather", input: { city: "Paris" } },
      { type: "tool_use", id: "call_b", name: "get_time", input: { tz: "UTC" } },
    ]);
    expect(built.message.stop_reason).toBe("tool_use");
    expect(toolCalls).toBe(true);
  });

  test("tool quirks: every call on index 0, cumulative arguments, no id, bad id, broken JSON", async () => {
    const { built } = await everySplit(
      sseText([
        chunk(tc(0, { id: "functions.Bash:0", name: "Bash", args: '{"cmd":' })),
        chunk(tc(0, { args: '{"cmd":"ls"}' })), // cumulative: repeats everything so far
        chunk(tc(0, { id: "second", name: "Read", args: '{"path": "/tmp' })),
        chunk({ tool_calls: [{ function: { name: "Noid", arguments: { a: 1 } } }] }),
        chunk({}, "tool_calls"),
      ]),
    );
    const blocks = built.message.content as unknown as {
      id: string;
      name: string;
      input: unknown;
    }[];
    expect(blocks.map((b) => [b.name, b.input])).toEqual([
      ["Bash", { cmd: "ls" }],
      ["Read", { path: "/tmp" }],
      ["Noid", { a: 1 }],
    ]);
    expect(blocks[0]!.id).toBe("functions_Bash_0");
    for (const b of blocks) expect(b.id).toMatch(/^[a-zA-Z0-9_-]+$/);
  });

  test.each([
    [
      "on the finish chunk",
      [
        chunk({ content: "x" }),
        chunk({}, "stop", { usage: { prompt_tokens: 5, completion_tokens: 1 } }),
      ],
    ],
    [
      "in a separate choices:[] chunk",
      [
        chunk({ content: "x" }),
        chunk({}, "stop"),
        { choices: [], usage: { prompt_tokens: 5, completion_tokens: 1 } },
      ],
    ],
    [
      "with choices:null",
      [
        chunk({ content: "x" }),
        chunk({}, "stop"),
        { choices: null, usage: { prompt_tokens: 5, completion_tokens: 1 } },
      ],
    ],
  ])("usage placement %s: exactly one message_delta, with the upstream's usage", async (_name, chunks) => {
    const { events, built } = await everySplit(sseText(chunks as object[]));
    expect(events.filter((e) => e.data.type === "message_delta")).toHaveLength(1);
    expect(built.message.usage).toMatchObject({ input_tokens: 5, output_tokens: 1 });
  });

  test("no usage at all gives estimates, still exactly one message_delta with usage", async () => {
    const { events, built } = await everySplit(
      sseText([chunk({ content: "12345678" }), chunk({}, "stop")]),
    );
    expect(events.filter((e) => e.data.type === "message_delta")).toHaveLength(1);
    expect(built.message.usage).toMatchObject({ input_tokens: 3, output_tokens: 2 });
  });

  test("cached prompt tokens (vLLM details, llama.cpp timings) are cache reads", async () => {
    const { built } = await everySplit(
      sseText([
        chunk({ content: "x" }),
        chunk({}, "stop", { timings: { cache_n: 6 } }),
        { choices: [], usage: { prompt_tokens: 10, completion_tokens: 1 } },
      ]),
    );
    expect(built.message.usage).toMatchObject({ input_tokens: 4, cache_read_input_tokens: 6 });
  });

  test("an upstream error chunk mid-stream closes the block, then an error event", async () => {
    const { events, built } = await everySplit(
      sseText(
        [chunk({ content: "a" }), chunk({ content: "b" }), { error: { message: "boom" } }],
        false,
      ),
    );
    expect(types(events).slice(-2)).toEqual(["content_block_stop", "error"]);
    expect(built.end).toBe("error");
    expect(built.error).toEqual({ type: "api_error", message: "boom" });
    expect(types(events)).not.toContain("message_stop");
  });

  test("the upstream dies without [DONE] (clean EOF or socket error) → error event", async () => {
    const partial = sseText([chunk({ content: "a" })], false);
    const eof = await everySplit(partial);
    expect(eof.built.error?.type).toBe("api_error");
    expect(eof.built.error?.message).toContain("ended unexpectedly");
    // Bun's own wording is for developers; the client is told the model and a plain cause.
    const reset = Object.assign(new Error("ECONNRESET: … pass `verbose: true` to fetch()"), {
      code: "ECONNRESET",
    });
    const broken = await run(sseResponse(bodyOf([encoder.encode(partial)], reset)));
    const b = build(parseEvents(broken.text));
    expect(b.end).toBe("error");
    expect(b.error).toEqual({
      type: "api_error",
      message: 'model "m" failed mid-answer: connection reset',
    });
    expect(broken.toolCalls).toBe(false);
  });

  test("stop sequence from vLLM's stop_reason; [DONE] without finish is end_turn; late chunks dropped", async () => {
    const seq = await everySplit(
      sseText([
        chunk({ content: "x" }),
        { choices: [{ index: 0, delta: {}, finish_reason: "stop", stop_reason: "END" }] },
      ]),
      { ...OPTS, stopSequences: ["END"] },
    );
    expect(seq.built.message).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: "END" });
    const bare = await everySplit(
      `${sseText([chunk({ content: "x" })])}${sseText([chunk({ content: "late" })])}`,
    );
    expect(bare.built.message.stop_reason).toBe("end_turn");
    expect(bare.built.message.content).toEqual([{ type: "text", text: "x" }]);
  });

  test("SSE details: CRLF, no space after data:, comments, event: error", async () => {
    const text =
      ': keep-alive\r\n\r\ndata:{"choices":[{"index":0,"delta":{"content":"x"}}]}\r\n\r\n' +
      'event: error\r\ndata: {"error":{"message":"Loading model","code":503,"type":"unavailable_error"}}\r\n\r\n';
    const { built } = await everySplit(text);
    expect(built.message.content).toEqual([{ type: "text", text: "x" }]);
    expect(built.error).toEqual({ type: "overloaded_error", message: "Loading model" });
  });

  test("only role and empty deltas: no blocks at all", async () => {
    const { built } = await everySplit(
      sseText([
        chunk({ role: "assistant", content: "" }),
        chunk({ reasoning: "" }),
        chunk({}, "length"),
      ]),
    );
    expect(built.message.content).toEqual([]);
    expect(built.message.stop_reason).toBe("max_tokens");
  });
});
