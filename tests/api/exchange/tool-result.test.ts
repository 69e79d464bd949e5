/**
 * Whether a request carries a tool result (src/api/exchange/tool-result.ts), and that the
 * answer reaches the scheduler with the request (`AcquireHooks.toolResult`) on every API.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { carriesToolResult, toolResultIn } from "../../../src/api/exchange/tool-result.ts";
import { useFakeFetch } from "../../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, appOf, post } from "../../support/in-process.ts";
import { completion } from "../../support/openai-answers.ts";

const bytes = (body: unknown) => new TextEncoder().encode(JSON.stringify(body));
const pretty = (body: unknown) => new TextEncoder().encode(JSON.stringify(body, null, 1));
/** Python's json.dumps spacing: `", "` and `": "`. */
const python = (body: unknown) =>
  new TextEncoder().encode(JSON.stringify(body).replace(/":"/g, '": "').replace(/","/g, '", "'));

const user = { role: "user", content: "run it" };
const call = { id: "c1", type: "function", function: { name: "sh", arguments: "{}" } };
const tools = [{ type: "function", function: { name: "sh", parameters: { type: "object" } } }];

describe("carriesToolResult", () => {
  test.each([
    ["OpenAI chat / Ollama: a tool message", { messages: [user, { role: "tool", content: "ok" }] }],
    [
      "the older function message",
      { messages: [user, { role: "function", name: "f", content: "1" }] },
    ],
    [
      "Anthropic: a tool_result block",
      {
        messages: [
          user,
          { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: "ok" }] },
        ],
      },
    ],
    [
      "Responses: a function_call_output item",
      { input: [{ type: "function_call_output", call_id: "c", output: "ok" }] },
    ],
    [
      "Responses: a custom_tool_call_output item",
      { input: [{ type: "custom_tool_call_output", call_id: "c", output: "ok" }] },
    ],
  ])("%s", (_name, body) => {
    for (const write of [bytes, pretty, python]) expect(carriesToolResult(write(body))).toBe(true);
    expect(toolResultIn(body)).toBe(true);
    // Wherever it is among the messages (or items): first, in the middle, last.
    const list = "messages" in body ? body.messages : body.input;
    const other = "messages" in body ? user : { type: "message", role: "user", content: "x" };
    const result = list.at(-1)!;
    const key = "messages" in body ? "messages" : "input";
    expect(toolResultIn({ [key]: [result, other, other] })).toBe(true);
    expect(toolResultIn({ [key]: [other, result, other] })).toBe(true);
  });

  test("none: a first turn, tools offered, a tool call not yet answered, no body", () => {
    const tools = [{ type: "function", function: { name: "sh", parameters: {} } }];
    const answered = { messages: [user, { role: "assistant", tool_calls: [call] }] };
    const anthropicCall = {
      messages: [user, { role: "assistant", content: [{ type: "tool_use", id: "t", input: {} }] }],
    };
    const responsesCall = { input: [{ type: "function_call", call_id: "c", arguments: "{}" }] };
    for (const body of [{ messages: [user], tools }, answered, anthropicCall, responsesCall]) {
      expect(carriesToolResult(bytes(body))).toBe(false);
      expect(toolResultIn(body)).toBe(false);
    }
    expect(carriesToolResult(new Uint8Array())).toBe(false);
    expect(carriesToolResult(undefined)).toBe(false);
    expect(toolResultIn({})).toBe(false);
    // Shapes no client sends are no tool result either.
    expect(toolResultIn({ messages: "tool", input: {} })).toBe(false);
    expect(toolResultIn({ messages: [null, 3, "x", { role: "user", content: [null, 1] }] })).toBe(
      false,
    );
  });

  test("property: text that only mentions a tool result is not one", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.constantFrom('"role":"tool"', '"tool_result"', '"function_call_output"', "x", " "),
        ),
        (parts) => {
          const text = parts.join("");
          const body = { messages: [{ role: "user", content: text }] };
          expect(carriesToolResult(bytes(body))).toBe(false);
          expect(toolResultIn(body)).toBe(false);
        },
      ),
    );
  });
});

