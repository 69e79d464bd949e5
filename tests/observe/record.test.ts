/**
 * Every request for a model leaves exactly one record when it is over, whichever API it came in
 * on: its status, wait, whether it waited for a load, its times, and what the answer stated of
 * itself (its usage: token counts, finish reason) — read off passthrough bytes or told by the
 * translator.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import type { RequestRecord } from "../../src/observe/record.ts";
import { useFakeFetch } from "../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { type App, appOf, call, post } from "../support/in-process.ts";
import { chunk, completion, sseResponse, sseText } from "../support/openai-answers.ts";

const up = useFakeFetch();
const TOML = `[server]\nlog_level = "error"\n${modelToml("m", up)}`;
const chat = { model: "m", messages: [{ role: "user", content: "hi" }] };
const USAGE = {
  prompt_tokens: 12,
  completion_tokens: 3,
  prompt_tokens_details: { cached_tokens: 8 },
};

let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(TOML);
  gw.states.m = "ready";
  app = appOf(gw);
});

function only(): RequestRecord {
  expect(gw.records).toHaveLength(1);
  return gw.records[0]!;
}

const streamed = () =>
  sseResponse(
    sseText([
      chunk({ role: "assistant", content: "Hi" }),
      chunk({}, "stop"),
      { choices: [], usage: USAGE },
    ]),
  );

describe("one record per request", () => {
  test("an OpenAI answer passed through whole: counts and finish reason from its bytes", async () => {
    up.answer = () => completion({ content: "Hello" }, "stop");
    gw.waitedMs = 42;
    const res = await post(app, "/v1/chat/completions", chat);
    await res.text();
    const r = only();
    expect(r).toMatchObject({
      model: "m",
      api: "openai",
      status: 200,
      answered: true,
      wait_ms: 42,
      swap: false,
      ttft_ms: null,
      prompt_tokens: 9,
      completion_tokens: 4,
      cached_tokens: null,
      finish_reason: "stop",
    });
    expect(r.duration_ms).toBeGreaterThanOrEqual(0);
    expect(Math.abs(r.time - Date.now())).toBeLessThan(60_000);
  });

  test("an OpenAI stream passed through: the record comes when the stream is over", async () => {
    up.answer = streamed;
    const res = await post(app, "/v1/chat/completions", { ...chat, stream: true });
    expect(gw.records).toHaveLength(0);
    await res.text();
    expect(only()).toMatchObject({
      api: "openai",
      status: 200,
      answered: true,
      prompt_tokens: 12,
      completion_tokens: 3,
      cached_tokens: 8,
      finish_reason: "stop",
    });
    expect(only().ttft_ms).toBeGreaterThanOrEqual(0);
  });

  test("a request that waited for its model's load is a swap", async () => {
    gw.states.m = "stopped";
    up.answer = () => completion({ content: "x" }, "stop");
    await (await post(app, "/v1/chat/completions", chat)).text();
    expect(only().swap).toBe(true);
  });

  test("the upstream's refusal: its status, and the exchange still ends once", async () => {
    up.answer = () => Response.json({ error: { message: "bad" } }, { status: 400 });
    await (await post(app, "/v1/chat/completions", chat)).text();
    expect(only()).toMatchObject({ status: 400, answered: true, prompt_tokens: null });
  });

  test("an upstream that cannot be reached: qm's own error status, not answered", async () => {
    up.answer = () => {
      throw new TypeError("connection refused");
    };
    const res = await post(app, "/v1/chat/completions", chat);
    await res.text();
    expect(only()).toMatchObject({ status: res.status, answered: false });
    expect(res.status).toBeGreaterThanOrEqual(500);
  });

  test("a client that leaves mid-stream: one record, not answered", async () => {
    let push: (s: string) => void = () => {};
    up.answer = () =>
      sseResponse(
        new ReadableStream<Uint8Array>({
          start(c) {
            push = (s) => c.enqueue(new TextEncoder().encode(s));
          },
        }),
      );
    const res = await post(app, "/v1/chat/completions", { ...chat, stream: true });
    const reader = res.body!.getReader();
    push(sseText([chunk({ content: "a" })], false));
    await reader.read();
    await reader.cancel();
    expect(only()).toMatchObject({ status: 200, answered: false });
  });

  test("a refusal before the exchange (unknown model) leaves no record", async () => {
    const res = await post(app, "/v1/chat/completions", { ...chat, model: "nope" });
    expect(res.status).toBe(404);
    expect(gw.records).toHaveLength(0);
  });

  test("times on the call's clock: first chunk and end", async () => {
    const timers = new FakeTimers();
    gw = fakeGateway(TOML, timers);
    gw.states.m = "ready";
    app = appOf(gw);
    let push: (s: string | null) => void = () => {};
    up.answer = () => {
      timers.advance(30);
      return sseResponse(
        new ReadableStream<Uint8Array>({
          start(c) {
            push = (s) => (s === null ? c.close() : c.enqueue(new TextEncoder().encode(s)));
          },
        }),
      );
    };
    const res = await post(app, "/v1/chat/completions", { ...chat, stream: true });
    const reader = res.body!.getReader();
    timers.advance(20);
    push(sseText([chunk({ content: "a" })], false));
    await reader.read();
    timers.advance(50);
    push(sseText([chunk({}, "stop")]));
    push(null);
    while (!(await reader.read()).done) {}
    expect(only()).toMatchObject({ ttft_ms: 50, duration_ms: 100, finish_reason: "stop" });
  });
});

describe("each API names itself", () => {
  test("Anthropic, translated: the translator tells the usage (whole and streamed)", async () => {
    up.answer = () => completion({ content: "Hello" }, "stop");
    const body = { model: "m", max_tokens: 50, messages: [{ role: "user", content: "hi" }] };
    await (await post(app, "/v1/messages", body)).text();
    up.answer = streamed;
    await (await post(app, "/v1/messages", { ...body, stream: true })).text();
    expect(
      gw.records.map((r) => [r.api, r.prompt_tokens, r.completion_tokens, r.finish_reason]),
    ).toEqual([
      ["anthropic", 9, 4, "stop"],
      ["anthropic", 12, 3, "stop"],
    ]);
    expect(gw.records[1]!.cached_tokens).toBe(8);
    expect(gw.records[1]!.ttft_ms).not.toBeNull();
  });

  test("Responses, translated", async () => {
    up.answer = () => completion({ content: "Hello" }, "stop");
    await (await post(app, "/v1/responses", { model: "m", input: "hi", store: false })).text();
    up.answer = streamed;
    await (
      await post(app, "/v1/responses", { model: "m", input: "hi", store: false, stream: true })
    ).text();
    expect(
      gw.records.map((r) => [r.api, r.prompt_tokens, r.completion_tokens, r.finish_reason]),
    ).toEqual([
      ["responses", 9, 4, "stop"],
      ["responses", 12, 3, "stop"],
    ]);
  });

  test("Ollama, translated", async () => {
    up.answer = () => completion({ content: "Hello" }, "stop");
    await (
      await post(app, "/api/chat", { model: "m", messages: chat.messages, stream: false })
    ).text();
    up.answer = streamed;
    await (await post(app, "/api/chat", { model: "m", messages: chat.messages })).text();
    expect(
      gw.records.map((r) => [r.api, r.prompt_tokens, r.completion_tokens, r.finish_reason]),
    ).toEqual([
      ["ollama", 9, 4, "stop"],
      ["ollama", 12, 3, "stop"],
    ]);
    expect(gw.records[1]!.ttft_ms).not.toBeNull();
  });

  test("/upstream and a load", async () => {
    up.answer = () => Response.json({ ok: true });
    await (await call(app, "GET", "/upstream/m/props")).text();
    await (await call(app, "POST", "/api/models/m/load")).text();
    expect(gw.records.map((r) => [r.api, r.status])).toEqual([
      ["upstream", 200],
      ["load", 200],
    ]);
  });
});
