/**
 * `/v1/messages` through the app, in-process, against a scripted upstream on port 0, with the
 * real SDKs (1.x and 0.x) as clients through their `fetch` option: whole and streamed answers,
 * parallel tool calls, errors mid-stream and before it, upstream 503s, leases and the wait
 * status.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import type { APIError } from "@anthropic-ai/sdk";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { chunk, completion, sseResponse, sseText } from "../../support/openai-answers.ts";
import { clientFor, SDKS } from "./sdk-client.ts";
import { appFor, basic, FakeUpstream, textStream, toolStream } from "./support.ts";

const up = new FakeUpstream();
let gw: FakeGw;
afterAll(() => up.stop());
beforeEach(() => {
  gw = fakeGateway(modelToml("m", up, 'aliases = ["claude-local"]'));
  gw.states.m = "ready";
  up.handle = () => new Response("unset", { status: 500 });
});

describe.each(SDKS)("%s as the client", (_name, Sdk) => {
  test("create (non-stream) and stream().finalMessage(); the requested name is echoed", async () => {
    const client = clientFor(Sdk, appFor(gw));
    up.handle = (r) => (r.body.stream ? textStream() : completion({ content: "Hi" }, "stop"));
    const msg = await client.messages.create({ ...basic, model: "claude-local" } as never);
    expect(msg).toMatchObject({
      type: "message",
      model: "claude-local",
      content: [{ type: "text", text: "Hi" }],
      stop_reason: "end_turn",
      usage: { input_tokens: 9, output_tokens: 4 },
    });
    expect(msg.id).toStartWith("msg_");
    const final = await client.messages
      .stream({ ...basic, model: "claude-local" } as never)
      .finalMessage();
    expect(final.content).toEqual([{ type: "text", text: "Hello" } as never]);
    expect(final.usage).toMatchObject({
      input_tokens: 7,
      output_tokens: 2,
      cache_read_input_tokens: 5,
    });
    expect(up.last().body.model).toBe("claude-local");
    expect(gw.releases).toEqual([{ toolCalls: false }, { toolCalls: false }]);
  });

  test("streamed parallel tool calls; the lease says tool calls", async () => {
    const client = clientFor(Sdk, appFor(gw));
    up.handle = () => toolStream();
    const tools = [
      { name: "get_weather", input_schema: { type: "object" as const } },
      { name: "get_time", input_schema: { type: "object" as const } },
    ];
    const final = await client.messages.stream({ ...basic, tools } as never).finalMessage();
    expect(final.stop_reason).toBe("tool_use");
    expect(final.content.map((b) => (b as { input?: unknown }).input)).toEqual([
      { city: "Paris" },
      { tz: "UTC" },
    ]);
    expect(gw.releases).toEqual([{ toolCalls: true }]);
  });

  test("an error mid-stream raises APIError with the Anthropic type", async () => {
    const client = clientFor(Sdk, appFor(gw));
    up.handle = () =>
      sseResponse(sseText([chunk({ content: "a" }), { error: { message: "boom" } }], false));
    const err = await client.messages
      .stream(basic as never)
      .finalMessage()
      .catch((e: unknown) => e);
    expect((err as Error).constructor.name).toBe("APIError");
    expect((err as APIError).type).toBe("api_error");
    expect(gw.releases).toEqual([{ toolCalls: false }]);
  });

  test("an upstream 400 before streaming is an HTTP 400 (BadRequestError)", async () => {
    const client = clientFor(Sdk, appFor(gw));
    up.handle = () =>
      Response.json(
        {
          error: {
            code: 400,
            message: "the request exceeds the available context size",
            type: "exceed_context_size_error",
            n_prompt_tokens: 70000,
            n_ctx: 65536,
          },
        },
        { status: 400 },
      );
    for (const stream of [false, true]) {
      const err = (await client.messages
        .create({ ...basic, stream } as never)
        .catch((e: unknown) => e)) as APIError;
      expect(err.status).toBe(400);
      expect(err.constructor.name).toBe("BadRequestError");
      expect(err.error).toMatchObject({
        type: "error",
        error: {
          type: "invalid_request_error",
          message: "prompt is too long: 70000 tokens > 65536 maximum",
        },
      });
    }
    // A refusal is an answer: no stall reported, and each call's time limits ended.
    expect(gw.reports).toEqual(["answered m", "answered m"]);
  });

  test("upstream 503 (loading) is 529 overloaded_error with retry-after", async () => {
    const client = clientFor(Sdk, appFor(gw));
    up.handle = () =>
      Response.json(
        { error: { code: 503, message: "Loading model", type: "unavailable_error" } },
        { status: 503 },
      );
    const err = (await client.messages.create(basic as never).catch((e: unknown) => e)) as APIError;
    expect(err.status).toBe(529);
    expect(err.headers?.get("retry-after")).toBe("5");
    const inner = (err.error as { error: { type: string; message: string } }).error;
    expect(inner.type).toBe("overloaded_error");
    // qm answers its own loading waits; a 503 past the grant is the model server's, said so.
    expect(inner.message).toContain("answered 503");
    expect(inner.message).not.toContain("still loading");
  });

  test("the wait status before the model is up is invisible to the SDK", async () => {
    const client = clientFor(Sdk, appFor(gw));
    gw.states.m = "stopped";
    let open: () => void = () => {};
    gw.gate = new Promise((r) => {
      open = r;
    });
    up.handle = () => textStream("Ready!");
    // The model becomes ready only once the wait status has been reported.
    gw.onWaiting = open;
    const stream = client.messages.stream(basic as never);
    expect((await stream.finalMessage()).content).toEqual([
      { type: "text", text: "Ready!" } as never,
    ]);
  });
});
