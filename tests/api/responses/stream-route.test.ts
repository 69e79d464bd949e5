/** `POST /v1/responses` with `stream: true`, in-process against a fake upstream, read by the SDK. */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { closeGate, type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { appOf, post } from "../../support/in-process.ts";
import { chunk, sseResponse } from "../../support/openai-answers.ts";
import { FakeUpstream, parseEvents, textStream, toolStream } from "../anthropic/support.ts";

const up = new FakeUpstream();
let gw: FakeGw;
afterAll(() => up.stop());
beforeEach(() => {
  gw = fakeGateway(modelToml("m", up));
  gw.states.m = "ready";
});

function sdk(app = appOf(gw)) {
  return new OpenAI({
    apiKey: "k",
    baseURL: "http://localhost/v1",
    maxRetries: 0,
    fetch: async (input: string | URL | Request, init?: RequestInit) =>
      app.handle(new Request(input as string, init)),
  });
}

describe("stream: true", () => {
  test("responses.stream: events in order, finalResponse() has the text and usage", async () => {
    up.handle = () => textStream("Hello world");
    const stream = sdk().responses.stream({ model: "m", input: "hi" });
    const seen: string[] = [];
    let text = "";
    stream.on("event", (e) => seen.push(e.type));
    stream.on("response.output_text.delta", (e) => {
      text += e.delta;
    });
    const r = await stream.finalResponse();
    expect(seen[0]).toBe("response.created");
    expect(seen).toContain("response.output_text.done");
    expect(seen.at(-1)).toBe("response.completed");
    expect(text).toBe("Hello world");
    expect(r.status).toBe("completed");
    expect(r.output_text).toBe("Hello world");
    expect(r.model).toBe("m");
    expect(r.usage?.input_tokens_details.cached_tokens).toBe(5);
    const sent = up.last().body;
    expect(sent.stream).toBe(true);
    expect(sent.stream_options).toEqual({ include_usage: true });
    expect(gw.leases.map((l) => l.releases)).toEqual([[{ toolCalls: false }]]);
  });

  test("responses.create({stream:true}): parallel function calls; the hold learns of them", async () => {
    up.handle = () => toolStream();
    const events = await sdk().responses.create({
      model: "m",
      input: "weather and time?",
      tools: [
        { type: "function", name: "get_weather", parameters: {}, strict: false },
        { type: "function", name: "get_time", parameters: {}, strict: false },
      ],
      stream: true,
    });
    const all = [];
    for await (const e of events) all.push(e);
    const seqs = all.map((e) => e.sequence_number);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    const done = all.filter((e) => e.type === "response.output_item.done");
    expect(done.map((e) => e.type === "response.output_item.done" && e.item)).toEqual([
      expect.objectContaining({
        type: "function_call",
        call_id: "call_a",
        arguments: '{"city":"Paris"}',
      }),
      expect.objectContaining({
        type: "function_call",
        call_id: "call_b",
        arguments: '{"tz":"UTC"}',
      }),
    ]);
    const last = all.at(-1);
    expect(last?.type).toBe("response.completed");
    expect(gw.leases.map((l) => l.releases)).toEqual([[{ toolCalls: true }]]);
  });

  test("a stream cut before its end is response.failed, which the SDK hands over last", async () => {
    // The SDK raises nothing for response.failed but hands it over as the last event.
    up.handle = () => sseResponse(`data: ${JSON.stringify(chunk({ content: "x" }))}\n\n`);
    const stream = sdk().responses.stream({ model: "m", input: "hi" });
    const types: string[] = [];
    stream.on("event", (e) => types.push(e.type));
    await stream.done().catch(() => {});
    expect(types.at(-1)).toBe("response.failed");
  });

  test("an upstream refusal before the first byte: OpenAI's envelope with the upstream's status", async () => {
    up.handle = () =>
      Response.json(
        { error: { message: "context full", type: "exceed_context_size_error" } },
        { status: 400 },
      );
    const err = await sdk()
      .responses.create({ model: "m", input: "hi", stream: true })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.message).toContain("context full");
    // A body that is not OpenAI's envelope is wrapped in one, its status kept.
    up.handle = () => new Response("upstream exploded", { status: 500 });
    const res = await post(appOf(gw), "/v1/responses", { model: "m", input: "hi", stream: true });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({
      error: {
        message: "upstream exploded",
        type: "upstream_error",
        param: null,
        code: null,
      },
    });
  });

  test("a cold model: comments only while it loads (the placeholder), then the events", async () => {
    gw.states.m = "stopped";
    const gate = closeGate(gw);
    up.handle = () => textStream("Hi");
    const res = await post(appOf(gw), "/v1/responses", { model: "m", input: "hi", stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    gate.open();
    const text = await res.text();
    const first = text.indexOf("event: ");
    expect(text.slice(0, first)).toStartWith(": qm-status: loading\n\n");
    expect(
      text
        .slice(0, first)
        .split("\n")
        .every((l) => l === "" || l.startsWith(":")),
    ).toBe(true);
    const events = parseEvents(text.slice(first));
    expect(events[0]?.event).toBe("response.created");
    expect(events.at(-1)?.event).toBe("response.completed");
  });

  test("a cold model that fails to load: an error event the SDK raises", async () => {
    gw.states.m = "stopped";
    const gate = closeGate(gw);
    const pending = sdk()
      .responses.create({ model: "m", input: "hi", stream: true })
      .then(async (s) => {
        for await (const _ of s) {
          // drain
        }
      })
      .catch((e) => e);
    gate.fail(new Error("exited during start"));
    const err = await pending;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(String(err.message)).toContain("exited during start");
  });

  test("stream must be a boolean", async () => {
    const res = await post(appOf(gw), "/v1/responses", { model: "m", input: "x", stream: "yes" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe("stream");
  });
});
