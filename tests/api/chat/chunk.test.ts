/**
 * Reading the upstream's chat stream (`readChunk`): each rule once, and the steps read from
 * the bytes do not depend on how the bytes were split (every byte offset, and byte by byte).
 */
import { describe, expect, test } from "bun:test";
import { type ChatStep, readChunk, readPiece } from "../../../src/api/chat/chunk.ts";
import { SseEvents } from "../../../src/api/chat/sse-events.ts";
import { chunk } from "../../support/openai-answers.ts";

const enc = new TextEncoder();
const fixture = (name: string) =>
  Bun.file(`${import.meta.dir}/../anthropic/fixtures/${name}`).text();

const read = (data: object | string, event?: string) =>
  readChunk(typeof data === "string" ? data : JSON.stringify(data), event);

describe("readChunk", () => {
  test("[DONE], with or without surrounding whitespace, is the end", () => {
    for (const d of ["[DONE]", " [DONE]", "[DONE] ", "\t[DONE]\r"]) {
      expect(read(d)).toEqual({ kind: "done" });
    }
    expect(read("[DONE]x")).toBeNull();
  });

  test("a delta: reasoning, text, tool pieces, finish, vLLM's stop_reason, usage, timings", () => {
    const s = read(
      chunk(
        {
          reasoning_content: "r",
          content: [
            { type: "text", text: "a" },
            { type: "text", text: "b" },
          ],
          tool_calls: [
            { index: 1, id: "c", function: { name: "f", arguments: '{"a":' } },
            { function: { arguments: { whole: true } } },
            "junk",
          ],
        },
        "tool_calls",
        { usage: { prompt_tokens: 3 }, timings: { cache_n: 2 } },
      ),
    );
    expect(s).toEqual({
      kind: "delta",
      reasoning: "r",
      text: "ab",
      literal: null,
      tools: [
        { index: 1, id: "c", name: "f", args: '{"a":', whole: false },
        { index: null, id: null, name: null, args: '{"whole":true}', whole: true },
      ],
      finish: "tool_calls",
      stopReason: null,
      usage: { prompt_tokens: 3 },
      timings: { cache_n: 2 },
    });
    const vllm = read({ choices: [{ delta: {}, finish_reason: "stop", stop_reason: "END" }] });
    expect(vllm).toMatchObject({ finish: "stop", stopReason: "END" });
  });

  test("an empty reasoning_content says nothing: reasoning is read then", () => {
    expect(read(chunk({ reasoning_content: "", reasoning: "vLLM" }))).toMatchObject({
      reasoning: "vLLM",
    });
    expect(read(chunk({ reasoning_content: null, reasoning: "vLLM" }))).toMatchObject({
      reasoning: "vLLM",
    });
    // Both said: one is read, never both.
    expect(read(chunk({ reasoning_content: "a", reasoning: "a" }))).toMatchObject({
      reasoning: "a",
    });
  });

  test("finish_reason counts only as a non-empty string", () => {
    for (const f of ["", null, 0, true, {}]) {
      const s = read({ choices: [{ delta: { content: "x" }, finish_reason: f }] });
      expect({ f, finish: (s as { finish: unknown }).finish }).toEqual({ f, finish: null });
    }
  });

  test("a completions chunk (no delta) carries its text in choices[0].text", () => {
    expect(read({ choices: [{ text: "raw", finish_reason: null }] })).toMatchObject({
      text: "raw",
    });
  });

  test("errors: an error field, an event named error (JSON or not); the message, else a plain one", () => {
    expect(read({ error: { message: "boom", type: "x" } })).toEqual({
      kind: "error",
      message: "boom",
      error: { message: "boom", type: "x" },
    });
    expect(read({ error: "text" })).toMatchObject({ kind: "error", message: "text" });
    expect(read({ message: "old vLLM", object: "error" }, "error")).toMatchObject({
      kind: "error",
      message: "old vLLM",
    });
    expect(read("Loading model", "error")).toMatchObject({
      kind: "error",
      message: "Loading model",
    });
    expect(read({ error: {} })).toMatchObject({
      kind: "error",
      message: "the model failed mid-answer",
    });
  });

  test("anything else that is not a JSON object is skipped", () => {
    for (const d of ["not json", "3", "[1]", "null", '"s"', ""]) expect(read(d)).toBeNull();
    expect(read({ choices: null, usage: { completion_tokens: 1 } })).toMatchObject({
      kind: "delta",
      text: "",
      usage: { completion_tokens: 1 },
    });
  });

  test("a huge line's piece: the text unescaped, and its literal to write as it is", () => {
    const p = readPiece("text", 'a \\"q\\" \\u00e9');
    expect(p).toMatchObject({ text: 'a "q" é', reasoning: "", literal: '"a \\"q\\" \\u00e9"' });
    expect(readPiece("thinking", "t")).toMatchObject({ reasoning: "t", text: "", literal: '"t"' });
  });
});

/** The steps the bytes in `parts` give: framed as the stream frames them, each read. */
function steps(parts: Uint8Array[]): (ChatStep | null)[] {
  const out: (ChatStep | null)[] = [];
  const s = new SseEvents({
    onEvent: (data, name) => out.push(readChunk(data, name)),
    bigLineBytes: 1 << 30,
    bigLine: () => ({ feed: () => {}, end: () => "", held: 0 }),
  });
  for (const p of parts) s.feed(p);
  s.end();
  return out;
}

describe("the same steps however the bytes are split", () => {
  const upstreams: [string, () => Promise<string>][] = [
    ["llama.cpp, tools and timings", () => fixture("llama-cpp-tools.sse")],
    ["vLLM, reasoning and a stop string", () => fixture("vllm-reasoning.sse")],
    [
      "CRLF, comments, odd lines, an error event, UTF-8",
      async () =>
        ': keep-alive\r\n\r\ndata: {"choices":[{"delta":{"content":"Grüß 👋"}}]}\r\n\r\n' +
        "data: not json\r\n\r\nevent: error\r\ndata: Loading model\r\n\r\n" +
        'data: {"error":{"message":"boom"}}\n\ndata:  [DONE] \n\n',
    ],
  ];
  test.each(upstreams)("%s: at every byte offset, and byte by byte", async (_name, text) => {
    const bytes = enc.encode(await text());
    const expected = steps([bytes]);
    expect(expected.length).toBeGreaterThan(2);
    for (let i = 1; i < bytes.length; i++) {
      const got = steps([bytes.subarray(0, i), bytes.subarray(i)]);
      expect({ split: i, got }).toEqual({ split: i, got: expected });
    }
    const single = steps(Array.from(bytes, (_, i) => bytes.subarray(i, i + 1)));
    expect({ split: "every byte", got: single }).toEqual({ split: "every byte", got: expected });
  });
});
