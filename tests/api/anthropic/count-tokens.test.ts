/**
 * count_tokens (upstream template + tokenizer, vLLM's /tokenize, native passthrough,
 * estimates, never a 5xx) and the `max_tokens` clamp that uses the same counting
 * (docs/translation.md §3.9). Each test uses its own model id: what an upstream can do is cached per model.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { anthropicRoutes } from "../../../src/api/anthropic/routes.ts";
import { DEADLINE_MS } from "../../../src/api/anthropic/upstream.ts";
import { fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { FakeTimers } from "../../support/fake-timers.ts";
import { bodyOf, post, quietLog } from "../../support/in-process.ts";
import { appFor, basic, FakeUpstream, readEvents, textStream } from "./support.ts";

const up = new FakeUpstream();
afterAll(() => up.stop());
beforeEach(() => {
  up.requests.length = 0;
});

const ask = { model: "m", messages: [{ role: "user", content: "count me please" }] };

/** llama-server's helper routes: a template, a tokenizer (one token per 4 chars), /props. */
function llamaHelpers(nCtx: number | null, tokens: number | null = null) {
  up.handle = (r) => {
    if (r.path === "/props") {
      return nCtx === null
        ? new Response("not found", { status: 404 })
        : Response.json({ default_generation_settings: { n_ctx: nCtx } });
    }
    if (r.path === "/apply-template")
      return Response.json({ prompt: `<<${JSON.stringify(r.body.messages)}>>` });
    if (r.path === "/tokenize") {
      const n = tokens ?? Math.ceil(String(r.body.content).length / 4);
      return Response.json({ tokens: Array.from({ length: n }, (_, i) => i) });
    }
    if (r.path === "/v1/chat/completions") {
      return Response.json({
        choices: [{ index: 0, message: { content: "ok" }, finish_reason: "stop" }],
      });
    }
    return new Response("not found", { status: 404 });
  };
}

function setup(id: string, extra = "", cmd = "run-model") {
  const gw = fakeGateway(modelToml(id, up, extra, cmd));
  gw.states[id] = "ready";
  return { gw, app: appFor(gw) };
}

