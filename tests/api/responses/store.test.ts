/** Kept responses: store, previous_response_id, GET / DELETE / input_items, the LRU bounds. */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { ResponseStore } from "../../../src/api/responses/store.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { appOf, call, post } from "../../support/in-process.ts";
import { completion } from "../../support/openai-answers.ts";
import { FakeUpstream, textStream, toolStream } from "../anthropic/support.ts";

const up = new FakeUpstream();
let gw: FakeGw;
afterAll(() => up.stop());
beforeEach(() => {
  gw = fakeGateway(modelToml("m", up));
  gw.states.m = "ready";
});

function sdk(g: FakeGw = gw) {
  const app = appOf(g);
  return new OpenAI({
    apiKey: "k",
    baseURL: "http://localhost/v1",
    maxRetries: 0,
    fetch: async (input: string | URL | Request, init?: RequestInit) =>
      app.handle(new Request(input as string, init)),
  });
}

describe("store and previous_response_id", () => {
  test("a two-turn chain: the second turn's upstream request replays the first, not its instructions", async () => {
    const client = sdk();
    up.handle = () => textStream("Paris.");
    const first = await client.responses
      .stream({ model: "m", instructions: "be terse", input: "capital of France?" })
      .finalResponse();
    expect((first as unknown as { store: boolean }).store).toBe(true);
    up.handle = () => completion({ content: "About 2 million." }, "stop");
    const second = await client.responses.create({
      model: "m",
      instructions: "answer in English",
      input: "and its population?",
      previous_response_id: first.id,
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(up.last().body.messages).toEqual([
      { role: "system", content: "answer in English" },
      { role: "user", content: "capital of France?" },
      { role: "assistant", content: "Paris." },
      { role: "user", content: "and its population?" },
    ]);
    // A third turn continues the whole chain, function calls included.
    up.handle = () => toolStream();
    const third = await client.responses
      .stream({ model: "m", input: "weather?", previous_response_id: second.id })
      .finalResponse();
    up.handle = () => completion({ content: "ok" }, "stop");
    await client.responses.create({
      model: "m",
      previous_response_id: third.id,
      input: [
        { type: "function_call_output", call_id: "call_a", output: "sunny" },
        { type: "function_call_output", call_id: "call_b", output: "noon" },
      ],
    });
    const messages = up.last().body.messages as Record<string, unknown>[];
    expect(messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
      "tool",
      "tool",
    ]);
    expect(messages[5]).toMatchObject({
      role: "assistant",
      tool_calls: [
        { id: "call_a", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
        { id: "call_b", function: { name: "get_time", arguments: '{"tz":"UTC"}' } },
      ],
    });
  });

  test("retrieve gives the stored object; delete removes it; then 404 in OpenAI's envelope", async () => {
    const client = sdk();
    up.handle = () => completion({ content: "Hello" }, "stop");
    const r = await client.responses.create({ model: "m", input: "hi" });
    const got = await client.responses.retrieve(r.id);
    expect(got).toMatchObject({ id: r.id, output_text: "Hello", status: "completed" });
    expect(JSON.stringify({ ...got, output_text: undefined })).toBe(
      JSON.stringify({ ...r, output_text: undefined }),
    );
    const items = await call(appOf(gw), "GET", `/v1/responses/${r.id}/input_items?order=asc`);
    const page = (await items.json()) as { object: string; data: Record<string, unknown>[] };
    expect(page.object).toBe("list");
    expect(page.data).toEqual([
      expect.objectContaining({
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: "hi" }],
      }),
    ]);
    await client.responses.delete(r.id);
    const del = await call(appOf(gw), "DELETE", `/v1/responses/${r.id}`);
    expect(del.status).toBe(404);
    const err = await client.responses.retrieve(r.id).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.message).toContain("was not kept");
    expect(err.error.type).toBe("invalid_request_error");
  });

  test("store: false is not kept; previous_response_id naming it is a 404 naming the field", async () => {
    up.handle = () => completion({ content: "x" }, "stop");
    const res = await post(appOf(gw), "/v1/responses", { model: "m", input: "hi", store: false });
    const body = (await res.json()) as { id: string; store: boolean };
    expect(body.store).toBe(false);
    const sent = up.requests.length;
    const again = await post(appOf(gw), "/v1/responses", {
      model: "m",
      input: "more",
      previous_response_id: body.id,
    });
    expect(again.status).toBe(404);
    const e = ((await again.json()) as { error: Record<string, unknown> }).error;
    expect(e.param).toBe("previous_response_id");
    expect(e.message).toContain("store: false");
    // Refused before the model was asked.
    expect(up.requests.length).toBe(sent);
  });

  test("malformed fields and wrong methods are 4xx in OpenAI's envelope", async () => {
    const app = appOf(gw);
    const bad = async (body: Record<string, unknown>, param: string) => {
      const res = await post(app, "/v1/responses", { model: "m", input: "x", ...body });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
    };
    await bad({ previous_response_id: 5 }, "previous_response_id");
    await bad({ store: "yes" }, "store");
    const put = await call(app, "PUT", "/v1/responses/resp_1");
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, DELETE");
    up.handle = () => completion({ content: "x" }, "stop");
    const r = (await (await post(app, "/v1/responses", { model: "m", input: "x" })).json()) as {
      id: string;
    };
    const limit = await call(app, "GET", `/v1/responses/${r.id}/input_items?limit=0`);
    expect(limit.status).toBe(400);
    const order = await call(app, "GET", `/v1/responses/${r.id}/input_items?order=up`);
    expect(((await order.json()) as { error: { param: string } }).error.param).toBe("order");
  });

  test("server.responses_store bounds the entries: the least recently used goes, and its 404 says so", async () => {
    const small = fakeGateway(`[server]\nresponses_store = 2\n${modelToml("m", up)}`);
    small.states.m = "ready";
    const client = sdk(small);
    up.handle = () => completion({ content: "x" }, "stop");
    const a = await client.responses.create({ model: "m", input: "a" });
    const b = await client.responses.create({ model: "m", input: "b" });
    await client.responses.retrieve(a.id); // a is now the most recently used
    const c = await client.responses.create({ model: "m", input: "c" });
    expect((await client.responses.retrieve(a.id)).id).toBe(a.id);
    expect((await client.responses.retrieve(c.id)).id).toBe(c.id);
    const err = await client.responses.retrieve(b.id).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.message).toContain("evicted");
  });
});

describe("the store itself", () => {
  const me = { name: "k", admin: false };
  const entry = (text: string) => ({
    owner: "k",
    response: { id: "r", text },
    conversation: [],
    inputItems: [],
  });
  test("the byte bound evicts the oldest; an entry over the bound is never kept", () => {
    const s = new ResponseStore(100, 120);
    s.put("a", entry("x".repeat(30)));
    s.put("b", entry("y".repeat(30)));
    expect(s.size).toBe(2);
    s.put("c", entry("z".repeat(30)));
    expect(s.get("a", me)).toBeUndefined();
    expect(s.size).toBe(2);
    expect(s.bytes).toBeLessThanOrEqual(120);
    s.put("huge", entry("h".repeat(500)));
    expect(s.get("huge", me)).toBeUndefined();
    expect(s.size).toBe(2);
    expect(s.missing("a", me).message).toContain("evicted");
    expect(s.delete("b", me)).toBe(true);
    expect(s.delete("b", me)).toBe(false);
  });

  test("responses_store = 0 keeps nothing", () => {
    const s = new ResponseStore(0, 1000);
    s.put("a", entry("x"));
    expect(s.size).toBe(0);
    expect(s.missing("a", me).message).toContain("responses_store = 0");
  });
});
