/**
 * Header hygiene per route family, against a faked fetch: the headers qm hands to fetch for
 * the upstream, and the headers the client gets back. Hop-by-hop headers (RFC 9110 §7.6.1),
 * and any the `Connection` header names, never cross qm; neither do the client's credentials
 * (they are for qm), qm's own request controls, an inference gateway's routing headers, `Host`
 * or a stale `Content-Length`. Bodies are
 * relayed still encoded, so `Content-Encoding` stays true. The Anthropic translator sends a
 * fresh header set of its own and answers with headers of its own.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { type Sent, useFakeFetch } from "../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { type App, appOf, post } from "../support/in-process.ts";
import { completion, sseResponse, sseText } from "../support/openai-answers.ts";

const up = useFakeFetch();
let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(
    '[server]\nlog_level = "error"\n' +
      modelToml("m", up) +
      modelToml("renamed", up, 'use_model_name = "a-much-longer-upstream-name"') +
      modelToml("native", up, "anthropic_native = true"),
  );
  for (const id of ["m", "renamed", "native"]) gw.states[id] = "ready";
  app = appOf(gw);
});

/** What a client (or whatever is between it and qm) may send. */
const CLIENT = {
  connection: "keep-alive, x-conn-private",
  "x-conn-private": "1",
  "keep-alive": "timeout=5",
  "proxy-connection": "keep-alive",
  "proxy-authorization": "Basic eDp5",
  te: "trailers",
  trailer: "x-checksum",
  "transfer-encoding": "chunked",
  upgrade: "h2c",
  host: "localhost:8080",
  authorization: "Bearer qm-key",
  "x-api-key": "qm-key",
  "x-qm-hold-ms": "0",
  "x-qm-patience-ms": "5",
  // What an inference gateway adds in front of qm (docs/cluster.md).
  "x-gateway-model-name": "m",
  "x-gateway-destination-endpoint": "10.0.0.7:8080",
  "x-gateway-destination-endpoint-served": "10.0.0.7:8080",
  "accept-encoding": "gzip, br",
  "user-agent": "client/1.0",
  accept: "application/json",
  "x-keep-me": "yes",
};

/** What an upstream may answer with, around its body. */
const UPSTREAM = {
  connection: "close, x-up-private",
  "x-up-private": "1",
  "keep-alive": "timeout=5",
  "proxy-authenticate": "Basic",
  "proxy-connection": "close",
  trailer: "x-checksum",
  "transfer-encoding": "chunked",
  upgrade: "h2c",
  "content-length": "999",
  date: "Mon, 01 Jan 2024 00:00:00 GMT",
  server: "llama.cpp",
  "x-request-id": "up-1",
};

const names = (headers: Headers) => [...headers.keys()].sort();
const chatCall = () => up.calls("/v1/chat/completions").at(-1) as Sent;

/** The client's headers an upstream is meant to see, unchanged. */
function expectEndToEndOnly(sent: Sent, extra: string[] = []) {
  expect(names(sent.headers)).toEqual(
    ["accept", "accept-encoding", "user-agent", "x-keep-me", ...extra].sort(),
  );
  expect(sent.headers.get("accept-encoding")).toBe("gzip, br");
  expect(sent.headers.get("x-keep-me")).toBe("yes");
}

/** Relayed as encoded: the upstream's gzip bytes reach the client as they were. */
const gzipped = (text: string, type: string) =>
  new Response(Bun.gzipSync(new TextEncoder().encode(text)), {
    headers: { ...UPSTREAM, "content-type": type, "content-encoding": "gzip" },
  });

async function expectRelayedEncoded(res: Response, text: string) {
  expect(res.headers.get("content-encoding")).toBe("gzip");
  const bytes = new Uint8Array(await res.arrayBuffer());
  expect(new TextDecoder().decode(Bun.gunzipSync(bytes))).toBe(text);
  const length = res.headers.get("content-length");
  expect(length === null || Number(length) === bytes.length).toBe(true);
}

const chat = { model: "m", messages: [{ role: "user", content: "hi" }] };
const json = JSON.stringify({ choices: [{ message: { content: "ok" }, finish_reason: "stop" }] });