describe("count_tokens", () => {
  test("asks the upstream's template and tokenizer", async () => {
    const { app } = setup("c1");
    llamaHelpers(null, 17);
    const res = await post(app, "/v1/messages/count_tokens?beta=true", { ...ask, model: "c1" });
    expect(await bodyOf(res)).toEqual({ input_tokens: 17 });
    expect(res.headers.get("x-qm-token-count")).toBe("upstream");
    expect(up.requests.map((r) => r.path)).toEqual(["/apply-template", "/tokenize"]);
    expect(up.last("/apply-template").body.messages).toEqual([
      { role: "user", content: "count me please" },
    ]);
  });

  test("thinking: templates exactly what /v1/messages sends", async () => {
    const { app } = setup("c1t", "", "llama-server -m x.gguf");
    llamaHelpers(null, 18);
    const body = { ...ask, model: "c1t", thinking: { type: "enabled", budget_tokens: 1024 } };
    const res = await post(app, "/v1/messages/count_tokens", body);
    expect(await bodyOf(res)).toEqual({ input_tokens: 18 });
    const counted = up.last("/apply-template").body;
    expect(counted.chat_template_kwargs).toEqual({ enable_thinking: true });
    await post(app, "/v1/messages", { ...body, max_tokens: 10 });
    const sent = up.last("/v1/chat/completions").body;
    expect(counted.messages).toEqual(sent.messages);
    expect(counted.chat_template_kwargs).toEqual(sent.chat_template_kwargs);
    expect(counted.reasoning_effort).toEqual(sent.reasoning_effort);
  });

  test("vLLM: output_config effort reaches /tokenize as /v1/messages sends it", async () => {
    const { app } = setup("c2t", "", "vllm serve org/model");
    up.handle = (r) =>
      r.path === "/tokenize" ? Response.json({ count: 9 }) : new Response("", { status: 404 });
    const body = { ...ask, model: "c2t", output_config: { effort: "max" } };
    expect(await bodyOf(await post(app, "/v1/messages/count_tokens", body))).toEqual({
      input_tokens: 9,
    });
    expect(up.last("/tokenize").body).toMatchObject({ reasoning_effort: "high" });
  });

  test("vLLM: one /tokenize call with the chat messages", async () => {
    const { app } = setup("c2", "", "vllm serve org/model");
    up.handle = (r) =>
      r.path === "/tokenize"
        ? Response.json({ count: 42, max_model_len: 4096, tokens: [] })
        : new Response("", { status: 404 });
    const res = await post(app, "/v1/messages/count_tokens", { ...ask, model: "c2", system: "s" });
    expect(await bodyOf(res)).toEqual({ input_tokens: 42 });
    expect(up.requests.map((r) => r.path)).toEqual(["/tokenize"]);
    expect(up.last("/tokenize").body).toMatchObject({ model: "c2", add_generation_prompt: true });
  });

  test("no support upstream: an estimate, and the upstream is not asked again", async () => {
    const { app } = setup("c3");
    up.handle = () => new Response("not found", { status: 404 });
    const first = await post(app, "/v1/messages/count_tokens", { ...ask, model: "c3" });
    expect(first.status).toBe(200);
    expect(first.headers.get("x-qm-token-count")).toBe("estimate");
    expect((await bodyOf(first)).input_tokens).toBeGreaterThan(0);
    const asked = up.requests.length;
    await post(app, "/v1/messages/count_tokens", { ...ask, model: "c3" });
    expect(up.requests.length).toBe(asked);
  });

  test("a model that is not running is estimated, never started", async () => {
    const { gw, app } = setup("c4");
    gw.states.c4 = "stopped";
    const res = await post(app, "/v1/messages/count_tokens", {
      ...ask,
      model: "c4",
      tools: [{ name: "f", input_schema: { type: "object" } }],
    });
    expect(res.headers.get("x-qm-token-count")).toBe("estimate");
    expect(gw.acquired).toBe(0);
    expect(up.requests).toHaveLength(0);
  });

  test("an unreachable upstream is an estimate, not a 5xx", async () => {
    const gw = fakeGateway(
      '[models.c5]\ncmd = "x"\nproxy = "http://127.0.0.1:9"\ncheck_endpoint = "none"\n',
    );
    gw.states.c5 = "ready";
    const res = await post(appFor(gw), "/v1/messages/count_tokens", { ...ask, model: "c5" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-token-count")).toBe("estimate");
  });

  test("an upstream that never answers is cut at 10 s on the route's clock: an estimate", async () => {
    for (const [id, extra] of [
      ["c-hang", ""],
      ["c-hang-native", "anthropic_native = true"],
    ] as const) {
      const gw = fakeGateway(modelToml(id, up, extra, "run-model"));
      gw.states[id] = "ready";
      const timers = new FakeTimers();
      const app = new Elysia().use(anthropicRoutes(gw, { pingMs: 1000, log: quietLog(), timers }));
      up.requests.length = 0;
      up.handle = () => new Promise<Response>(() => {});
      const res = post(app, "/v1/messages/count_tokens", { ...ask, model: id });
      while (up.requests.length === 0) await new Promise((r) => setImmediate(r));
      timers.advance(DEADLINE_MS - 1);
      await new Promise((r) => setImmediate(r));
      expect(timers.pending).toBe(1);
      timers.advance(1);
      const answered = await res;
      expect({ id, how: answered.headers.get("x-qm-token-count") }).toEqual({
        id,
        how: "estimate",
      });
      expect(timers.pending).toBe(0);
    }
  });

  test("anthropic_native: the upstream's own count_tokens, body untranslated", async () => {
    const { app } = setup("c6", "anthropic_native = true");
    up.handle = (r) =>
      Response.json({ input_tokens: r.path.startsWith("/v1/messages/count_tokens") ? 77 : -1 });
    const body = { ...ask, model: "c6", thinking: { type: "enabled", budget_tokens: 1024 } };
    const res = await post(app, "/v1/messages/count_tokens?beta=true", body);
    expect(await bodyOf(res)).toEqual({ input_tokens: 77 });
    expect(up.last("/v1/messages/count_tokens").path).toBe("/v1/messages/count_tokens?beta=true");
    expect(up.last("/v1/messages/count_tokens").body).toEqual(body);
  });

  test("client errors stay errors", async () => {
    const { app } = setup("c7");
    expect((await post(app, "/v1/messages/count_tokens", { model: "c7" })).status).toBe(400);
    expect((await post(app, "/v1/messages/count_tokens", { ...ask, model: "zz" })).status).toBe(
      404,
    );
  });
});

describe("max_tokens against the context", () => {
  test("clamped to what the context leaves after the counted prompt", async () => {
    const { app } = setup("k1", "", "llama-server -m x.gguf");
    llamaHelpers(1000, 100);
    const res = await post(app, "/v1/messages", { ...basic, model: "k1", max_tokens: 32000 });
    expect(res.status).toBe(200);
    expect(up.last().body.max_tokens).toBe(900);
    // A small request cannot overflow: no counting.
    up.requests.length = 0;
    await post(app, "/v1/messages", { ...basic, model: "k1", max_tokens: 50 });
    expect(up.requests.map((r) => r.path)).toEqual(["/v1/chat/completions"]);
    expect(up.last().body.max_tokens).toBe(50);
  });

  test("a prompt that fills the context is refused in Anthropic's words", async () => {
    const { app } = setup("k2");
    llamaHelpers(1000, 1200);
    const res = await post(app, "/v1/messages", { ...basic, model: "k2", max_tokens: 32000 });
    expect(res.status).toBe(400);
    expect((await bodyOf(res)).error).toEqual({
      type: "invalid_request_error",
      message: "prompt is too long: 1200 tokens > 1000 maximum",
    });
  });

  test("vLLM's max_model_len is a context too; unknown context means no clamp", async () => {
    const { app } = setup("k3", "", "vllm serve org/model");
    up.handle = (r) => {
      if (r.path === "/v1/models")
        return Response.json({ data: [{ id: "org/model", max_model_len: 2048 }] });
      if (r.path === "/tokenize") return Response.json({ count: 48 });
      if (r.path === "/v1/chat/completions")
        return Response.json({
          choices: [{ index: 0, message: { content: "ok" }, finish_reason: "stop" }],
        });
      return new Response("", { status: 404 });
    };
    await post(app, "/v1/messages", { ...basic, model: "k3", max_tokens: 32000 });
    expect(up.last().body.max_tokens).toBe(2000);
    const plain = setup("k4");
    llamaHelpers(null);
    await post(plain.app, "/v1/messages", { ...basic, model: "k4", max_tokens: 32000 });
    expect(up.last().body.max_tokens).toBe(32000);
  });
});

describe("message_start's input_tokens", () => {
  /** llama-server's helpers counting `n`, and a streamed answer whose usage comes at the end. */
  function countingStream(n: number | null) {
    up.handle = (r) => {
      if (r.path === "/v1/chat/completions") return textStream();
      if (n !== null && r.path === "/apply-template") return Response.json({ prompt: "p" });
      if (n !== null && r.path === "/tokenize")
        return Response.json({ tokens: Array.from({ length: n }, (_, i) => i) });
      return new Response("not found", { status: 404 });
    };
  }
  const started = async (res: Response) => {
    const events = await readEvents(res);
    return (events[0]!.data as { message: { usage: { input_tokens: number } } }).message.usage
      .input_tokens;
  };

  test("is the upstream's exact count, the one count_tokens gives, counted beside the chat request", async () => {
    const { app } = setup("s1");
    countingStream(29);
    const body = { ...basic, model: "s1", stream: true, system: "be brief" };
    const counted = await bodyOf(await post(app, "/v1/messages/count_tokens", body));
    expect(counted).toEqual({ input_tokens: 29 });
    up.requests.length = 0;
    // The tokenizer answers only once the chat request has arrived: a count made before the
    // request (the first token waiting for it) would never finish, and the estimate would show.
    const counting = up.handle;
    let chatArrived = () => {};
    const chat = new Promise<void>((resolve) => {
      chatArrived = resolve;
    });
    up.handle = async (r) => {
      if (r.path === "/v1/chat/completions") chatArrived();
      if (r.path === "/tokenize") await chat;
      return counting(r);
    };
    expect(await started(await post(app, "/v1/messages", body))).toBe(29);
    const paths = up.requests.map((r) => r.path);
    expect(paths.filter((p) => p !== "/props" && p !== "/v1/models").sort()).toEqual([
      "/apply-template",
      "/tokenize",
      "/v1/chat/completions",
    ]);
  });

  test("is the estimate, as count_tokens', when the upstream cannot count", async () => {
    const { app } = setup("s2");
    countingStream(null);
    const body = { ...basic, model: "s2", stream: true, system: "be brief" };
    const res = await post(app, "/v1/messages/count_tokens", body);
    expect(res.headers.get("x-qm-token-count")).toBe("estimate");
    const estimate = (await bodyOf(res)).input_tokens;
    expect(await started(await post(app, "/v1/messages", body))).toBe(estimate);
  });
});
