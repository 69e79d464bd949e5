/**
 * `strip_params` / `set_params` reach the upstream on every API: OpenAI (JSON and multipart),
 * Anthropic (translated and native) and Responses — in-process, against a faked fetch.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { jsonOf, useFakeFetch } from "../../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, appOf, call, post } from "../../support/in-process.ts";
import { completion } from "../../support/openai-answers.ts";

const up = useFakeFetch();
const FILTERS =
  'strip_params = ["top_k", "metadata"]\n' +
  "set_params = { temperature = 0.6, chat_template_kwargs = { enable_thinking = false } }";

let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(
    '[server]\nlog_level = "error"\n' +
      modelToml("m", up, FILTERS) +
      modelToml("native", up, `${FILTERS}\nanthropic_native = true`) +
      modelToml("plain", up),
  );
  for (const id of ["m", "native", "plain"]) gw.states[id] = "ready";
  app = appOf(gw);
  up.answer = () => completion({ content: "ok" }, "stop");
});

const user = [{ role: "user", content: "hi" }];
const ANTHROPIC = { "anthropic-version": "2023-06-01" };

/** The filters' effect: top_k and metadata gone, temperature and the kwargs forced. */
function filtered(body: Record<string, unknown>) {
  expect(body.top_k).toBeUndefined();
  expect(body.metadata).toBeUndefined();
  expect(body.temperature).toBe(0.6);
  expect(body.chat_template_kwargs).toEqual({ enable_thinking: false });
}

describe("strip_params and set_params", () => {
  test("OpenAI: the JSON body is filtered, every other field kept", async () => {
    const res = await post(app, "/v1/chat/completions", {
      model: "m",
      messages: user,
      top_k: 40,
      temperature: 1.5,
      metadata: { a: 1 },
      seed: 7,
    });
    expect(res.status).toBe(200);
    const sent = jsonOf(up.last());
    filtered(sent);
    expect([sent.model, sent.seed, sent.messages]).toEqual(["m", 7, user]);
  });

  test("OpenAI: a model without filters gets the client's bytes as they came", async () => {
    const text = JSON.stringify({ model: "plain", messages: user, top_k: 40 });
    await call(app, "POST", "/v1/chat/completions", text, { "content-type": "application/json" });
    expect(new TextDecoder().decode(up.last().body)).toBe(text);
  });

  test("OpenAI multipart: fields stripped and set, non-strings as JSON text", async () => {
    up.answer = () => Response.json({ text: "ok" });
    const form = new FormData();
    form.set("model", "m");
    form.set("top_k", "40");
    form.set("file", new File(["abc"], "a.wav"));
    const res = await app.handle(
      new Request("http://localhost/v1/audio/transcriptions", { method: "POST", body: form }),
    );
    expect(res.status).toBe(200);
    const sent = up.last();
    const got = await new Response(sent.body, {
      headers: { "content-type": sent.headers.get("content-type") ?? "" },
    }).formData();
    expect(got.get("top_k")).toBeNull();
    expect(got.get("temperature")).toBe("0.6");
    expect(got.get("chat_template_kwargs")).toBe('{"enable_thinking":false}');
    expect(await (got.get("file") as File).text()).toBe("abc");
  });

  test("Anthropic, translated: the chat request qm builds is filtered", async () => {
    const res = await post(
      app,
      "/v1/messages",
      { model: "m", max_tokens: 10, messages: user, top_k: 5, temperature: 1 },
      ANTHROPIC,
    );
    expect(res.status).toBe(200);
    filtered(jsonOf(up.last()));
  });

  test("Anthropic, native: the client's body is filtered", async () => {
    up.answer = () =>
      Response.json({ type: "message", content: [], usage: { input_tokens: 1, output_tokens: 1 } });
    await post(
      app,
      "/v1/messages",
      { model: "native", max_tokens: 10, messages: user, top_k: 5, metadata: { user_id: "u" } },
      ANTHROPIC,
    );
    const sent = jsonOf(up.last());
    expect(up.last().path).toBe("/v1/messages");
    filtered(sent);
    expect(sent.max_tokens).toBe(10);
  });

  test("Ollama chat and embed: the request qm builds is filtered", async () => {
    const res = await post(app, "/api/chat", {
      model: "m",
      messages: user,
      stream: false,
      options: { top_k: 5, temperature: 1 },
    });
    expect(res.status).toBe(200);
    filtered(jsonOf(up.last()));
    up.answer = () => Response.json({ data: [{ embedding: [0.5] }] });
    await post(app, "/api/embed", { model: "m", input: "x" });
    expect(up.last().path).toBe("/v1/embeddings");
    filtered(jsonOf(up.last()));
  });

  test("Responses, translated: the chat request qm builds is filtered", async () => {
    const res = await post(app, "/v1/responses", { model: "m", input: "hi", temperature: 1 });
    expect(res.status).toBe(200);
    filtered(jsonOf(up.last()));
  });
});
