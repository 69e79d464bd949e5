/**
 * Every OpenAI request that was granted a model releases it exactly once, however the exchange
 * ends (answered, cut by the client, failed upstream), and says whether the answer ended in
 * tool calls: only then does the agent-loop hold (`hold_on = "tool_calls"`) apply.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { QmError } from "../../../src/shared/errors.ts";
import { scriptedBody, useFakeFetch } from "../../support/fake-fetch.ts";
import { closeGate, type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, appOf, bodyOf, post } from "../../support/in-process.ts";
import { chunk, completion, sseResponse, sseText } from "../../support/openai-answers.ts";

const up = useFakeFetch();
let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(`[server]\nlog_level = "error"\n${modelToml("m", up)}`);
  gw.states.m = "ready";
  app = appOf(gw);
});

const chat = { model: "m", messages: [{ role: "user", content: "hi" }] };
const tools = [{ type: "function", function: { name: "get_weather", parameters: {} } }];
const releases = () => gw.leases.map((l) => l.releases);

describe("released exactly once", () => {
  test("a JSON answer: released before the response is handed back", async () => {
    up.answer = () => completion({ content: "ok" }, "stop");
    const res = await post(app, "/v1/chat/completions", chat);
    expect(releases()).toEqual([[{ toolCalls: false }]]);
    await res.text();
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });

  test("an SSE answer read to its end", async () => {
    up.answer = () => sseResponse(sseText([chunk({ content: "a" }), chunk({}, "stop")]));
    const res = await post(app, "/v1/chat/completions", { ...chat, stream: true });
    await res.text();
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });

  test("a client that stops reading mid-stream: released, and the upstream's body cancelled", async () => {
    const body = scriptedBody();
    up.answer = () => sseResponse(body.stream);
    const res = await post(app, "/v1/chat/completions", { ...chat, stream: true });
    body.push(sseText([chunk({ content: "a" })], false));
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('"content":"a"');
    await reader.cancel();
    await body.cancelled;
    expect(await gw.leases[0]!.released).toEqual({ toolCalls: false });
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });

  test("a client that goes away before the upstream answers: released, 499 cancelled", async () => {
    const client = new AbortController();
    let asked = () => {};
    const upstreamAsked = new Promise<void>((r) => {
      asked = r;
    });
    up.answer = () => {
      asked();
      return new Promise<Response>(() => {});
    };
    const pending = post(app, "/v1/chat/completions", chat, {}, client.signal);
    await upstreamAsked;
    client.abort();
    const res = await pending;
    expect([res.status, (await bodyOf(res)).error.code]).toEqual([499, "cancelled"]);
    expect(releases()).toEqual([[{ toolCalls: false }]]);
    expect(up.last().signal?.aborted).toBe(true);
  });

  test("an upstream that cannot be reached: 502 with qm's headers; released", async () => {
    up.answer = () =>
      Promise.reject(new TypeError("Unable to connect. Is the computer able to access the url?"));
    const res = await post(app, "/v1/chat/completions", chat);
    expect(res.status).toBe(502);
    expect((await bodyOf(res)).error).toMatchObject({
      code: "upstream_failed",
      type: "upstream_error",
    });
    expect(res.headers.get("x-qm-model")).toBe("m");
    expect(res.headers.get("x-qm-model-loaded")).toBe("true");
    expect(res.headers.get("x-qm-wait-ms")).toBe("0");
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });

  test("an upstream stream that breaks mid-way: an error event ends it; released", async () => {
    const body = scriptedBody();
    up.answer = () => sseResponse(body.stream);
    const res = await post(app, "/v1/chat/completions", { ...chat, stream: true });
    const reader = res.body!.getReader();
    body.push(sseText([chunk({ content: "a" })], false));
    let text = new TextDecoder().decode((await reader.read()).value);
    expect(text).toBe(sseText([chunk({ content: "a" })], false));
    // Erroring a stream drops what it still queues: fail it only once the chunk was read.
    body.fail(new Error("connection reset"));
    for (let step = await reader.read(); !step.done; step = await reader.read()) {
      text += new TextDecoder().decode(step.value);
    }
    const last = text.trim().split("\n\n").at(-1)!;
    expect(JSON.parse(last.slice("data: ".length)).error.code).toBe("upstream_failed");
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });

  test("an upstream error status is relayed as it is; released", async () => {
    up.answer = () => Response.json({ error: { message: "busy" } }, { status: 503 });
    const res = await post(app, "/v1/chat/completions", chat);
    expect([res.status, await bodyOf(res)]).toEqual([503, { error: { message: "busy" } }]);
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });

  test("a placeholder stream the client leaves mid-answer: released once", async () => {
    gw.states.m = "stopped";
    closeGate(gw).open();
    const body = scriptedBody();
    up.answer = () => sseResponse(body.stream);
    const res = await post(app, "/v1/chat/completions", { ...chat, stream: true });
    const reader = res.body!.getReader();
    body.push(sseText([chunk({ content: "a" })], false));
    let text = "";
    while (!text.includes('"content":"a"')) {
      text += new TextDecoder().decode((await reader.read()).value);
    }
    await reader.cancel();
    await body.cancelled;
    expect(await gw.leases[0]!.released).toEqual({ toolCalls: false });
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });

  test("a grant that fails: no lease to release, the error has qm's headers", async () => {
    gw.states.m = "stopped";
    closeGate(gw).fail(new QmError("cannot_fit", 'model "m" does not fit beside the others'));
    const res = await post(app, "/v1/chat/completions", chat);
    expect(res.status).toBe(503);
    expect((await bodyOf(res)).error.code).toBe("cannot_fit");
    expect(res.headers.get("x-qm-model")).toBe("m");
    expect(res.headers.get("x-qm-model-loaded")).toBe("false");
    expect(res.headers.get("x-qm-wait-ms")).toBeNull();
    expect(gw.leases).toEqual([]);
  });
});

describe("the toolCalls outcome", () => {
  const sse = (finish: string) =>
    sseResponse(
      sseText([
        chunk({ tool_calls: [{ index: 0, id: "c1", function: { name: "get_weather" } }] }),
        chunk({}, finish),
      ]),
    );
  const json = (finish: string) =>
    completion({ content: null, tool_calls: [{ id: "c1", type: "function" }] }, finish);

  test.each([
    ["SSE", "tools offered, ends in tool_calls", true, "tool_calls", true],
    ["SSE", "tools offered, ends in stop", true, "stop", false],
    ["SSE", "no tools offered, ends in tool_calls", false, "tool_calls", false],
    ["JSON", "tools offered, ends in tool_calls", true, "tool_calls", true],
    ["JSON", "tools offered, ends in stop", true, "stop", false],
    ["JSON", "no tools offered, ends in tool_calls", false, "tool_calls", false],
  ] as const)("%s, %s → %p", async (kind, _what, offered, finish, expected) => {
    const stream = kind === "SSE";
    up.answer = () => (stream ? sse(finish) : json(finish));
    const body = { ...chat, stream, ...(offered ? { tools } : {}) };
    await (await post(app, "/v1/chat/completions", body)).text();
    expect(releases()).toEqual([[{ toolCalls: expected }]]);
  });

  test("an empty tools list offers nothing", async () => {
    up.answer = () => json("tool_calls");
    await (await post(app, "/v1/chat/completions", { ...chat, tools: [] })).text();
    expect(releases()).toEqual([[{ toolCalls: false }]]);
  });

  test("a finish_reason split across two chunks of the stream is still seen", async () => {
    const text = sseText([chunk({}, "tool_calls")]);
    const cut = text.indexOf("tool_calls") + 4;
    const body = scriptedBody();
    up.answer = () => sseResponse(body.stream);
    const res = await post(app, "/v1/chat/completions", { ...chat, stream: true, tools });
    body.push(text.slice(0, cut));
    body.push(text.slice(cut));
    body.end();
    await res.text();
    expect(releases()).toEqual([[{ toolCalls: true }]]);
  });
});
