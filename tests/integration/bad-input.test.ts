import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { serve } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: loads, stops and TTLs take real time.
setDefaultTimeout(20_000);

let qm: QmServer;

beforeAll(async () => {
  qm = await serve(`
[models.m]
cmd = "\${demo}"

[models.quiet]
cmd = "\${demo} --load-delay-ms 100"
send_loading_state = false
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${qm.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return { status: res.status, body: (await res.json()) as { error: Record<string, unknown> } };
}

describe("bad input gets a clear OpenAI-shaped error", () => {
  test("non-JSON body → 400", async () => {
    const r = await post("/v1/chat/completions", "{not json");
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ type: "invalid_request_error", code: "bad_request" });
    expect(String(r.body.error.message)).toContain("not valid JSON");
  });

  test("missing model → 400 with param model", async () => {
    const r = await post("/v1/chat/completions", JSON.stringify({ messages: [] }));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ param: "model", code: "bad_request" });
  });

  test("non-string model → 400", async () => {
    const r = await post("/v1/completions", JSON.stringify({ model: 42 }));
    expect(r.status).toBe(400);
    expect(String(r.body.error.message)).toContain("must be a string");
  });

  test("JSON that is not an object → 400", async () => {
    const r = await post("/v1/embeddings", "[1,2]");
    expect(r.status).toBe(400);
  });

  test("unknown model → 404 naming it", async () => {
    const r = await post("/v1/chat/completions", JSON.stringify({ model: "nope" }));
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ code: "model_not_found", param: "model" });
    expect(String(r.body.error.message)).toContain('"nope"');
  });

  test("wrong method → 405 with Allow", async () => {
    const res = await fetch(`${qm.url}/v1/chat/completions`);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      "method_not_allowed",
    );
  });

  test("unknown route → 404 in the same envelope", async () => {
    const res = await fetch(`${qm.url}/v2/whatever`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });

  test("multipart audio request without a model field → 400", async () => {
    const form = new FormData();
    form.set("file", new Blob(["RIFF"]), "a.wav");
    const res = await fetch(`${qm.url}/v1/audio/transcriptions`, { method: "POST", body: form });
    expect(res.status).toBe(400);
  });

  test("the server is still fine after all of that", async () => {
    const r = await post("/v1/chat/completions", JSON.stringify({ model: "m", messages: [] }));
    expect(r.status).toBe(200);
  });
});

describe("send_loading_state = false", () => {
  test("a cold streaming request waits silently, then gets the model's own stream and X-QM-Wait-Ms", async () => {
    const res = await fetch(`${qm.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "quiet", stream: true, messages: [] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-model-loaded")).toBe("false");
    expect(Number(res.headers.get("x-qm-wait-ms"))).toBeGreaterThanOrEqual(90);
    const text = await res.text();
    expect(text.startsWith("data: ")).toBe(true);
    expect(text).not.toContain(": qm-status");
  });
});
