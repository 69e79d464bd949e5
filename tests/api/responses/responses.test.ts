/** `POST /v1/responses` translated to chat completions, in-process against a fake upstream. */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { toChat } from "../../../src/api/responses/translate/request.ts";
import { fromChat } from "../../../src/api/responses/translate/response.ts";
import { QmError } from "../../../src/shared/errors.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { appOf, bodyOf, post } from "../../support/in-process.ts";
import { completion } from "../../support/openai-answers.ts";
import { FakeUpstream } from "../anthropic/support.ts";

const opts = { upstreamModel: "up" };
const shape = { id: "resp_1", model: "m", createdAt: 1, echo: {} };

describe("request translation", () => {
  test("items, instructions, tools (namespace kept, built-ins dropped) and options", () => {
    const { chat, dropped, namespaces } = toChat(
      {
        instructions: "be brief",
        input: [
          { type: "message", role: "developer", content: [{ type: "input_text", text: "dev" }] },
          { role: "user", content: "weather?" },
          { type: "reasoning", summary: [{ type: "summary_text", text: "think" }] },
          { type: "function_call", call_id: "c1", name: "get", arguments: '{"a":1}' },
          { type: "function_call", call_id: "c2", name: "get", arguments: "{}" },
          { type: "function_call_output", call_id: "c1", output: "12C" },
          {
            type: "function_call_output",
            call_id: "c2",
            output: [{ type: "input_text", text: "x" }],
          },
        ],
        tools: [
          { type: "function", name: "get", parameters: { type: "object" } },
          { type: "namespace", name: "ns", tools: [{ type: "function", name: "inner" }] },
          { type: "web_search", external_web_access: false },
        ],
        tool_choice: { type: "function", name: "get" },
        parallel_tool_calls: false,
        max_output_tokens: 50,
        temperature: 0.5,
        top_p: 0.9,
        reasoning: { effort: "minimal", summary: "auto" },
        text: { format: { type: "json_schema", name: "out", schema: { type: "object" } } },
        store: false,
        include: ["reasoning.encrypted_content"],
      },
      opts,
    );
    expect(dropped).toEqual(["web_search"]);
    expect([...namespaces]).toEqual([["inner", "ns"]]);
    expect(chat.messages).toEqual([
      { role: "system", content: "be brief" },
      { role: "system", content: "dev" },
      { role: "user", content: "weather?" },
      {
        role: "assistant",
        content: null,
        reasoning_content: "think",
        tool_calls: [
          { id: "c1", type: "function", function: { name: "get", arguments: '{"a":1}' } },
          { id: "c2", type: "function", function: { name: "get", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "12C" },
      { role: "tool", tool_call_id: "c2", content: "x" },
    ]);
    expect(chat.tools?.map((t) => t.function.name)).toEqual(["get", "inner"]);
    expect(chat.tool_choice).toEqual({ type: "function", function: { name: "get" } });
    expect(chat.parallel_tool_calls).toBe(false);
    expect(chat.max_tokens).toBe(50);
    expect(chat.temperature).toBe(0.5);
    expect(chat.top_p).toBe(0.9);
    expect(chat.reasoning_effort).toBe("low");
    expect(chat.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "out", schema: { type: "object" } },
    });
  });

  test("malformed input is a 400 naming the field", () => {
    const bad = (body: Record<string, unknown>, param: string) => {
      try {
        toChat(body, opts);
        throw new Error("accepted");
      } catch (e) {
        expect(e).toBeInstanceOf(QmError);
        expect((e as QmError).status).toBe(400);
        expect((e as QmError).param).toBe(param);
      }
    };
    bad({}, "input");
    bad({ input: 3 }, "input");
    bad({ input: [{ role: "robot", content: "x" }] }, "input[0].role");
    bad({ input: [{ type: "function_call", name: "f", arguments: "{}" }] }, "input[0].call_id");
    bad({ input: "hi", temperature: 9 }, "temperature");
    bad({ input: "hi", tools: [{ type: "function" }] }, "tools[0].name");
  });

  test("each malformed field is named with what it must be; null counts as absent", () => {
    const said = (body: Record<string, unknown>) => {
      try {
        toChat(body, opts);
        return "accepted";
      } catch (e) {
        return `${(e as QmError).param}: ${(e as QmError).message}`;
      }
    };
    const cases: [Record<string, unknown>, string][] = [
      [{}, "input: input is required"],
      [{ input: 3 }, "input: input must be a string or an array of items"],
      [{ input: [3] }, "input[0]: input[0] must be an object"],
      [{ input: "x", instructions: 5 }, "instructions: instructions must be a string"],
      [{ input: "x", stream: "yes" }, "stream: stream must be a boolean"],
      [
        { input: "x", max_output_tokens: 0 },
        "max_output_tokens: max_output_tokens must be an integer of at least 1",
      ],
      [
        { input: "x", max_output_tokens: 1.5 },
        "max_output_tokens: max_output_tokens must be an integer of at least 1",
      ],
      [{ input: "x", top_p: 2 }, "top_p: top_p must be a number from 0 to 1"],
      [{ input: "x", tools: {} }, "tools: tools must be an array"],
      [
        { input: "x", tools: [{ type: "function", name: "f", parameters: 1 }] },
        "tools[0].parameters: tools[0].parameters must be an object",
      ],
      [
        { input: "x", tools: [{ type: "namespace", name: "n" }] },
        "tools[0].tools: tools[0].tools is required",
      ],
      [
        { input: "x", tool_choice: "sometimes" },
        'tool_choice: tool_choice must be "auto", "none", "required" or an object',
      ],
      [
        { input: "x", tools: [{ type: "function", name: "f" }], tool_choice: { type: "function" } },
        "tool_choice.name: tool_choice.name is required",
      ],
      [
        { input: "x", text: { format: { type: "yaml" } } },
        'text.format.type: text.format.type must be "text", "json_object" or "json_schema"',
      ],
      [
        { input: "x", text: { format: { type: "json_schema", schema: "s" } } },
        "text.format.schema: text.format.schema must be an object",
      ],
      [
        { input: [{ role: "user", content: 5 }] },
        "input[0].content: input[0].content must be a string or an array of parts",
      ],
      [
        { input: [{ role: "user", content: [{ type: "input_text" }] }] },
        "input[0].content[0].text: input[0].content[0].text is required",
      ],
      [
        { input: [{ role: "user", content: [{ type: "input_image", image_url: "" }] }] },
        "input[0].content[0].image_url: input[0].content[0].image_url must be a URL or a data: URL",
      ],
      [
        { input: [{ type: "function_call_output", output: "x" }] },
        "input[0].call_id: input[0].call_id is required",
      ],
    ];
    for (const [body, want] of cases)
      expect({ body, got: said(body) }).toEqual({ body, got: want });
    const nulls = { instructions: null, stream: null, store: null, temperature: null, tools: null };
    expect(said({ input: "x", ...nulls, tool_choice: null, text: null })).toBe("accepted");
  });
});

describe("answer translation", () => {
  test("text, reasoning, function calls, usage; length → incomplete", () => {
    const r = fromChat(
      {
        choices: [
          {
            message: {
              content: "hi",
              reasoning_content: "hmm",
              tool_calls: [{ id: "call_1", function: { name: "f", arguments: "{}" } }],
            },
            finish_reason: "length",
          },
        ],
        usage: {
          prompt_tokens: 9,
          completion_tokens: 4,
          prompt_tokens_details: { cached_tokens: 3 },
          completion_tokens_details: { reasoning_tokens: 2 },
        },
      },
      shape,
    );
    expect(r.status).toBe("incomplete");
    expect(r.incomplete_details).toEqual({ reason: "max_output_tokens" });
    const out = r.output as Record<string, unknown>[];
    expect(out.map((o) => o.type)).toEqual(["reasoning", "message", "function_call"]);
    expect(out[2]).toMatchObject({ call_id: "call_1", name: "f", arguments: "{}" });
    expect(r.usage).toEqual({
      input_tokens: 9,
      input_tokens_details: { cached_tokens: 3 },
      output_tokens: 4,
      output_tokens_details: { reasoning_tokens: 2 },
      total_tokens: 13,
    });
  });
});

const up = new FakeUpstream();
let gw: FakeGw;
afterAll(() => up.stop());
beforeEach(() => {
  gw = fakeGateway(modelToml("m", up));
  gw.states.m = "ready";
});

describe("POST /v1/responses", () => {
  test("the official SDK gets a Response; the upstream got a chat request", async () => {
    up.handle = () => completion({ content: "Hello" }, "stop");
    const app = appOf(gw);
    const client = new OpenAI({
      apiKey: "k",
      baseURL: "http://localhost/v1",
      maxRetries: 0,
      fetch: async (input: string | URL | Request, init?: RequestInit) =>
        app.handle(new Request(input as string, init)),
    });
    const r = await client.responses.create({ model: "m", input: "hi", instructions: "sys" });
    expect(r.id).toMatch(/^resp_/);
    expect(r.object).toBe("response");
    expect(r.status).toBe("completed");
    expect(r.model).toBe("m");
    expect(r.output_text).toBe("Hello");
    expect(r.usage?.total_tokens).toBe(13);
    expect(up.last().body.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "hi" },
    ]);
  });

  test("a function call answer; errors in the OpenAI envelope", async () => {
    up.handle = () =>
      completion(
        { content: null, tool_calls: [{ id: "c9", function: { name: "f", arguments: "{}" } }] },
        "tool_calls",
      );
    const res = await post(appOf(gw), "/v1/responses", {
      model: "m",
      input: "go",
      tools: [{ type: "function", name: "f" }],
    });
    const body = await bodyOf(res);
    expect(body.output).toEqual([
      expect.objectContaining({ type: "function_call", call_id: "c9", name: "f" }),
    ]);
    const bad = await post(appOf(gw), "/v1/responses", { model: "m", input: 7 });
    expect(bad.status).toBe(400);
    expect((await bodyOf(bad)).error).toMatchObject({
      type: "invalid_request_error",
      param: "input",
    });
    const missing = await post(appOf(gw), "/v1/responses", { model: "nope", input: "x" });
    expect(missing.status).toBe(404);
    expect((await bodyOf(missing)).error.type).toBe("invalid_request_error");
  });
});
