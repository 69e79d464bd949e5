/**
 * `[activity] capture`: each record keeps its request (secrets redacted) and the answer as the
 * client got it, each cut at `capture_bytes` on a whole UTF-8 character, all captures bounded
 * together (oldest dropped first); served only by `GET /api/requests/{id}`.
 */
import { describe, expect, test } from "bun:test";
import type { QmEvent } from "../../src/api/gateway.ts";
import { ActivityLog } from "../../src/observe/activity.ts";
import { CaptureStore, captureJson, REDACTED, utf8Boundary } from "../../src/observe/capture.ts";
import type { RequestRecord } from "../../src/observe/record.ts";
import { scriptedBody, useFakeFetch } from "../support/fake-fetch.ts";
import { closeGate, type FakeGw, fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { type App, appOf, bodyOf, call, post } from "../support/in-process.ts";
import { chunk, completion, sseResponse, sseText } from "../support/openai-answers.ts";

const up = useFakeFetch();
const enc = new TextEncoder();

const TOML = (activity: string) =>
  `[server]\nlog_level = "error"\n[activity]\n${activity}\n${modelToml("m", up)}`;

function setup(activity = "capture = true"): { gw: FakeGw; app: App } {
  const gw = fakeGateway(TOML(activity));
  gw.states.m = "ready";
  return { gw, app: appOf(gw) };
}

const chat = (content = "hi", stream = false) => ({
  model: "m",
  stream,
  messages: [{ role: "user", content }],
});

async function detail(app: App, id: number) {
  const res = await call(app, "GET", `/api/requests/${id}`);
  expect(res.status).toBe(200);
  return bodyOf(res);
}

function rec(): RequestRecord {
  return {
    id: 0,
    time: 1,
    key: "anonymous",
    model: "m",
    api: "openai",
    status: 200,
    answered: true,
    wait_ms: 0,
    swap: false,
    duration_ms: 1,
    ttft_ms: null,
    prompt_tokens: null,
    completion_tokens: null,
    cached_tokens: null,
    finish_reason: null,
  };
}

const request = (body: string, headers: Record<string, string> = {}) =>
  new Request("http://localhost/v1/chat/completions?x=1", { method: "POST", headers, body });

describe("the request", () => {
  test("the four secret headers are redacted, whatever their case; others are kept", () => {
    const store = new CaptureStore(1024, 1 << 20);
    const c = store.begin(
      request("{}", {
        AUTHORIZATION: "Bearer sk-1",
        "X-Api-Key": "sk-2",
        "proxy-Authorization": "Basic eA==",
        CoOkIe: "session=3",
        "X-Trace": "t-1",
        ["__proto__"]: "p",
        "Content-Type": "application/json",
      }),
      enc.encode("{}"),
    );
    const json = captureJson(c)!;
    expect(json.request.headers).toMatchObject({
      authorization: REDACTED,
      "x-api-key": REDACTED,
      "proxy-authorization": REDACTED,
      cookie: REDACTED,
      "x-trace": "t-1",
      ["__proto__"]: "p",
      "content-type": "application/json",
    });
    const text = JSON.stringify(json);
    for (const secret of ["sk-1", "sk-2", "eA==", "session=3"]) expect(text).not.toContain(secret);
    expect(json.request).toMatchObject({ method: "POST", path: "/v1/chat/completions?x=1" });
    expect(json.request.body).toEqual({ bytes: 2, truncated: false, text: "{}" });
  });

  test("a body past the cap is cut on a whole UTF-8 character, at every cap", () => {
    const text = "aé€😀b€é😀";
    const bytes = enc.encode(text);
    for (let cap = 0; cap <= bytes.byteLength + 1; cap++) {
      const store = new CaptureStore(cap, 1 << 20);
      const body = captureJson(store.begin(request(text), bytes))!.request.body;
      expect(body.bytes).toBe(bytes.byteLength);
      expect(body.truncated).toBe(cap < bytes.byteLength);
      expect(body.text).toBeDefined();
      const kept = body.text!;
      // A prefix of the text, whole characters only, and as long as fits in the cap.
      expect(text.startsWith(kept)).toBe(true);
      expect(kept.includes("\uFFFD")).toBe(false);
      const size = enc.encode(kept).byteLength;
      expect(size).toBeLessThanOrEqual(cap);
      const next = [...text.slice(kept.length)][0];
      if (next !== undefined) expect(size + enc.encode(next).byteLength).toBeGreaterThan(cap);
    }
  });

  test("utf8Boundary leaves out only a character cut at the end", () => {
    const euro = enc.encode("€"); // e2 82 ac
    expect(utf8Boundary(Uint8Array.of(0x61, euro[0]!))).toBe(1);
    expect(utf8Boundary(Uint8Array.of(0x61, euro[0]!, euro[1]!))).toBe(1);
    expect(utf8Boundary(Uint8Array.of(0x61, ...euro))).toBe(4);
    expect(utf8Boundary(Uint8Array.of(0x61, 0x62))).toBe(2);
  });

  test("bytes that are not UTF-8 (an upload) are kept as base64", () => {
    const store = new CaptureStore(4, 1 << 20);
    const raw = Uint8Array.of(0xff, 0x00, 0xfe, 0x80, 0x01, 0x02);
    const body = captureJson(store.begin(request("x"), raw))!.request.body;
    expect(body).toEqual({
      bytes: 6,
      truncated: true,
      base64: Buffer.from(raw.subarray(0, 4)).toString("base64"),
    });
  });
});

describe("the total bound", () => {
  test("drops the oldest captures first; their records stay", () => {
    // Each capture holds its headers (none here), method and path (4 + 20 bytes) and 100 body bytes.
    const each = "POST".length + "/v1/chat/completions?x=1".length + 100;
    const store = new CaptureStore(100, each * 3);
    const log = new ActivityLog(10, store);
    const body = enc.encode("x".repeat(100));
    const ids: number[] = [];
    for (let n = 0; n < 5; n++) ids.push(log.push(rec(), store.begin(request("x"), body)));
    expect(store.bytes).toBe(each * 3);
    expect(ids.map((id) => log.get(id)!.capture !== null)).toEqual([
      false,
      false,
      true,
      true,
      true,
    ]);
    expect(ids.map((id) => log.get(id) !== null)).toEqual([true, true, true, true, true]);
  });

  test("a record overwritten in the ring takes its capture with it", () => {
    const store = new CaptureStore(100, 1 << 20);
    const log = new ActivityLog(2, store);
    for (let n = 0; n < 3; n++) log.push(rec(), store.begin(request("x"), enc.encode("abc")));
    expect(log.get(1)).toBeNull();
    expect([log.get(2)!.capture, log.get(3)!.capture].every((c) => c !== null)).toBe(true);
    const one = new CaptureStore(100, 1 << 20);
    one.begin(request("x"), enc.encode("abc"));
    expect(store.bytes).toBe(one.bytes * 2);
  });
});

describe("through the routes", () => {
  test("a whole answer: the request with its headers redacted, the answer as the client got it", async () => {
    const { app } = setup();
    up.answer = () => completion({ content: "Hello" }, "stop");
    const res = await post(app, "/v1/chat/completions", chat("héllo"), {
      authorization: "Bearer secret",
    });
    const got = await res.text();
    const list = await bodyOf(await call(app, "GET", "/api/requests"));
    const id = list.requests[0].id;
    expect(list.requests[0].capture).toBeUndefined();
    const one = await detail(app, id);
    expect(one).toMatchObject({ id, model: "m", status: 200 });
    expect(one.capture.request.headers.authorization).toBe(REDACTED);
    expect(JSON.parse(one.capture.request.body.text)).toEqual(chat("héllo"));
    expect(one.capture.answer).toEqual({
      bytes: enc.encode(got).byteLength,
      truncated: false,
      text: got,
    });
  });

  test("a stream: the client gets every byte as it comes, the capture keeps the first capture_bytes", async () => {
    const { gw, app } = setup("capture = true\ncapture_bytes = 40");
    const events: QmEvent[] = [];
    gw.subscribe((e) => events.push(e));
    const body = scriptedBody();
    up.answer = () => sseResponse(body.stream);
    const res = await post(app, "/v1/chat/completions", chat("hi", true));
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let got = "";
    const frames = ["Hé", "llo", " wörld"].map(
      (t) => `data: ${JSON.stringify(chunk({ content: t }))}\n\n`,
    );
    let sent = "";
    for (const frame of frames) {
      body.push(frame);
      sent += frame;
      // Each piece reaches the client before the next is sent: nothing is held back.
      while (got.length < sent.length) {
        const step = await reader.read();
        got += dec.decode(step.value!, { stream: true });
      }
      expect(got).toBe(sent);
    }
    body.push("data: [DONE]\n\n");
    body.end();
    for (;;) {
      const step = await reader.read();
      if (step.done) break;
      got += dec.decode(step.value, { stream: true });
    }
    expect(got).toBe(`${frames.join("")}data: [DONE]\n\n`);
    const id = gw.records[0]!.id;
    const one = await detail(app, id);
    expect(one.capture.answer.bytes).toBe(enc.encode(got).byteLength);
    expect(one.capture.answer.truncated).toBe(true);
    expect(got.startsWith(one.capture.answer.text)).toBe(true);
    expect(enc.encode(one.capture.answer.text).byteLength).toBeLessThanOrEqual(40);
    expect(enc.encode(one.capture.answer.text).byteLength).toBeGreaterThan(36);
    // The event carries the record and its id, never what was captured.
    const published = events.find((e) => e.type === "request") as Record<string, unknown>;
    expect(published.id).toBe(id);
    expect(published.capture).toBeUndefined();
  });

  test("the client leaving a captured stream still cancels the upstream and ends the call", async () => {
    const { gw, app } = setup();
    const body = scriptedBody();
    up.answer = () => sseResponse(body.stream);
    const res = await post(app, "/v1/chat/completions", chat("hi", true));
    const reader = res.body!.getReader();
    body.push(`data: ${JSON.stringify(chunk({ content: "a" }))}\n\n`);
    await reader.read();
    await reader.cancel();
    await body.cancelled;
    await gw.leases[0]!.released;
    expect(gw.records).toHaveLength(1);
    expect(gw.records[0]!.answered).toBe(false);
    const one = await detail(app, gw.records[0]!.id);
    expect(one.capture.answer.text).toContain('"content":"a"');
  });

  test("a translated stream (Ollama NDJSON) is captured as the client got it, not as the upstream sent it", async () => {
    const { gw, app } = setup();
    up.answer = () =>
      sseResponse(sseText([chunk({ role: "assistant", content: "Hi" }), chunk({}, "stop")]));
    const res = await post(app, "/api/chat", {
      model: "m",
      messages: [{ role: "user", content: "hi" }],
    });
    const got = await res.text();
    expect(got.split("\n").filter((l) => l !== "").length).toBeGreaterThan(1);
    const one = await detail(app, gw.records[0]!.id);
    expect(one.api).toBe("ollama");
    expect(one.capture.answer).toEqual({
      bytes: enc.encode(got).byteLength,
      truncated: false,
      text: got,
    });
  });

  test("behind the wait-status placeholder, the comments are in the captured answer too", async () => {
    const { gw, app } = setup();
    gw.states.m = "stopped";
    const gate = closeGate(gw);
    gw.onWaiting = gate.open;
    up.answer = () => sseResponse(sseText([chunk({ content: "Ready" }, "stop")]));
    const res = await post(app, "/v1/chat/completions", chat("hi", true));
    const got = await res.text();
    expect(got.startsWith(": qm-status: loading")).toBe(true);
    const one = await detail(app, gw.records[0]!.id);
    expect(one.swap).toBe(true);
    expect(one.capture.answer.text).toBe(got);
  });

  test("capture off keeps nothing: no store, capture null", async () => {
    const { gw, app } = setup("size = 5");
    expect(gw.captures).toBeNull();
    up.answer = () => completion({ content: "Hello" }, "stop");
    await (await post(app, "/v1/chat/completions", chat())).text();
    const one = await detail(app, gw.records[0]!.id);
    expect(one).toMatchObject({ model: "m", status: 200, capture: null });
  });

  test("an unknown id is a 404, a bad one a 400 naming `id`", async () => {
    const { app } = setup();
    const missing = await call(app, "GET", "/api/requests/7");
    expect(missing.status).toBe(404);
    expect((await bodyOf(missing)).error.message).toContain("no request 7");
    for (const bad of ["0", "x", "-1", "1.5", "99999999999999999999"]) {
      const res = await call(app, "GET", `/api/requests/${bad}`);
      expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
      expect((await bodyOf(res)).error.param).toBe("id");
    }
  });

  test("behind the API key", async () => {
    const gw = fakeGateway(
      `[server]\nlog_level = "error"\napi_keys = ["k"]\n[activity]\ncapture = true\n${modelToml("m", up)}`,
    );
    const app = appOf(gw);
    expect((await call(app, "GET", "/api/requests/1")).status).toBe(401);
    const res = await call(app, "GET", "/api/requests/1", null, { authorization: "Bearer k" });
    expect(res.status).toBe(404);
  });
});
