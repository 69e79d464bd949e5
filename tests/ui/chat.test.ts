import { describe, expect, test } from "bun:test";
import { answerTurn, applyChunk, messagesOf, type Turn, userTurn } from "../../src/ui/app/chat.ts";
import { errorOfBody } from "../../src/ui/app/errors.ts";

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  JSON.stringify({
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });

function fold(datas: string[]): Turn {
  let t = answerTurn();
  for (const d of datas) {
    const next = applyChunk(t, d);
    if (next === "done") break;
    t = next;
  }
  return t;
}

describe("a streamed answer", () => {
  test("content, reasoning (either name) and the finish reason, kept apart", () => {
    const t = fold([
      chunk({ role: "assistant" }),
      chunk({ reasoning_content: "Let me" }),
      chunk({ reasoning: " think." }),
      chunk({ content: "Hello" }),
      chunk({ content: " there" }),
      chunk({}, "stop"),
      JSON.stringify({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 5 } }),
      "[DONE]",
      chunk({ content: "after done" }),
    ]);
    expect(t).toEqual({
      role: "assistant",
      content: "Hello there",
      reasoning: "Let me think.",
      finish: "stop",
      error: null,
      usage: { prompt: 7, completion: 5 },
    });
  });

  test("an error event after the 200 is the answer's error", () => {
    const t = fold([
      chunk({ content: "Hi" }),
      JSON.stringify({ error: { message: "model m crashed", code: "upstream_error" } }),
    ]);
    expect(t.content).toBe("Hi");
    expect(t.error).toBe("model m crashed");
  });

  test("what is not a chunk changes nothing", () => {
    const t = answerTurn();
    for (const junk of ["not json", "42", "null", "[1]", '{"choices":"x"}', '{"choices":[7]}']) {
      expect(applyChunk(t, junk)).toEqual(t);
    }
  });

  test("the history sent back: turns' text, without failed answers or reasoning", () => {
    const ok = { ...answerTurn(), content: "Hello", reasoning: "hmm" };
    const failed = { ...answerTurn(), content: "Hal", error: "cut" };
    expect(messagesOf([userTurn("a"), ok, userTurn("b"), failed, answerTurn()])).toEqual([
      { role: "user", content: "a" },
      { role: "assistant", content: "Hello" },
      { role: "user", content: "b" },
    ]);
  });
});

describe("errorOfBody", () => {
  test("each envelope's message, or the status", () => {
    const openai = '{"error":{"message":"model \\"x\\" not found","type":"invalid_request_error"}}';
    expect(errorOfBody(404, openai)).toBe('model "x" not found');
    const anthropic = '{"type":"error","error":{"type":"not_found_error","message":"nope"}}';
    expect(errorOfBody(404, anthropic)).toBe("nope");
    expect(errorOfBody(400, '{"error":"ollama says no"}')).toBe("ollama says no");
    expect(errorOfBody(502, "Bad Gateway")).toBe("HTTP 502: Bad Gateway");
    expect(errorOfBody(503, "")).toBe("HTTP 503");
  });
});
