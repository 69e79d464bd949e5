/**
 * Every API through a peer: the translation happens here, once, so the peer is always sent
 * OpenAI chat; the client gets its own API's answer, streamed or whole.
 */
import { describe, expect, test } from "bun:test";
import { jsonOf, useFakeFetch } from "../support/fake-fetch.ts";
import { appOf, bodyOf, post } from "../support/in-process.ts";
import { chunk, completion, sseResponse, sseText } from "../support/openai-answers.ts";
import { peerGateway } from "./support.ts";

const net = useFakeFetch("http://box2.test");

const TOML = `
[peers.box2]
url = "http://box2.test"
api_key = "k2"
models = ["big"]
`;

const STREAM = sseText([
  chunk({ role: "assistant", content: "Hel" }),
  chunk({ content: "lo" }),
  chunk({}, "stop"),
  { choices: [], usage: { prompt_tokens: 7, completion_tokens: 2 } },
]);
const hi = [{ role: "user", content: "hi" }];

/** The one call the peer got: OpenAI chat, the peer's key, the model by its name there. */
function sentChat() {
  expect(net.sent).toHaveLength(1);
  const sent = net.sent[0]!;
  expect(sent.path).toBe("/v1/chat/completions");
  expect(sent.headers.get("x-api-key")).toBe("k2");
  const body = jsonOf(sent);
  expect(body.model).toBe("big");
  return body;
}

describe("every API through a peer", () => {
  test("Anthropic messages, streamed: Anthropic events out, OpenAI chat to the peer", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => sseResponse(STREAM);
    const res = await post(appOf(gw), "/v1/messages", {
      model: "big",
      max_tokens: 50,
      stream: true,
      messages: hi,
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain("event: message_start");
    expect(text).toContain('"text":"Hel"');
    expect(text).toContain("event: message_stop");
    expect(sentChat().stream).toBe(true);
    expect(gw.acquired).toBe(0);
  });

  test("Anthropic messages, whole", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => completion({ content: "hello" }, "stop");
    const res = await post(appOf(gw), "/v1/messages", {
      model: "big",
      max_tokens: 50,
      messages: hi,
    });
    const body = await bodyOf(res);
    expect(body.type).toBe("message");
    expect(body.content[0]).toEqual({ type: "text", text: "hello" });
    sentChat();
  });

  test("Responses, streamed", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => sseResponse(STREAM);
    const res = await post(appOf(gw), "/v1/responses", { model: "big", input: "hi", stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain("response.output_text.delta");
    expect(text).toContain("response.completed");
    expect(sentChat().stream).toBe(true);
  });

  test("Responses, whole", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => completion({ content: "hello" }, "stop");
    const body = await bodyOf(
      await post(appOf(gw), "/v1/responses", { model: "big", input: "hi" }),
    );
    expect(body.object).toBe("response");
    expect(body.output_text ?? body.output[0].content[0].text).toBe("hello");
    sentChat();
  });

  test("Ollama chat, streamed as NDJSON", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => sseResponse(STREAM);
    const res = await post(appOf(gw), "/api/chat", { model: "big", messages: hi });
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    const lines = (await res.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.message.content).join("")).toBe("Hello");
    expect(lines.at(-1)).toMatchObject({ done: true, eval_count: 2 });
    sentChat();
  });

  test("Ollama chat, whole", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => completion({ content: "hello" }, "stop");
    const body = await bodyOf(
      await post(appOf(gw), "/api/chat", { model: "big", messages: hi, stream: false }),
    );
    expect(body).toMatchObject({ done: true, message: { content: "hello" } });
    sentChat();
  });

  test("OpenAI legacy completions go to the same path on the peer", async () => {
    const gw = peerGateway(TOML);
    net.answer = () => Response.json({ choices: [{ text: "x", index: 0, finish_reason: "stop" }] });
    const res = await post(appOf(gw), "/v1/completions", { model: "big", prompt: "p" });
    expect(res.status).toBe(200);
    expect(net.sent[0]?.path).toBe("/v1/completions");
  });
});

describe("a qm peer's wait status reaches every SSE API's client", () => {
  const QM = `
[peers.box2]
url = "http://box2.test"
kind = "qm"
api_key = "k2"
`;
  /** The peer loads the model: its stream opens with wait-status comments, then the answer. */
  const LOADING = `: qm-status: waiting 1\n\n: qm-status: loading 10%\n\n: keep-alive\n\n${STREAM}`;
  const commentsAndEvents = (text: string) =>
    text
      .split("\n")
      .filter((l) => l.startsWith(":") || l.startsWith("event:"))
      .map((l) => (l.startsWith(":") ? l : l.slice(7)));

  function qmPeer() {
    const gw = peerGateway(QM);
    gw.peers.discovered("box2", new Map([["big", "offered"]]), 0);
    net.answer = () => sseResponse(LOADING);
    return gw;
  }

  test("Anthropic: the comments come first, before message_start; the keep-alive is not relayed", async () => {
    const res = await post(appOf(qmPeer()), "/v1/messages", {
      model: "big",
      max_tokens: 50,
      stream: true,
      messages: hi,
    });
    expect(res.status).toBe(200);
    const seen = commentsAndEvents(await res.text());
    expect(seen.slice(0, 3)).toEqual([
      ": qm-status: waiting 1",
      ": qm-status: loading 10%",
      "message_start",
    ]);
    expect(seen).not.toContain(": keep-alive");
    expect(seen.at(-1)).toBe("message_stop");
    expect(sentChat().stream).toBe(true);
  });

  test("Responses: response.created at once, then the comments, then the answer", async () => {
    const res = await post(appOf(qmPeer()), "/v1/responses", {
      model: "big",
      input: "hi",
      stream: true,
    });
    expect(res.status).toBe(200);
    const seen = commentsAndEvents(await res.text());
    expect(seen.slice(0, 5)).toEqual([
      "response.created",
      "response.in_progress",
      ": qm-status: waiting 1",
      ": qm-status: loading 10%",
      "response.output_item.added",
    ]);
    expect(seen).not.toContain(": keep-alive");
    expect(seen.at(-1)).toBe("response.completed");
    sentChat();
  });
});
