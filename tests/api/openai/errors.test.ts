/**
 * Refusals on the OpenAI routes, in-process: each in OpenAI's envelope
 * (`{"error":{"message","type","param","code"}}`), with its status and headers, and none of
 * them reaching the scheduler or the upstream.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { useFakeFetch } from "../../support/fake-fetch.ts";
import { type FakeGw, fakeGateway, modelToml } from "../../support/fake-gateway.ts";
import { type App, appOf, bodyOf, call, post } from "../../support/in-process.ts";

const up = useFakeFetch();
let gw: FakeGw;
let app: App;
beforeEach(() => {
  gw = fakeGateway(`[server]\nlog_level = "error"\nmax_body_mb = 0.001\n${modelToml("m", up)}`);
  gw.states.m = "ready";
  app = appOf(gw);
});
afterEach(() => {
  expect(up.sent).toEqual([]);
  expect(gw.acquired).toBe(0);
});

const JSON_ROUTES = ["/v1/chat/completions", "/v1/completions", "/v1/embeddings"];

async function envelope(res: Response) {
  const body = await bodyOf(res);
  expect(Object.keys(body)).toEqual(["error"]);
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
  expect(res.headers.get("content-type")).toBe("application/json");
  return { status: res.status, ...body.error };
}

describe.each(JSON_ROUTES)("%s", (path) => {
  test("unknown model: 404 model_not_found naming it, final (x-should-retry: false)", async () => {
    const res = await post(app, path, { model: "nope", input: "x" });
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(await envelope(res)).toEqual({
      status: 404,
      type: "invalid_request_error",
      code: "model_not_found",
      param: "model",
      message: 'model "nope" not found; GET /v1/models lists the models this server has',
    });
  });

  test("a missing, empty or non-string model is a 400 naming the field", async () => {
    for (const body of [{ input: "x" }, { model: "", input: "x" }, { model: null }]) {
      expect(await envelope(await post(app, path, body))).toMatchObject({
        status: 400,
        code: "bad_request",
        param: "model",
        message: 'the request has no "model" field',
      });
    }
    for (const model of [42, ["m"], { id: "m" }, true]) {
      expect(await envelope(await post(app, path, { model }))).toMatchObject({
        status: 400,
        param: "model",
        message: '"model" must be a string',
      });
    }
  });

  test("a body that is not JSON, or not a JSON object, is a 400", async () => {
    const headers = { "content-type": "application/json" };
    const bad = await call(app, "POST", path, '{"model": "m",', headers);
    expect(await envelope(bad)).toMatchObject({
      status: 400,
      type: "invalid_request_error",
      code: "bad_request",
      param: null,
      message: "request body is not valid JSON",
    });
    for (const text of ["[1]", '"m"', "null", "3"]) {
      expect(await envelope(await call(app, "POST", path, text, headers))).toMatchObject({
        status: 400,
        message: "request body must be a JSON object",
      });
    }
  });

  test("a body over server.max_body_mb is a 413, declared or streamed", async () => {
    const big = JSON.stringify({ model: "m", input: "x".repeat(2000) });
    const length = { "content-length": String(big.length) };
    const declared = await envelope(await call(app, "POST", path, big, length));
    expect(declared).toMatchObject({
      status: 413,
      type: "invalid_request_error",
      code: "payload_too_large",
    });
    expect(declared.message).toContain("(server.max_body_mb)");
    // No Content-Length: counted as it arrives, cut at the limit.
    const streamed = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 4; i++) c.enqueue(new TextEncoder().encode(big.slice(i * 600)));
        c.close();
      },
    });
    const res = await app.handle(
      new Request(`http://localhost${path}`, { method: "POST", body: streamed }),
    );
    expect(res.headers.get("content-length")).toBeNull();
    expect(await envelope(res)).toMatchObject({ status: 413, code: "payload_too_large" });
  });

  test("shutting down: 503 before the body is looked at", async () => {
    gw.shuttingDown = true;
    const res = await post(app, path, { model: "nope" });
    expect(res.headers.get("x-should-retry")).toBeNull();
    expect(await envelope(res)).toEqual({
      status: 503,
      type: "unavailable_error",
      code: "shutting_down",
      param: null,
      message: "qm is shutting down",
    });
  });

  test("any method but POST: 405 with Allow: POST", async () => {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const res = await call(app, method, path);
      expect(res.headers.get("allow")).toBe("POST");
      expect(await envelope(res)).toMatchObject({
        status: 405,
        code: "method_not_allowed",
        message: `${method} is not allowed on ${path}; use POST`,
      });
    }
  });
});

test("/v1/models answers GET only: 405 with Allow: GET", async () => {
  const res = await call(app, "POST", "/v1/models", "{}");
  expect(res.headers.get("allow")).toBe("GET");
  expect(await envelope(res)).toMatchObject({ status: 405, code: "method_not_allowed" });
});

test("X-QM-Hold-Ms that is not a whole number of ms is a 400, before the model is looked up", async () => {
  const res = await post(app, "/v1/chat/completions", { model: "nope" }, { "x-qm-hold-ms": "1.5" });
  expect(await envelope(res)).toMatchObject({ status: 400, code: "bad_request" });
});
