/**
 * The wait-status placeholder on the OpenAI routes: a streaming chat or text completion for a
 * model that is not ready gets `200 text/event-stream` at once, SSE comments while it waits,
 * then the upstream's own stream; never a `data:` frame that is not the model's.
 */
import { beforeEach, describe, expect, test } from "bun:test";
import { QmError } from "../../../src/shared/errors.ts";
import { jsonOf, useFakeFetch } from "../../support/fake-fetch.ts";
import { closeGate, type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, appOf, call, post } from "../../support/in-process.ts";
import { chunk, sseResponse, sseText } from "../../support/openai-answers.ts";

const up = useFakeFetch();
let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(
    '[server]\nlog_level = "error"\n' +
      modelToml("m", up) +
      modelToml("renamed", up, 'use_model_name = "upstream-name"') +
      modelToml("quiet", up, "send_loading_state = false"),
  );
  app = appOf(gw);
});

const chat = { model: "m", messages: [{ role: "user", content: "hi" }], stream: true };
const answer = sseText([chunk({ role: "assistant", content: "Hel" }), chunk({ content: "lo" })]);

interface Reader {
  read(): Promise<{ done: boolean; value?: Uint8Array }>;
}

/** Reads until the text read holds `want`; the reader goes on from there. */
async function readUntil(reader: Reader, want: string) {
  let text = "";
  while (!text.includes(want)) {
    const step = await reader.read();
    if (step.done) throw new Error(`stream ended before ${JSON.stringify(want)}: ${text}`);
    text += new TextDecoder().decode(step.value);
  }
  return text;
}

async function rest(reader: Reader): Promise<string> {
  let text = "";
  for (;;) {
    const step = await reader.read();
    if (step.done) return text;
    text += new TextDecoder().decode(step.value);
  }
}

/** Everything before the model's first byte is an SSE comment (or a blank line). */
function onlyComments(text: string): boolean {
  return text.split("\n").every((line) => line === "" || line.startsWith(":"));
}

describe("placeholder", () => {
  test("comments while it waits (queue position, loading), then the upstream's stream as is", async () => {
    const gate = closeGate(gw);
    gw.position = 2;
    up.answer = () => sseResponse(answer);
    const res = await post(app, "/v1/chat/completions", chat);
    // The answer's headers came before the model could serve.
    expect(gw.acquired).toBe(0);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-qm-model")).toBe("m");
    expect(res.headers.get("x-qm-model-loaded")).toBe("false");
    expect(res.headers.get("x-qm-wait-ms")).toBeNull();
    const reader = res.body!.getReader();
    const waiting = await readUntil(reader, ": qm-status: loading\n\n");
    expect(waiting).toStartWith(": qm-status: waiting 2\n\n");
    expect(onlyComments(waiting)).toBe(true);
    gate.open();
    const text = waiting + (await rest(reader));
    const cut = text.indexOf("data: ");
    expect(onlyComments(text.slice(0, cut))).toBe(true);
    expect(text.slice(cut)).toBe(answer);
    expect(jsonOf(up.last()).stream).toBe(true);
    expect(gw.leases.map((l) => l.releases)).toEqual([[{ toolCalls: false }]]);
  });

  test("/v1/completions gets one too", async () => {
    closeGate(gw).open();
    up.answer = () => sseResponse(sseText([{ choices: [{ text: "once" }] }]));
    const res = await post(app, "/v1/completions", { model: "m", prompt: "x", stream: true });
    const text = await res.text();
    expect(text).toStartWith(": qm-status: loading\n\n");
    expect(text).toEndWith("data: [DONE]\n\n");
  });

  test("a model that fails to start: the stream ends with an error event naming the cause", async () => {
    const gate = closeGate(gw);
    const res = await post(app, "/v1/chat/completions", chat);
    gate.fail(new QmError("upstream_start_failed", 'model "m" exited during start (code 1)'));
    const text = await res.text();
    const frames = text.split("\n\n").filter((f) => f.startsWith("data: "));
    expect(frames).toHaveLength(1);
    expect(JSON.parse(frames[0]!.slice(6))).toEqual({
      error: {
        message: 'model "m" exited during start (code 1)',
        type: "qm_error",
        param: null,
        code: "upstream_start_failed",
      },
    });
    expect(up.sent).toEqual([]);
    expect(gw.leases).toEqual([]);
  });

  test("a client that leaves while it waits is never granted, and nothing goes upstream", async () => {
    const gate = closeGate(gw);
    const res = await post(app, "/v1/chat/completions", chat);
    const reader = res.body!.getReader();
    await readUntil(reader, ": qm-status: loading");
    await reader.cancel();
    gate.open();
    await gw.pending?.catch(() => {});
    expect(gw.leases).toEqual([]);
    expect(up.sent).toEqual([]);
  });

  test("an upstream refusal after the 200 becomes an error event; the lease is released once", async () => {
    closeGate(gw).open();
    up.answer = () => Response.json({ error: { message: "context full" } }, { status: 400 });
    const text = await (await post(app, "/v1/chat/completions", chat)).text();
    expect(text).toContain('data: {"error":');
    expect(text).toContain("upstream answered 400: context full");
    expect(gw.leases.map((l) => l.releases.length)).toEqual([1]);
  });
});

describe("no placeholder", () => {
  test("send_loading_state = false: the request waits, then relays the stream as is", async () => {
    closeGate(gw).open();
    gw.waitedMs = 900;
    up.answer = () => sseResponse(answer);
    const res = await post(app, "/v1/chat/completions", { ...chat, model: "quiet" });
    expect(res.headers.get("x-qm-model-loaded")).toBe("false");
    expect(res.headers.get("x-qm-wait-ms")).toBe("900");
    expect(await res.text()).toBe(answer);
  });

  test("a ready model: the upstream's stream, no comments", async () => {
    gw.states.m = "ready";
    up.answer = () => sseResponse(answer);
    const res = await post(app, "/v1/chat/completions", chat);
    expect(res.headers.get("x-qm-model-loaded")).toBe("true");
    expect(await res.text()).toBe(answer);
  });

  test("stream: true on a route that never answers in SSE (embeddings): plain JSON", async () => {
    closeGate(gw).open();
    up.answer = () => Response.json({ object: "list", data: [] });
    const res = await post(app, "/v1/embeddings", { model: "m", input: "x", stream: true });
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(res.headers.get("x-qm-wait-ms")).toBe("0");
    expect(await res.json()).toEqual({ object: "list", data: [] });
  });

  test("a non-streaming request for a cold model waits for it", async () => {
    closeGate(gw).open();
    up.answer = () => Response.json({ ok: true });
    const res = await post(app, "/v1/chat/completions", { ...chat, stream: false });
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(await res.json()).toEqual({ ok: true });
  });
});

describe("multipart `stream` field", () => {
  const form = (model: string) => {
    const f = new FormData();
    f.set("model", model);
    f.set("prompt", "x");
    f.set("stream", "true");
    return f;
  };

  test("read from the form: a cold model's stream gets the placeholder", async () => {
    closeGate(gw).open();
    up.answer = () => sseResponse(answer);
    const res = await call(app, "POST", "/v1/completions", form("m"));
    expect(await res.text()).toStartWith(": qm-status: loading\n\n");
  });

  test("read from the form with use_model_name set too", async () => {
    closeGate(gw).open();
    up.answer = () => sseResponse(answer);
    const res = await call(app, "POST", "/v1/completions", form("renamed"));
    expect(await res.text()).toStartWith(": qm-status: loading\n\n");
  });
});
