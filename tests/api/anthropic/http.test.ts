/**
 * The HTTP surface of `/v1/messages` in-process: wait status, header hygiene, the error
 * envelope, client aborts, leases and pings.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { bodyOf, post } from "../../support/in-process.ts";
import { chunk, completion, sseResponse, sseText } from "../../support/openai-answers.ts";
import { build } from "./grammar.ts";
import { appFor, basic, FakeUpstream, parseEvents, textStream } from "./support.ts";

const up = new FakeUpstream();
let gw: FakeGw;
afterAll(() => up.stop());
beforeEach(() => {
  gw = fakeGateway(modelToml("m", up));
  gw.states.m = "ready";
  up.handle = () => new Response("unset", { status: 500 });
});

describe("HTTP surface", () => {
  test("the placeholder writes SSE comments, then Anthropic events; errors are event: error", async () => {
    gw.states.m = "stopped";
    gw.gate = Promise.resolve();
    up.handle = () => textStream();
    const res = await post(appFor(gw), "/v1/messages", { ...basic, stream: true });
    const text = await res.text();
    expect(text).toStartWith(": qm-status: loading\n\n");
    expect(build(parseEvents(text)).message.content).toEqual([{ type: "text", text: "Hello" }]);
    // A model that fails to come up: the stream says so in Anthropic's words.
    gw.states.m = "stopped";
    gw.gate = Promise.reject(new Error("start failed"));
    gw.gate.catch(() => {});
    const bad = await (await post(appFor(gw), "/v1/messages", { ...basic, stream: true })).text();
    expect(build(parseEvents(bad)).error).toEqual({ type: "api_error", message: "start failed" });
  });

  test("?beta=true, unknown betas and any version are accepted and never forwarded", async () => {
    up.handle = () => completion({ content: "ok" }, "stop");
    const betas = Array.from({ length: 10 }, (_, i) => `made-up-beta-2026-0${i}-01`).join(",");
    const res = await post(appFor(gw), "/v1/messages?beta=true", basic, {
      "anthropic-beta": betas,
      "anthropic-version": "2026-10-21",
      "x-api-key": "secret",
      "x-stainless-lang": "js",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("request-id")).toMatch(/^req_/);
    expect(res.headers.get("x-qm-model")).toBe("m");
    const sent = up.last();
    expect(sent.path).toBe("/v1/chat/completions");
    for (const h of Object.keys(sent.headers)) {
      expect(h.startsWith("anthropic-") || h.startsWith("x-stainless") || h === "x-api-key").toBe(
        false,
      );
    }
  });

  test("errors use the Anthropic envelope: bad JSON, missing field, unknown model, method, route, size", async () => {
    const app = appFor(gw);
    const bad = await app.handle(
      new Request("http://localhost/v1/messages", { method: "POST", body: "{" }),
    );
    expect([bad.status, (await bodyOf(bad)).error.type]).toEqual([400, "invalid_request_error"]);
    const missing = await post(app, "/v1/messages", { model: "m", messages: [] });
    expect(await bodyOf(missing)).toMatchObject({
      type: "error",
      error: { message: "max_tokens: Field required" },
    });
    const unknown = await post(app, "/v1/messages", { ...basic, model: "nope" });
    expect([unknown.status, (await bodyOf(unknown)).error.type]).toEqual([404, "not_found_error"]);
    const get = await app.handle(new Request("http://localhost/v1/messages"));
    expect([get.status, get.headers.get("allow"), (await bodyOf(get)).type]).toEqual([
      405,
      "POST",
      "error",
    ]);
    const route = await post(app, "/v1/messages/batches", {});
    expect([route.status, (await bodyOf(route)).error.type]).toEqual([404, "not_found_error"]);
    const tiny = fakeGateway(`[server]\nmax_body_mb = 0.0001\n${modelToml("m", up)}`);
    const big = await post(appFor(tiny), "/v1/messages", { ...basic, pad: "x".repeat(500) });
    expect([big.status, (await bodyOf(big)).error.type]).toEqual([413, "request_too_large"]);
    gw.shuttingDown = true;
    const down = await post(app, "/v1/messages", basic);
    expect([down.status, (await bodyOf(down)).error.type]).toEqual([503, "overloaded_error"]);
  });

  test("a client that goes away aborts the upstream request", async () => {
    let aborted: () => void = () => {};
    const gone = new Promise<void>((r) => {
      aborted = r;
    });
    up.handle = (r) => {
      // The prompt is counted first (llama-server's /apply-template): this server cannot.
      if (r.path !== "/v1/chat/completions") return new Response("", { status: 404 });
      r.signal.addEventListener("abort", () => aborted());
      return sseResponse(
        new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode(sseText([chunk({ content: "x" })], false)));
          },
        }),
      );
    };
    const client = new AbortController();
    const res = await post(
      appFor(gw, 60_000),
      "/v1/messages",
      { ...basic, stream: true },
      {},
      client.signal,
    );
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    client.abort();
    await gone;
    expect(gw.releases).toEqual([{ toolCalls: false }]);
  });

  test("non-streamed tool use releases with toolCalls; odd ids are sanitised", async () => {
    up.handle = () =>
      completion(
        {
          content: null,
          tool_calls: [
            {
              id: "functions.Read:0",
              type: "function",
              function: { name: "Read", arguments: '{"p":1}' },
            },
          ],
        },
        "tool_calls",
      );
    const res = await post(appFor(gw), "/v1/messages", basic);
    const msg = await bodyOf(res);
    expect(msg.content).toEqual([
      { type: "tool_use", id: "functions_Read_0", name: "Read", input: { p: 1 } },
    ]);
    expect(gw.releases).toEqual([{ toolCalls: true }]);
  });

  test("a silent upstream gets a 200 and pings until it answers", async () => {
    let answer: () => void = () => {};
    const later = new Promise<void>((r) => {
      answer = r;
    });
    up.handle = async () => {
      await later;
      return textStream("late");
    };
    const res = await post(appFor(gw, 10), "/v1/messages", { ...basic, stream: true });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("event: ping")) text += decoder.decode((await reader.read()).value);
    answer();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const built = build(parseEvents(text));
    expect(built.pings).toBeGreaterThan(0);
    expect(built.message.content).toEqual([{ type: "text", text: "late" }]);
  });
});
