/**
 * Embeddings leave their prompt tokens in the record: OpenAI `/v1/embeddings` passed through
 * (read off its bytes) and Ollama's `/api/embed` and `/api/embeddings` (translated: told from
 * the parsed answer), whose own answer states them as `prompt_eval_count`.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { useFakeFetch } from "../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { type App, appOf, bodyOf, post } from "../support/in-process.ts";

const up = useFakeFetch();
const embeddings = (promptTokens: number) =>
  Response.json({
    object: "list",
    data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }],
    model: "e",
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  });

let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(`[server]\nlog_level = "error"\n${modelToml("e", up)}`);
  gw.states.e = "ready";
  app = appOf(gw);
});

describe("embeddings' prompt tokens", () => {
  test("OpenAI /v1/embeddings, passed through", async () => {
    up.answer = () => embeddings(7);
    const res = await post(app, "/v1/embeddings", { model: "e", input: "hello there" });
    expect((await bodyOf(res)).usage.prompt_tokens).toBe(7);
    expect(gw.records).toHaveLength(1);
    expect(gw.records[0]).toMatchObject({ api: "openai", status: 200, prompt_tokens: 7 });
  });

  test("Ollama /api/embed: prompt_eval_count in the answer, prompt_tokens in the record", async () => {
    up.answer = () => embeddings(5);
    const res = await post(app, "/api/embed", { model: "e", input: ["hello", "there"] });
    expect(await bodyOf(res)).toMatchObject({ prompt_eval_count: 5 });
    expect(gw.records[0]).toMatchObject({ api: "ollama", status: 200, prompt_tokens: 5 });
  });

  test("Ollama /api/embeddings (the older route)", async () => {
    up.answer = () => embeddings(3);
    const res = await post(app, "/api/embeddings", { model: "e", prompt: "hello" });
    expect((await bodyOf(res)).embedding).toEqual([0.1, 0.2]);
    expect(gw.records[0]).toMatchObject({ api: "ollama", prompt_tokens: 3 });
  });

  test("an upstream that states no usage leaves them null, and prompt_eval_count 0", async () => {
    up.answer = () => Response.json({ data: [{ index: 0, embedding: [1] }] });
    const res = await post(app, "/api/embed", { model: "e", input: "x" });
    expect(await bodyOf(res)).toMatchObject({ prompt_eval_count: 0 });
    expect(gw.records[0]).toMatchObject({ prompt_tokens: null });
  });
});
