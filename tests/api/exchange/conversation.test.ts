import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { conversationKey, openingOf } from "../../../src/api/exchange/conversation.ts";

const enc = new TextEncoder();
const body = (o: unknown) => enc.encode(JSON.stringify(o));
const none = new Headers();

describe("conversationKey", () => {
  test("a client's session header wins: Claude Code's, then Codex CLI's", () => {
    const b = body({ messages: [{ role: "user", content: "hi" }] });
    expect(conversationKey(new Headers({ "x-claude-code-session-id": "abc" }), b)).toBe(
      "session:abc",
    );
    expect(conversationKey(new Headers({ "session-id": "s-1" }), b)).toBe("session:s-1");
    const long = "x".repeat(5000);
    expect(conversationKey(new Headers({ "session-id": long }), null)).toBe(
      `session:${"x".repeat(200)}`,
    );
  });

  test("without one, every turn of a chat conversation has its first turn's key", () => {
    const system = { role: "system", content: "You are an agent." };
    const user = { role: "user", content: "Fix the bug" };
    const turn1 = body({ model: "m", messages: [system, user], tools: [{ type: "function" }] });
    const turn2 = body({
      model: "m",
      messages: [
        system,
        user,
        { role: "assistant", tool_calls: [{ id: "1", function: { name: "read" } }] },
        { role: "tool", tool_call_id: "1", content: "file text" },
      ],
      tools: [{ type: "function" }],
    });
    const k = conversationKey(none, turn1);
    expect(k).toMatch(/^opening:/);
    expect(conversationKey(none, turn2)).toBe(k);
    const other = body({ model: "m", messages: [system, { role: "user", content: "Other task" }] });
    expect(conversationKey(none, other)).not.toBe(k);
  });

  test("a conversation with no system message opens with its first user message", () => {
    const user = { role: "user", content: "hello" };
    const k = conversationKey(none, body({ messages: [user] }));
    expect(conversationKey(none, body({ messages: [user, { role: "assistant" }] }))).toBe(k);
  });

  test("Anthropic: a system prompt before the messages counts; moving cache_control marks do not", () => {
    const system = [{ type: "text", text: "sys" }];
    const first = (cached: boolean) => ({
      role: "user",
      content: [
        { type: "text", text: "task", ...(cached ? { cache_control: { type: "ephemeral" } } : {}) },
      ],
    });
    const turn1 = body({ model: "c", system, messages: [first(true)] });
    const turn2 = body({
      model: "c",
      system,
      messages: [first(false), { role: "assistant", content: [] }, first(true)],
    });
    expect(conversationKey(none, turn2)).toBe(conversationKey(none, turn1));
    const otherSystem = body({ model: "c", system: "other", messages: [first(true)] });
    expect(conversationKey(none, otherSystem)).not.toBe(conversationKey(none, turn1));
  });

  test("Responses: input items through the first user one", () => {
    const dev = {
      type: "message",
      role: "developer",
      content: [{ type: "input_text", text: "d" }],
    };
    const user = { type: "message", role: "user", content: [{ type: "input_text", text: "u" }] };
    const k = conversationKey(none, body({ model: "x", input: [dev, user] }));
    expect(
      conversationKey(
        none,
        body({ model: "x", input: [dev, user, { type: "function_call_output", output: "o" }] }),
      ),
    ).toBe(k);
  });

  test("no key from a body that is not a JSON object with a message list", () => {
    for (const text of ["", "[]", "{}", '{"prompt":"x"}', '{"messages":', "not json", '{"a":"\\']) {
      expect({ text, key: conversationKey(none, enc.encode(text)) }).toEqual({
        text,
        key: undefined,
      });
    }
    expect(conversationKey(none, null)).toBeUndefined();
  });
});

describe("openingOf: any JSON the client sends", () => {
  const message = fc.record({
    role: fc.constantFrom("system", "user", "assistant", "tool", "developer"),
    content: fc.string({ unit: "binary", maxLength: 40 }),
  });

  test("later turns (more messages after the first user one) keep the first turn's opening", () => {
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 3 }),
        fc.string({ unit: "binary", maxLength: 40 }),
        fc.array(message, { maxLength: 5 }),
        fc.dictionary(fc.constantFrom("model", "tools", "stream", "temperature"), fc.jsonValue()),
        (before, text, after, extra) => {
          // The opening: up to the first user message (at most four messages looked at).
          const lead = before.filter((m) => m.role !== "user");
          const first = [...lead, { role: "user", content: text }];
          const turn1 = body({ ...extra, messages: first });
          const turn2 = body({ ...extra, messages: [...first, ...after] });
          const key1 = conversationKey(none, turn1);
          expect(key1).toBeDefined();
          expect(conversationKey(none, turn2)).toBe(key1);
          expect(openingOf(turn2)).toBe(openingOf(turn1));
        },
      ),
      { numRuns: 500 },
    );
  });
});
