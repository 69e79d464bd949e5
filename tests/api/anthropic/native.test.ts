/** `anthropic_native = true`: `/v1/messages` passes through untranslated. */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { anthropicRoutes } from "../../../src/api/anthropic/routes.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { FakeTimers } from "../../support/fake-timers.ts";
import { bodyOf, post, quietLog } from "../../support/in-process.ts";
import { appFor, basic, FakeUpstream } from "./support.ts";

const up = new FakeUpstream();
let gw: FakeGw;
afterAll(() => up.stop());
beforeEach(() => {
  gw = fakeGateway(modelToml("n", up, 'anthropic_native = true\nuse_model_name = "native-name"'));
  gw.states.n = "ready";
});

const native = {
  ...basic,
  model: "n",
  thinking: { type: "enabled", budget_tokens: 2048 },
  metadata: { user_id: "u" },
};

test("the body goes as it is (model renamed when configured), the answer comes back as it is but for its model name", async () => {
  const answer = {
    id: "msg_up",
    model: "native-name",
    type: "message",
    role: "assistant",
    content: [{ type: "text", text: "hi" }],
    stop_reason: "end_turn",
    usage: { input_tokens: 1, output_tokens: 1 },
  };
  up.handle = () => Response.json(answer);
  const res = await post(appFor(gw), "/v1/messages?beta=true", native, {
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "whatever-2026",
    "x-api-key": "client-key",
  });
  expect(await bodyOf(res)).toEqual({ ...answer, model: "n" });
  const sent = up.last("/v1/messages");
  expect(sent.path).toBe("/v1/messages?beta=true");
  expect(sent.body).toEqual({ ...native, model: "native-name" });
  expect(sent.headers["anthropic-version"]).toBeUndefined();
  expect(sent.headers["anthropic-beta"]).toBeUndefined();
  expect(sent.headers["x-api-key"]).toBeUndefined();
  expect(gw.releases).toEqual([{ toolCalls: false }]);
});

test("a streamed answer is relayed byte for byte; tool use split across chunks is noticed", async () => {
  const text =
    'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":0}}}\n\n' +
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}\n\n' +
    'event: message_stop\ndata: {"type":"message_stop"}\n\n';
  const cut = text.indexOf("tool_use") + 3;
  const enc = new TextEncoder();
  up.handle = () =>
    new Response(
      new ReadableStream({
        start(c) {
          c.enqueue(enc.encode(text.slice(0, cut)));
          c.enqueue(enc.encode(text.slice(cut)));
          c.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  const res = await post(appFor(gw), "/v1/messages", { ...native, stream: true });
  expect(await res.text()).toBe(text);
  expect(gw.releases).toEqual([{ toolCalls: true }]);
});

test("upstream errors: OpenAI-shaped ones are rewrapped, Anthropic ones pass", async () => {
  up.handle = () =>
    Response.json(
      { error: { code: 400, message: "bad thing", type: "invalid_request_error" } },
      { status: 400 },
    );
  const res = await post(appFor(gw), "/v1/messages", native);
  expect([res.status, (await bodyOf(res)).error]).toEqual([
    400,
    { type: "invalid_request_error", message: "bad thing" },
  ]);
  const own = { type: "error", error: { type: "overloaded_error", message: "busy" } };
  up.handle = () => Response.json(own, { status: 529 });
  const res2 = await post(appFor(gw), "/v1/messages", native);
  expect([res2.status, await res2.json()]).toEqual([529, own]);
  expect(gw.releases).toEqual([{ toolCalls: false }, { toolCalls: false }]);
});

describe("an upstream that hangs (first_byte_timeout_s, stall_timeout_s on a fake clock)", () => {
  const timed = () => {
    const timers = new FakeTimers();
    const g = fakeGateway(
      modelToml("n", up, "anthropic_native = true\nfirst_byte_timeout_s = 2\nstall_timeout_s = 1"),
      timers,
    );
    g.states.n = "ready";
    const app = new Elysia().use(anthropicRoutes(g, { pingMs: 60_000, log: quietLog(), timers }));
    return { g, app, timers };
  };
  /** Moves the clock until the response settles: the relay's read may start a turn later. */
  const expire = async (timers: FakeTimers, ms: number, done: () => boolean) => {
    for (let i = 0; i < 100 && !done(); i++) {
      timers.advance(ms);
      await new Promise((r) => setImmediate(r));
    }
  };

  test("no headers in time: 504 timeout_error in Anthropic's envelope; reported, released", async () => {
    const { g, app, timers } = timed();
    let arrived: () => void = () => {};
    const taken = new Promise<void>((r) => {
      arrived = r;
    });
    up.handle = (rec) => {
      arrived();
      return new Promise((r) => rec.signal.addEventListener("abort", () => r(new Response(""))));
    };
    const pending = post(app, "/v1/messages", native);
    await taken;
    timers.advance(2000);
    const res = await pending;
    expect(res.status).toBe(504);
    expect((await bodyOf(res)).error).toEqual({
      type: "timeout_error",
      message: 'model "n" sent no response within 2 s (first_byte_timeout_s)',
    });
    expect(g.reports).toEqual(["stall n"]);
    expect(g.releases).toEqual([{ toolCalls: false }]);
  });

  test("silence mid-stream: an Anthropic `event: error`, not an OpenAI frame", async () => {
    const { g, app, timers } = timed();
    const start = 'event: message_start\ndata: {"type":"message_start","message":{}}\n\n';
    up.handle = (rec) =>
      new Response(
        new ReadableStream({
          type: "direct",
          async pull(c) {
            c.write(start);
            await c.flush();
            await new Promise((r) => rec.signal.addEventListener("abort", r));
            c.close();
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    const res = await post(app, "/v1/messages", { ...native, stream: true });
    let text = "";
    let done = false;
    const reading = (async () => {
      text = await res.text();
      done = true;
    })();
    await expire(timers, 1000, () => done);
    await reading;
    expect(text.startsWith(start)).toBe(true);
    const last = text.trim().split("\n\n").at(-1)!;
    expect(last.split("\n")[0]).toBe("event: error");
    expect(JSON.parse(last.split("\n")[1]!.slice(6)).error.type).toBe("timeout_error");
    expect(g.reports).toEqual(["stall n"]);
    expect(g.releases).toEqual([{ toolCalls: false }]);
  });
});
