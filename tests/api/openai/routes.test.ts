/**
 * The OpenAI routes in-process (`app.handle`), with a fake Gateway and a faked `fetch` as the
 * upstream: what reaches the upstream, what the client gets, and every refusal's envelope.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { jsonOf, useFakeFetch } from "../../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, appOf, bodyOf, call, post } from "../../support/in-process.ts";
import { chunk, completion, sseResponse, sseText } from "../../support/openai-answers.ts";

const up = useFakeFetch();
const QUIET = '[server]\nlog_level = "error"\n';
const models = () =>
  modelToml("m", up, 'aliases = ["gpt-local", "claude-*"]') +
  modelToml("renamed", up, 'use_model_name = "upstream-name"') +
  modelToml("hidden", up, "unlisted = true");

let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(QUIET + models());
  gw.states.m = "ready";
  app = appOf(gw);
});

const chat = { model: "m", messages: [{ role: "user", content: "hi" }] };

describe("success", () => {
  test("chat: the body goes upstream byte for byte, the answer comes back with qm's headers", async () => {
    up.answer = () => completion({ content: "Hello" }, "stop");
    gw.waitedMs = 42;
    const text = JSON.stringify({ ...chat, temperature: 0.5 });
    const res = await call(app, "POST", "/v1/chat/completions?trace=1", text, {
      "content-type": "application/json",
    });
    expect(res.status).toBe(200);
    expect((await bodyOf(res)).choices[0].message.content).toBe("Hello");
    expect(res.headers.get("x-qm-model")).toBe("m");
    expect(res.headers.get("x-qm-model-loaded")).toBe("true");
    expect(res.headers.get("x-qm-wait-ms")).toBe("42");
    const sent = up.last();
    expect([sent.method, sent.path]).toEqual(["POST", "/v1/chat/completions?trace=1"]);
    expect(new TextDecoder().decode(sent.body)).toBe(text);
    expect(gw.leases.map((l) => l.releases)).toEqual([[{ toolCalls: false }]]);
  });

  test("an alias resolves to its model; the name is sent upstream as the client wrote it", async () => {
    up.answer = () => completion({ content: "ok" }, "stop");
    const res = await post(app, "/v1/chat/completions", { ...chat, model: "gpt-local" });
    expect(res.headers.get("x-qm-model")).toBe("m");
    expect(jsonOf(up.last()).model).toBe("gpt-local");
  });

  test("answers carry the model name the client sent, not the upstream's", async () => {
    const upName = { model: "/models/x-Q4_K_M.gguf" };
    up.answer = () => Response.json({ ...upName, choices: [], usage: {} });
    const whole = await post(app, "/v1/chat/completions", { ...chat, model: "gpt-local" });
    expect((await bodyOf(whole)).model).toBe("gpt-local");
    up.answer = () =>
      sseResponse(sseText([chunk({ content: "a" }, null, upName), chunk({}, "stop", upName)]));
    const streamed = await post(app, "/v1/chat/completions", { ...chat, stream: true });
    const text = await streamed.text();
    expect(text).not.toContain("gguf");
    expect(text.match(/"model":"m"/g)).toHaveLength(2);
    expect(text).toEndWith("data: [DONE]\n\n");
    // An upstream's error keeps its own words.
    up.answer = () => Response.json({ error: { message: "bad", model: "up" } }, { status: 400 });
    const refused = await post(app, "/v1/chat/completions", chat);
    expect((await bodyOf(refused)).error.model).toBe("up");
  });

  test("an alias pattern catches the names a client has built in", async () => {
    up.answer = () => completion({ content: "ok" }, "stop");
    const res = await post(app, "/v1/chat/completions", { ...chat, model: "claude-opus-4-1" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-model")).toBe("m");
  });

  test("un-prefixed paths are the /v1 routes, and go upstream as the /v1 path", async () => {
    for (const [path, answer] of [
      ["/chat/completions?x=1", () => completion({ content: "ok" }, "stop")],
      ["/completions", () => Response.json({ choices: [{ text: "ok" }] })],
      ["/embeddings", () => Response.json({ data: [{ embedding: [0.1] }] })],
    ] as const) {
      up.answer = answer;
      const res = await post(app, path, { ...chat, input: "x", prompt: "x" });
      expect([path, res.status]).toEqual([path, 200]);
      expect(up.last().path).toBe(`/v1${path}`);
    }
    const listed = await bodyOf(await call(app, "GET", "/models"));
    expect(listed.data.map((m: { id: string }) => m.id)).toContain("m");
    expect((await bodyOf(await call(app, "GET", "/models/gpt-local"))).id).toBe("m");
    const wrong = await call(app, "GET", "/chat/completions");
    expect([wrong.status, wrong.headers.get("allow")]).toEqual([405, "POST"]);
  });

  test("a cold model: loaded is false, and the wait is reported", async () => {
    gw.states.m = "stopped";
    gw.waitedMs = 1500;
    up.answer = () => completion({ content: "ok" }, "stop");
    const res = await post(app, "/v1/chat/completions", chat);
    expect(res.headers.get("x-qm-model-loaded")).toBe("false");
    expect(res.headers.get("x-qm-wait-ms")).toBe("1500");
  });

  test.each([
    ["/v1/completions", { model: "m", prompt: "once upon" }],
    ["/v1/embeddings", { model: "m", input: ["a", "b"] }],
  ])("%s goes to the same path upstream, query kept", async (path, body) => {
    up.answer = () => Response.json({ object: "list", data: [] });
    const res = await post(app, `${path}?v=2`, body);
    expect(res.status).toBe(200);
    expect(await bodyOf(res)).toEqual({ object: "list", data: [] });
    expect(up.last().path).toBe(`${path}?v=2`);
    expect(jsonOf(up.last())).toEqual(body);
    expect(gw.releases).toHaveLength(1);
  });

  test("use_model_name rewrites `model` sent upstream and keeps every other field", async () => {
    up.answer = () => completion({ content: "ok" }, "stop");
    const res = await post(app, "/v1/chat/completions", { ...chat, model: "renamed", seed: 7 });
    expect(res.headers.get("x-qm-model")).toBe("renamed");
    expect(jsonOf(up.last())).toEqual({ ...chat, model: "upstream-name", seed: 7 });
  });

  test("/v1/models lists the listed models with their aliases and live state", async () => {
    const res = await call(app, "GET", "/v1/models");
    const body = await bodyOf(res);
    expect(body.object).toBe("list");
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(["m", "renamed"]);
    expect(body.data[0]).toMatchObject({
      id: "m",
      object: "model",
      owned_by: "quartermaster",
      aliases: ["gpt-local", "claude-*"],
      status: { value: "ready" },
    });
    expect(body.data[1].status).toEqual({ value: "stopped" });
    expect(up.sent).toEqual([]);
  });
});

describe("multipart /v1/audio/transcriptions", () => {
  const form = (model: string) => {
    const f = new FormData();
    f.set("model", model);
    f.set("file", new File([new Uint8Array([1, 2, 3, 250])], "a.wav", { type: "audio/wav" }));
    f.set("language", "en");
    return f;
  };
  /** The form qm sent upstream, parsed with the boundary its content-type names, or its own. */
  const sentForm = (boundary: "declared" | "own") => {
    const sent = up.last();
    const own = new TextDecoder().decode(sent.body).split("\r\n", 1)[0]!.slice(2);
    const type =
      boundary === "declared"
        ? (sent.headers.get("content-type") ?? "")
        : `multipart/form-data; boundary=${own}`;
    return new Response(sent.body, { headers: { "content-type": type } }).formData();
  };

  test("the form goes as it came: same bytes, same boundary", async () => {
    up.answer = () => Response.json({ text: "hello" });
    const req = new Request("http://localhost/v1/audio/transcriptions", {
      method: "POST",
      body: form("m"),
    });
    const type = req.headers.get("content-type");
    const bytes = new Uint8Array(await req.clone().arrayBuffer());
    const res = await app.handle(req);
    expect(await bodyOf(res)).toEqual({ text: "hello" });
    expect(res.headers.get("x-qm-model")).toBe("m");
    expect(up.last().headers.get("content-type")).toBe(type);
    expect(up.last().body).toEqual(bytes);
    expect(gw.releases).toEqual([{ toolCalls: false }]);
  });

  test("use_model_name: the model field is rewritten, the other fields and the file kept", async () => {
    up.answer = () => Response.json({ text: "hello" });
    const res = await call(app, "POST", "/v1/audio/transcriptions", form("renamed"));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-model")).toBe("renamed");
    const got = await sentForm("own");
    expect(got.get("model")).toBe("upstream-name");
    expect(got.get("language")).toBe("en");
    const file = got.get("file") as File;
    expect([file.name, [...new Uint8Array(await file.arrayBuffer())]]).toEqual([
      "a.wav",
      [1, 2, 3, 250],
    ]);
  });

  test("use_model_name: the content-type sent upstream names the re-encoded body's boundary", async () => {
    up.answer = () => Response.json({ text: "hello" });
    await call(app, "POST", "/v1/audio/transcriptions", form("renamed"));
    expect((await sentForm("declared")).get("model")).toBe("upstream-name");
  });

  test("no model field, an unknown one, or a broken form: refused before any upstream call", async () => {
    const noModel = new FormData();
    noModel.set("file", new File(["x"], "a.wav"));
    const missing = await call(app, "POST", "/v1/audio/transcriptions", noModel);
    expect([missing.status, (await bodyOf(missing)).error.param]).toEqual([400, "model"]);
    const unknown = await call(app, "POST", "/v1/audio/transcriptions", form("nope"));
    expect([unknown.status, (await bodyOf(unknown)).error.code]).toEqual([404, "model_not_found"]);
    const broken = await call(app, "POST", "/v1/audio/transcriptions", "--x\r\nnot a form", {
      "content-type": "multipart/form-data; boundary=zzz",
    });
    expect([broken.status, (await bodyOf(broken)).error.message]).toEqual([
      400,
      "request body is not valid multipart/form-data",
    ]);
    expect(up.sent).toEqual([]);
    expect(gw.acquired).toBe(0);
  });
});
