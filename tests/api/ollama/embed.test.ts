/** `/api/embed`, `/api/embeddings` and `keep_alive` on the routes, in-process. */
import { describe, expect, test } from "bun:test";
import { jsonOf, useFakeFetch } from "../../support/fake-fetch.ts";
import { fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { appOf, bodyOf, post } from "../../support/in-process.ts";
import { completion } from "../../support/openai-answers.ts";

const up = useFakeFetch();
const TOML = modelToml("e", up, 'use_model_name = "served-e"');

const vectors = () =>
  Response.json({ data: [{ index: 0, embedding: [0.1, 0.2] }], usage: { prompt_tokens: 2 } });

describe("POST /api/embed and /api/embeddings", () => {
  test("a string input is one vector; the upstream is asked for the served name", async () => {
    const gw = fakeGateway(TOML);
    up.answer = vectors;
    const res = await post(appOf(gw), "/api/embed", { model: "e", input: "hi", dimensions: 2 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-model")).toBe("e");
    const body = await bodyOf(res);
    expect(body).toMatchObject({ model: "e", embeddings: [[0.1, 0.2]], prompt_eval_count: 2 });
    expect(Number.isInteger(body.total_duration)).toBe(true);
    expect(jsonOf(up.last("/v1/embeddings"))).toEqual({
      model: "served-e",
      input: ["hi"],
      dimensions: 2,
    });
    expect(gw.releases).toHaveLength(1);
  });

  test("nothing to embed loads the model and answers empty", async () => {
    const gw = fakeGateway(TOML);
    const app = appOf(gw);
    expect((await bodyOf(await post(app, "/api/embed", { model: "e" }))).embeddings).toEqual([]);
    expect(await bodyOf(await post(app, "/api/embeddings", { model: "e", prompt: "" }))).toEqual({
      embedding: [],
    });
    expect(gw.acquired).toBe(2);
    expect(up.sent).toHaveLength(0);
  });

  test("bad fields are 400s naming them; upstream failures are Ollama errors", async () => {
    const gw = fakeGateway(TOML);
    const app = appOf(gw);
    for (const [path, body, field] of [
      ["/api/embed", { model: "e", input: [1] }, '"input"'],
      ["/api/embed", { model: "e", input: "x", dimensions: -1 }, '"dimensions"'],
      ["/api/embed", { model: "e", input: "x", keep_alive: "later" }, '"keep_alive"'],
      ["/api/embeddings", { model: "e", prompt: ["x"] }, '"prompt"'],
      ["/api/embeddings", { prompt: "x" }, '"model"'],
    ] as [string, object, string][]) {
      const res = await post(app, path, body);
      expect(res.status).toBe(400);
      expect((await bodyOf(res)).error).toContain(field);
    }
    expect(gw.acquired).toBe(0);
    up.answer = () =>
      Response.json({ error: { message: "not an embedding model" } }, { status: 501 });
    const refused = await post(app, "/api/embed", { model: "e", input: "x" });
    expect(refused.status).toBe(502);
    expect((await bodyOf(refused)).error).toContain("not an embedding model");
    up.answer = () => Response.json({ data: [{ index: 0 }] });
    const empty = await post(app, "/api/embed", { model: "e", input: "x" });
    expect(empty.status).toBe(502);
    expect((await bodyOf(empty)).error).toContain("without embeddings");
    expect(gw.releases).toHaveLength(2);
  });
});

describe("keep_alive on the routes", () => {
  test("each route hands its keep_alive to the scheduler as keepAliveMs", async () => {
    const gw = fakeGateway(TOML);
    const app = appOf(gw);
    up.answer = () => completion({ content: "ok" }, "stop");
    const msgs = [{ role: "user", content: "x" }];
    await post(app, "/api/chat", { model: "e", messages: msgs, stream: false, keep_alive: "5m" });
    await post(app, "/api/generate", { model: "e", prompt: "x", stream: false, keep_alive: -1 });
    await post(app, "/api/chat", { model: "e", messages: msgs, stream: false });
    up.answer = vectors;
    await post(app, "/api/embeddings", { model: "e", prompt: "x", keep_alive: 0 });
    expect(gw.hooks.map((a) => a?.keepAliveMs)).toEqual([300_000, -1, undefined, 0]);
  });
});
