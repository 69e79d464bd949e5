/** Messages and content blocks (docs/translation.md §3.2). */
import { describe, expect, test } from "bun:test";
import { QmError } from "../../../src/shared/errors.ts";
import { tr } from "./translate.ts";

describe("messages", () => {
  test("tool round trip: tool message first, then the user's text", () => {
    const out = tr({
      messages: [
        { role: "user", content: "weather?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking" },
            { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: "12C" },
            { type: "text", text: "thanks" },
          ],
        },
      ],
    });
    expect(out.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: "Checking",
        tool_calls: [
          {
            id: "toolu_1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "toolu_1", content: "12C" },
      { role: "user", content: "thanks" },
    ]);
  });

  const calls = (ids: string[]) => ({
    role: "assistant",
    content: ids.map((id) => ({ type: "tool_use", id, name: "f", input: {} })),
  });

  test("tool_result with blocks, an image and is_error", () => {
    const out = tr({
      messages: [
        { role: "user", content: "go" },
        calls(["t1"]),
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "t1",
              is_error: true,
              content: [
                { type: "text", text: "a" },
                { type: "text", text: "b" },
                {
                  type: "image",
                  source: { type: "base64", media_type: "image/png", data: "iVBO" },
                },
              ],
            },
          ],
        },
      ],
    });
    expect(out.messages.slice(2)).toEqual([
      { role: "tool", tool_call_id: "t1", content: "Error: a\nb" },
      {
        role: "user",
        content: [{ type: "image_url", image_url: { url: "data:image/png;base64,iVBO" } }],
      },
    ]);
  });

  test("empty text blocks are dropped", () => {
    const out = tr({
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "" },
            { type: "text", text: "go" },
          ],
        },
      ],
    });
    expect(out.messages).toEqual([{ role: "user", content: "go" }]);
  });

  test("thinking in history goes back as reasoning, redacted thinking does not", () => {
    const assistant = {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "t", signature: "sig" },
        { type: "redacted_thinking", data: "x" },
        { type: "text", text: "a" },
      ],
    };
    const msgs = [{ role: "user", content: "q" }, assistant, { role: "user", content: "more" }];
    expect(tr({ messages: msgs }, "llamacpp").messages[1]).toEqual({
      role: "assistant",
      content: "a",
      reasoning_content: "t",
    });
    expect(tr({ messages: msgs }, "vllm").messages[1]).toEqual({
      role: "assistant",
      content: "a",
      reasoning: "t",
    });
    expect(JSON.stringify(tr({ messages: msgs }))).not.toContain('"x"');
  });

  test("a mid-conversation system turn joins the leading system message", () => {
    const out = tr({
      system: "base",
      messages: [
        { role: "user", content: "a" },
        { role: "system", content: "rule" },
        { role: "user", content: "b" },
      ],
    });
    expect(out.messages).toEqual([
      { role: "system", content: "base\nrule" },
      { role: "user", content: "a\nb" },
    ]);
  });

  test("orphan tool results become user text; consecutive turns merge", () => {
    const out = tr({
      messages: [
        { role: "user", content: "q" },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "nope", content: "r" }] },
      ],
    });
    expect(out.messages).toEqual([{ role: "user", content: "q\nTool result (nope): r" }]);
  });

  test("parallel results: one tool message each, in block order", () => {
    const out = tr({
      messages: [
        { role: "user", content: "q" },
        calls(["a", "b"]),
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "b", content: [{ type: "text", text: "B" }] },
            { type: "tool_result", tool_use_id: "a" },
          ],
        },
      ],
    });
    expect(out.messages.slice(2)).toEqual([
      { role: "tool", tool_call_id: "b", content: "B" },
      { role: "tool", tool_call_id: "a", content: "" },
    ]);
  });

  test("documents and url images; a prefill stays last (vLLM told to continue it)", () => {
    const out = tr(
      {
        messages: [
          {
            role: "user",
            content: [
              {
                type: "document",
                title: "T",
                source: { type: "text", media_type: "text/plain", data: "D" },
              },
              {
                type: "document",
                source: { type: "base64", media_type: "application/pdf", data: "JVBER" },
              },
              { type: "image", source: { type: "url", url: "https://x/y.png" } },
            ],
          },
          { role: "assistant", content: "Sure, " },
        ],
      },
      "vllm",
    );
    expect(out.messages[0]!.content).toEqual([
      { type: "text", text: "T\nD" },
      {
        type: "text",
        text: "[document omitted: application/pdf documents are not supported by this model]",
      },
      { type: "image_url", image_url: { url: "https://x/y.png" } },
    ]);
    expect(out.messages[1]).toEqual({ role: "assistant", content: "Sure, " });
    expect(out.continue_final_message).toBe(true);
    expect(out.add_generation_prompt).toBe(false);
  });

  test("malformed known blocks are 400s naming the field", () => {
    const bad = () =>
      tr({
        messages: [{ role: "assistant", content: [{ type: "tool_use", name: "f", input: {} }] }],
      });
    expect(bad).toThrow(QmError);
    expect(bad).toThrow("messages.0.content.0.id: Field required");
  });
});
