/** The pure pieces of the Ollama inference routes: keep_alive, request mapping, the transducer. */
import { describe, expect, test } from "bun:test";
import { readChunk } from "../../../src/api/chat/chunk.ts";
import { ToolCalls } from "../../../src/api/chat/tool-calls.ts";
import { translatedStream } from "../../../src/api/chat/translated-body.ts";
import { FOREVER, goDurationMs, keepAliveMs } from "../../../src/api/ollama/keep-alive.ts";
import type { Clock, Timing } from "../../../src/api/ollama/lines.ts";
import { expiresAt } from "../../../src/api/ollama/models.ts";
import { chatRequest, generateRequest } from "../../../src/api/ollama/request.ts";
import { NdjsonTranslator, type StreamShape } from "../../../src/api/ollama/stream.ts";
import { wholeCalls } from "../../../src/api/ollama/tool-calls.ts";
import type { ModelStatusJson } from "../../../src/api/status-json.ts";
import { QmError } from "../../../src/shared/errors.ts";
import { chunk, sseText } from "../../support/openai-answers.ts";

describe("keep_alive", () => {
  test.each([
    [300, 300_000],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["10s", 10_000],
    ["250ms", 250],
    ["1.5h", 5_400_000],
    ["300", 300_000],
    [0, 0],
    ["0", 0],
    ["0s", 0],
    [-1, FOREVER],
    ["-1m", FOREVER],
    [1e12, FOREVER],
  ] as [unknown, number][])("%p → %p ms", (raw, ms) => {
    expect(keepAliveMs(raw)).toBe(ms);
  });

  test("absent is undefined (ttl_s applies); anything else is a 400 naming keep_alive", () => {
    expect(keepAliveMs(undefined)).toBeUndefined();
    expect(keepAliveMs(null)).toBeUndefined();
    for (const bad of ["soon", "5 minutes", "", "m5", "1d", true, {}, [], Number.NaN]) {
      let err: unknown;
      try {
        keepAliveMs(bad);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(QmError);
      expect((err as QmError).status).toBe(400);
      expect((err as QmError).message).toContain('"keep_alive"');
    }
    expect(goDurationMs("2h45m30.5s")).toBe(9_930_500);
  });

  test("/api/ps expires_at: idle expiry, a busy model's keep-alive from now, or never", () => {
    const s = (o: Partial<ModelStatusJson>) =>
      ({
        ttl_s: 0,
        keep_alive_ms: null,
        unload_at_ms: null,
        held_until_ms: null,
        ...o,
      }) as ModelStatusJson;
    const now = Date.UTC(2026, 0, 1);
    expect(expiresAt(s({}), now)).toBe("2318-01-01T00:00:00Z");
    expect(expiresAt(s({ keep_alive_ms: -1, ttl_s: 60 }), now)).toBe("2318-01-01T00:00:00Z");
    expect(Date.parse(expiresAt(s({ unload_at_ms: now + 5000 }), now))).toBe(now + 5000);
    expect(Date.parse(expiresAt(s({ keep_alive_ms: 120_000, ttl_s: 5 }), now))).toBe(now + 120_000);
    expect(Date.parse(expiresAt(s({ ttl_s: 5, held_until_ms: now + 9000 }), now))).toBe(now + 9000);
  });
});

describe("request mapping", () => {
  const chat = (body: Record<string, unknown>) =>
    chatRequest(
      { model: "m", messages: [{ role: "user", content: "x" }], ...body },
      "llamacpp",
      "up",
    );

  test.each([
    [{ options: { temperature: 0.1 } }, { temperature: 0.1 }],
    [{ options: { top_p: 0.9, top_k: 40, min_p: 0.05 } }, { top_p: 0.9, top_k: 40, min_p: 0.05 }],
    [{ options: { seed: 7 } }, { seed: 7 }],
    [{ options: { stop: ["a", "b"] } }, { stop: ["a", "b"] }],
    [{ options: { num_predict: 100 } }, { max_tokens: 100 }],
    [{ options: { repeat_penalty: 1.1 } }, { repeat_penalty: 1.1 }],
    [
      { options: { presence_penalty: 0.5, frequency_penalty: 0.2 } },
      { presence_penalty: 0.5, frequency_penalty: 0.2 },
    ],
    [{ format: "json" }, { response_format: { type: "json_object" } }],
    [
      { format: { type: "object" } },
      {
        response_format: {
          type: "json_schema",
          json_schema: { name: "format", schema: { type: "object" } },
        },
      },
    ],
    [{ think: true }, { chat_template_kwargs: { enable_thinking: true } }],
    [
      { think: false },
      { chat_template_kwargs: { enable_thinking: false }, thinking_budget_tokens: 0 },
    ],
    [
      { think: "high" },
      { chat_template_kwargs: { enable_thinking: true }, reasoning_effort: "high" },
    ],
    [{ stream: false }, { stream: false }],
    [{}, { model: "up", stream: true, stream_options: { include_usage: true } }],
  ] as [Record<string, unknown>, Record<string, unknown>][])("%j → %j", (body, fields) => {
    expect(chat(body).upstream).toMatchObject(fields);
  });

  test("num_predict -1 (no limit) sends no max_tokens; num_ctx and keep_alive are the route's", () => {
    const a = chat({ options: { num_predict: -1, num_ctx: 8192, num_gpu: 99 }, keep_alive: "1m" });
    expect(a.upstream.max_tokens).toBeUndefined();
    expect(a.upstream.num_gpu).toBeUndefined();
    expect(a.upstream.num_ctx).toBeUndefined();
    expect(a.numCtx).toBe(8192);
    expect(a.keepAliveMs).toBe(60_000);
  });

  test("assistant thinking goes back in the profile's reasoning field; tool results by id or order", () => {
    const a = chatRequest(
      {
        model: "m",
        messages: [
          {
            role: "assistant",
            content: "",
            thinking: "t",
            tool_calls: [
              { function: { name: "f", arguments: { a: 1 } } },
              { function: { name: "g", arguments: "{}" } },
            ],
          },
          { role: "tool", tool_name: "g", content: "G" },
          { role: "tool", content: "F" },
        ],
      },
      "vllm",
      "up",
    );
    const msgs = a.upstream.messages as Record<string, unknown>[];
    expect(msgs[0]).toMatchObject({ reasoning: "t", content: null });
    expect(msgs[1]).toEqual({ role: "tool", content: "G", tool_call_id: "call_1" });
    expect(msgs[2]).toEqual({ role: "tool", content: "F", tool_call_id: "call_0" });
  });

  test("each malformed field is a 400 naming it, with what it must be; null counts as absent", () => {
    const said = (f: typeof chatRequest, body: Record<string, unknown>) => {
      try {
        f({ model: "m", ...body }, "llamacpp", "up");
        return "accepted";
      } catch (e) {
        expect((e as QmError).status).toBe(400);
        return `${(e as QmError).param}: ${(e as QmError).message}`;
      }
    };
    const cases: [typeof chatRequest, Record<string, unknown>, string][] = [
      [chatRequest, { messages: {} }, 'messages: "messages" must be a list'],
      [chatRequest, { messages: [1] }, 'messages[0]: "messages[0]" must be an object'],
      [
        chatRequest,
        { messages: [{ content: "x" }] },
        'messages[0].role: "messages[0].role" is required',
      ],
      [
        chatRequest,
        { messages: [{ role: "user", images: [""] }] },
        'messages[0].images[0]: "messages[0].images[0]" must be a base64 string',
      ],
      [
        chatRequest,
        { messages: [{ role: "assistant", tool_calls: [{}] }] },
        'messages[0].tool_calls[0].function.name: "messages[0].tool_calls[0].function.name" must be a string',
      ],
      [
        chatRequest,
        {
          messages: [
            { role: "assistant", tool_calls: [{ function: { name: "f", arguments: 1 } }] },
          ],
        },
        'messages[0].tool_calls[0].function.arguments: "messages[0].tool_calls[0].function.arguments" must be an object',
      ],
      [
        chatRequest,
        { tools: [{ function: { name: "" } }] },
        'tools[0].function.name: "tools[0].function.name" must be a string',
      ],
      [
        chatRequest,
        { options: { num_predict: 1.5 } },
        'options.num_predict: "options.num_predict" must be a whole number (-1: no limit)',
      ],
      [
        chatRequest,
        { options: { stop: [1] } },
        'options.stop: "options.stop" must be a list of strings',
      ],
      [
        chatRequest,
        { options: { num_ctx: 0 } },
        'options.num_ctx: "options.num_ctx" must be a positive whole number',
      ],
      [generateRequest, { prompt: 1 }, 'prompt: "prompt" must be a string'],
      [generateRequest, { raw: "yes" }, 'raw: "raw" must be true or false'],
      [generateRequest, { images: "x" }, 'images: "images" must be a list of base64 strings'],
    ];
    for (const [f, body, want] of cases) {
      expect({ body, got: said(f, body) }).toEqual({ body, got: want });
    }
    const nulls = { stream: null, options: null, format: null, think: null, tools: null };
    expect(said(chatRequest, { ...nulls, messages: null })).toBe("accepted");
    expect(said(chatRequest, { options: { temperature: null, stop: null } })).toBe("accepted");
    expect(said(generateRequest, { ...nulls, prompt: null, raw: null, images: null })).toBe(
      "accepted",
    );
  });

  test("generate: an empty prompt only loads; raw drops the thinking switches", () => {
    expect(generateRequest({ model: "m" }, "generic", "up").loadOnly).toBe(true);
    const raw = generateRequest(
      { model: "m", prompt: "p", raw: true, think: true },
      "generic",
      "up",
    );
    expect(raw.path).toBe("/v1/completions");
    expect(raw.upstream).toEqual({
      model: "up",
      stream: true,
      stream_options: { include_usage: true },
      prompt: "p",
    });
  });
});

const fixedClock = (): Clock => {
  let t = 100;
  const now = () => {
    t += 1;
    return t;
  };
  return { now, iso: () => "2026-01-01T00:00:00.000Z" };
};
const timing: Timing = { start: 0, granted: 10, sent: 20 };
const shape = (kind: "chat" | "generate" = "chat"): StreamShape => ({
  kind,
  model: "m",
  think: undefined,
  timing,
  clock: fixedClock(),
});

/** One upstream event's data, read as the stream reads it. */
const event = (data: object | string) =>
  readChunk(typeof data === "string" ? data : JSON.stringify(data)) ?? fail("skipped");
const fail = (why: string): never => {
  throw new Error(why);
};

const SSE = sseText([
  chunk({ role: "assistant", content: "" }),
  chunk({ reasoning_content: "pondering" }),
  chunk({ content: "Héllo " }),
  chunk({ content: "wörld 🌍" }),
  chunk({ tool_calls: [{ index: 0, id: "c", function: { name: "f", arguments: '{"q":' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '"ü"}' } }] }),
  chunk({}, "tool_calls"),
  {
    choices: [],
    usage: { prompt_tokens: 5, completion_tokens: 6 },
    timings: { prompt_ms: 3, predicted_ms: 4 },
  },
]);

/** The NDJSON text the stream makes of `parts` (the upstream body in those pieces). */
async function streamed(
  parts: Uint8Array[],
): Promise<{ text: string; ends: [boolean, boolean][] }> {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of parts) c.enqueue(p);
      c.close();
    },
  });
  const ends: [boolean, boolean][] = [];
  const out = translatedStream({
    upstream: new Response(body),
    translator: new NdjsonTranslator(shape()),
    model: "m",
    onEnd: (a, t) => ends.push([a, t]),
    onCancel: () => {},
  });
  return { text: await new Response(out).text(), ends };
}