describe("OpenAI passthrough", () => {
  test("upstream gets only end-to-end headers; fetch is told to relay bytes as they are", async () => {
    up.answer = () => gzipped(json, "application/json");
    const headers = { ...CLIENT, "content-type": "application/json" };
    expect((await post(app, "/v1/chat/completions", chat, headers)).status).toBe(200);
    const sent = up.last();
    expectEndToEndOnly(sent, ["content-type"]);
    expect(sent.init).toMatchObject({ decompress: false, redirect: "manual" });
  });

  test("the client gets the upstream's end-to-end headers, the body still encoded, and qm's", async () => {
    up.answer = () => gzipped(json, "application/json");
    const res = await post(app, "/v1/chat/completions", chat);
    expect(names(res.headers).filter((h) => h !== "content-length")).toEqual([
      "content-encoding",
      "content-type",
      "x-qm-model",
      "x-qm-model-loaded",
      "x-qm-wait-ms",
      "x-request-id",
    ]);
    await expectRelayedEncoded(res, json);
  });

  test("an SSE answer: the same rules", async () => {
    const text = sseText([{ choices: [{ delta: { content: "a" } }] }]);
    up.answer = () => {
      const res = sseResponse(text);
      for (const [k, v] of Object.entries(UPSTREAM)) res.headers.set(k, v);
      return res;
    };
    const res = await post(app, "/v1/chat/completions", { ...chat, stream: true }, CLIENT);
    expectEndToEndOnly(up.last(), ["content-type"]);
    expect(names(res.headers).filter((h) => h !== "content-length")).toEqual([
      "content-type",
      "x-qm-model",
      "x-qm-model-loaded",
      "x-qm-wait-ms",
      "x-request-id",
    ]);
    expect(await res.text()).toBe(text);
  });

  test("a body rewritten for use_model_name carries no stale Content-Length", async () => {
    up.answer = () => completion({ content: "ok" }, "stop");
    const body = JSON.stringify({ ...chat, model: "renamed" });
    await post(app, "/v1/chat/completions", JSON.parse(body), {
      "content-length": String(body.length),
    });
    const sent = up.last();
    expect(sent.headers.get("content-length")).toBeNull();
    expect(sent.body.length).toBeGreaterThan(body.length);
  });
});

describe("/upstream/{model}/…", () => {
  test("both ways, as on the OpenAI routes; the x-qm-* headers of every model route are added", async () => {
    up.answer = () => gzipped("<html>", "text/html");
    const res = await app.handle(new Request("http://localhost/upstream/m/", { headers: CLIENT }));
    expectEndToEndOnly(up.last());
    expect(names(res.headers).filter((h) => h !== "content-length")).toEqual([
      "content-encoding",
      "content-type",
      "x-qm-model",
      "x-qm-model-loaded",
      "x-qm-wait-ms",
      "x-request-id",
    ]);
    await expectRelayedEncoded(res, "<html>");
  });
});

describe("Anthropic", () => {
  const messages = { max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
  const anthropicClient = {
    ...CLIENT,
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "some-beta-2026",
    "x-stainless-lang": "js",
  };
  const answer = (s: Sent) => {
    if (!s.path.startsWith("/v1/chat/completions")) return new Response("", { status: 404 });
    const stream = JSON.parse(new TextDecoder().decode(s.body)).stream === true;
    const res = stream
      ? sseResponse(sseText([{ choices: [{ index: 0, delta: { content: "hi" } }] }]))
      : completion({ content: "hi" }, "stop");
    for (const [k, v] of Object.entries(UPSTREAM)) res.headers.set(k, v);
    return res;
  };

  test.each([
    [false, "application/json"],
    [true, "text/event-stream"],
  ])("translated (stream %p): a fresh header set goes upstream", async (stream, accept) => {
    up.answer = answer;
    const res = await post(
      app,
      "/v1/messages",
      { ...messages, model: "m", stream },
      anthropicClient,
    );
    await res.text();
    expect(Object.fromEntries(chatCall().headers)).toEqual({
      accept,
      "accept-encoding": "identity",
      "content-type": "application/json",
    });
  });

  test.each([
    [false, "application/json", []],
    [true, "text/event-stream", ["cache-control"]],
  ])("translated (stream %p): the client gets qm's headers, none of the upstream's", async (stream, type, more) => {
    up.answer = answer;
    const res = await post(app, "/v1/messages", { ...messages, model: "m", stream });
    await res.text();
    expect(res.headers.get("content-type")).toBe(type);
    expect(names(res.headers).filter((h) => h !== "content-length")).toEqual(
      [
        "content-type",
        "request-id",
        "x-qm-model",
        "x-qm-model-loaded",
        "x-qm-wait-ms",
        ...more,
      ].sort(),
    );
  });

  test("native: the client's end-to-end headers but Anthropic's own go upstream; relayed back encoded", async () => {
    const text = JSON.stringify({ type: "message", content: [], stop_reason: "end_turn" });
    up.answer = () => gzipped(text, "application/json");
    const res = await post(
      app,
      "/v1/messages",
      { ...messages, model: "native" },
      { ...anthropicClient, "content-type": "application/json" },
    );
    expectEndToEndOnly(up.last("/v1/messages"), ["content-type", "x-stainless-lang"]);
    expect(names(res.headers).filter((h) => h !== "content-length")).toEqual([
      "content-encoding",
      "content-type",
      "request-id",
      "x-qm-model",
      "x-qm-model-loaded",
      "x-qm-wait-ms",
      "x-request-id",
    ]);
    await expectRelayedEncoded(res, text);
  });
});