describe("the scheduler hears it", () => {
  const up = useFakeFetch();
  let gw: FakeGw;
  let app: App;
  beforeEach(() => {
    gw = fakeGateway(`[server]\nlog_level = "error"\n${modelToml("m", up)}`);
    gw.states.m = "ready";
    app = appOf(gw);
  });

  test("chat completions: false on the first turn, true once a tool result is in", async () => {
    up.answer = () => completion({ content: "ok" }, "stop");
    await post(app, "/v1/chat/completions", { model: "m", tools, messages: [user] });
    const next = [user, { role: "assistant", content: null, tool_calls: [call] }];
    await post(app, "/v1/chat/completions", {
      model: "m",
      tools,
      messages: [...next, { role: "tool", tool_call_id: "c1", content: "done" }],
    });
    expect(gw.hooks.map((a) => a?.toolResult)).toEqual([false, true]);
  });

  test("chat completions offering no tools: false, and the body is not searched", async () => {
    up.answer = () => completion({ content: "ok" }, "stop");
    await post(app, "/v1/chat/completions", {
      model: "m",
      messages: [user, { role: "tool", tool_call_id: "c1", content: "done" }],
    });
    expect(gw.hooks.map((a) => a?.toolResult)).toEqual([false]);
  });

  test("Anthropic messages: a tool_result block; no tools offered, false", async () => {
    up.answer = () => completion({ content: "ok" }, "stop");
    const messages = [
      user,
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "sh", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "done" }] },
    ];
    const sh = { name: "sh", input_schema: { type: "object" } };
    await post(app, "/v1/messages", { model: "m", max_tokens: 10, tools: [sh], messages: [user] });
    await post(app, "/v1/messages", { model: "m", max_tokens: 10, tools: [sh], messages });
    await post(app, "/v1/messages", { model: "m", max_tokens: 10, messages });
    expect(gw.hooks.map((a) => a?.toolResult)).toEqual([false, true, false]);
  });

  test("Responses: a function_call_output item; no tools offered, false", async () => {
    up.answer = () => completion({ content: "ok" }, "stop");
    const sh = { type: "function", name: "sh", parameters: { type: "object" } };
    const output = { type: "function_call_output", call_id: "c1", output: "done" };
    const called = { type: "function_call", call_id: "c1", name: "sh", arguments: "{}" };
    await post(app, "/v1/responses", { model: "m", tools: [sh], input: "run it" });
    await post(app, "/v1/responses", { model: "m", tools: [sh], input: [called, output] });
    await post(app, "/v1/responses", { model: "m", input: [called, output] });
    expect(gw.hooks.map((a) => a?.toolResult)).toEqual([false, true, false]);
  });

  test('native passthrough (anthropic_native, responses_api = "native"): read from the parsed body too', async () => {
    gw = fakeGateway(
      `[server]\nlog_level = "error"\n${modelToml("a", up, "anthropic_native = true")}${modelToml("r", up, 'responses_api = "native"')}`,
    );
    gw.states.a = "ready";
    gw.states.r = "ready";
    app = appOf(gw);
    up.answer = () => Response.json({ id: "x", type: "message", content: [] });
    const sh = { name: "sh", input_schema: { type: "object" } };
    const result = {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t", content: "ok" }],
    };
    await post(app, "/v1/messages", { model: "a", max_tokens: 9, tools: [sh], messages: [user] });
    await post(app, "/v1/messages", { model: "a", max_tokens: 9, tools: [sh], messages: [result] });
    await post(app, "/v1/messages", { model: "a", max_tokens: 9, messages: [result] });
    const fn = { type: "function", name: "sh", parameters: { type: "object" } };
    const output = { type: "function_call_output", call_id: "c1", output: "done" };
    await post(app, "/v1/responses", { model: "r", tools: [fn], input: "run it" });
    await post(app, "/v1/responses", { model: "r", tools: [fn], input: [output] });
    await post(app, "/v1/responses", { model: "r", input: [output] });
    expect(gw.hooks.map((a) => a?.toolResult)).toEqual([false, true, false, false, true, false]);
  });

  test("Ollama chat: a tool message; no tools offered, false", async () => {
    up.answer = () => completion({ content: "ok" }, "stop");
    const sh = { type: "function", function: { name: "sh", parameters: { type: "object" } } };
    const messages = [user, { role: "tool", content: "done" }];
    await post(app, "/api/chat", { model: "m", stream: false, tools: [sh], messages: [user] });
    await post(app, "/api/chat", { model: "m", stream: false, tools: [sh], messages });
    await post(app, "/api/chat", { model: "m", stream: false, messages });
    expect(gw.hooks.map((a) => a?.toolResult)).toEqual([false, true, false]);
  });
});