describe("SSE → NDJSON", () => {
  test("the lines: thinking, text, the whole tool call, then done with the upstream's counts", async () => {
    const { text, ends } = await streamed([new TextEncoder().encode(SSE)]);
    const lines = text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.message)).toEqual([
      { role: "assistant", content: "", thinking: "pondering" },
      { role: "assistant", content: "Héllo " },
      { role: "assistant", content: "wörld 🌍" },
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "c", function: { index: 0, name: "f", arguments: { q: "ü" } } }],
      },
      { role: "assistant", content: "" },
    ]);
    expect(lines.at(-1)).toEqual({
      model: "m",
      created_at: "2026-01-01T00:00:00.000Z",
      message: { role: "assistant", content: "" },
      done: true,
      done_reason: "stop",
      total_duration: expect.any(Number),
      load_duration: 10_000_000,
      prompt_eval_count: 5,
      prompt_eval_duration: 3_000_000,
      eval_count: 6,
      eval_duration: 4_000_000,
    });
    expect(ends).toEqual([[true, true]]);
  });

  test("split at every byte boundary, the same lines", async () => {
    const bytes = new TextEncoder().encode(SSE);
    const whole = (await streamed([bytes])).text;
    for (let i = 1; i < bytes.length; i++) {
      const { text, ends } = await streamed([bytes.subarray(0, i), bytes.subarray(i)]);
      expect(text).toBe(whole);
      expect(ends).toHaveLength(1);
    }
  });

  test("think: false drops thinking; generate lines carry response; no usage counts deltas", () => {
    const t = new NdjsonTranslator({ ...shape("generate"), think: false });
    expect(t.step(event(chunk({ reasoning_content: "x" })))).toBe("");
    const line = JSON.parse(t.step(event(chunk({ content: "a" }))));
    expect(line).toEqual({
      model: "m",
      created_at: "2026-01-01T00:00:00.000Z",
      response: "a",
      done: false,
    });
    t.step(event(chunk({}, "length")));
    const last = JSON.parse(t.step(event("[DONE]")));
    expect(last).toMatchObject({ response: "", done: true, done_reason: "length", eval_count: 1 });
    expect(t.finished).toBe(true);
    expect(t.step(event(chunk({ content: "late" })))).toBe("");
  });

  test("an upstream error event is an error line; a read failure is one too", async () => {
    const t = new NdjsonTranslator(shape());
    expect(t.step(event({ error: { message: "boom" } }))).toBe('{"error":"boom"}\n');
    expect(t.finished).toBe(true);
    const failing = new ReadableStream<Uint8Array>({
      pull(c) {
        c.error(new Error("socket reset"));
      },
    });
    const ends: [boolean, boolean][] = [];
    const out = translatedStream({
      upstream: new Response(failing),
      translator: new NdjsonTranslator(shape()),
      model: "m",
      onEnd: (a, tc) => ends.push([a, tc]),
      onCancel: () => {},
    });
    const text = await new Response(out).text();
    expect(JSON.parse(text).error).toContain('"m"');
    expect(ends).toEqual([[false, false]]);
  });
});

describe("tool-call assembly", () => {
  test("pieces by index; whole calls without index; object arguments; sloppy JSON repaired", () => {
    const a = new ToolCalls();
    const add = (calls: object[]) => {
      const s = event(chunk({ tool_calls: calls }));
      if (s.kind === "delta") for (const d of s.tools ?? []) a.add(d);
    };
    add([{ index: 1, id: "b", function: { name: "second", arguments: '{"x":' } }]);
    add([{ index: 0, id: "a", function: { name: "first", arguments: "" } }]);
    add([
      { index: 1, function: { arguments: "1}" } },
      { index: 0, function: { arguments: '{"y":"z",' } },
    ]);
    add([{ id: "c", function: { name: "whole", arguments: { k: true } } }]);
    expect(a.size).toBe(3);
    expect(wholeCalls(a.all)).toEqual([
      { id: "b", function: { index: 0, name: "second", arguments: { x: 1 } } },
      { id: "a", function: { index: 1, name: "first", arguments: { y: "z" } } },
      { id: "c", function: { index: 2, name: "whole", arguments: { k: true } } },
    ]);
    a.clear();
    expect(a.size).toBe(0);
  });
});
