/**
 * The edge through the compiled binary: one parse of the request-target decides routing and
 * authorization, so no request-target trick reaches a keyed route; Host and Origin checks stop
 * DNS rebinding and cross-site pages; every refusal is in the API's envelope.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { serve } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";
import { rawGet, rawTo } from "../support/raw-http.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

let keyed: QmServer;
let open: QmServer;

beforeAll(async () => {
  [keyed, open] = await Promise.all([
    serve(`
[server]
api_keys = ["k"]
allowed_hosts = ["qm", "*.lan"]

[models.m]
cmd = "\${demo}"
`),
    serve(`
[server]
cors_origins = ["http://app.example"]
max_body_mb = 1

[models.m]
cmd = "\${demo}"
`),
  ]);
});

afterAll(async () => {
  expect(await keyed.stop()).toBe(0);
  expect(await open.stop()).toBe(0);
});

/** Every keyed route, with the method it answers. */
const ROUTES: [string, string][] = [
  ["GET", "/api/status"],
  ["GET", "/api/events"],
  ["GET", "/running"],
  ["GET", "/v1/models"],
  ["GET", "/api/models/m/logs"],
  ["POST", "/api/models/m/load"],
  ["POST", "/api/models/m/unload"],
  ["POST", "/api/models/unload"],
  ["POST", "/api/models/m/lease"],
  ["POST", "/api/models/m/lease/x"],
  ["DELETE", "/api/models/m/lease/x"],
  ["POST", "/v1/chat/completions"],
  ["POST", "/v1/completions"],
  ["POST", "/v1/embeddings"],
  ["POST", "/v1/messages"],
  ["POST", "/v1/messages/count_tokens"],
  ["GET", "/upstream/m/health"],
];

/** Request-targets and Hosts that once made routing and the key check see different paths. */
function tricks(path: string): { target: string; host: string }[] {
  return [
    { target: `/health#${path}`, host: "x" },
    { target: `/health#${path}`, host: "qm" },
    { target: `/health?#${path}`, host: "x" },
    { target: path, host: "qm" },
    { target: `http://127.0.0.1${path}`, host: "x" },
    { target: `//${path.slice(1)}`, host: "x" },
    { target: `/health/..${path}`, host: "x" },
    { target: `/health/%2e%2e${path}`, host: "x" },
    { target: `${path}#/health`, host: "localhost" },
  ];
}

function isOpenAiEnvelope(body: string): boolean {
  try {
    const e = (JSON.parse(body) as { error?: { message?: unknown; type?: unknown } }).error;
    return typeof e?.message === "string" && typeof e.type === "string";
  } catch {
    return false;
  }
}

function isAnthropicEnvelope(body: string): boolean {
  try {
    const j = JSON.parse(body) as { type?: unknown; error?: { type?: unknown; message?: unknown } };
    return j.type === "error" && typeof j.error?.type === "string";
  } catch {
    return false;
  }
}

describe("API keys cannot be bypassed", () => {
  test("no request-target trick reaches any keyed route without the key", async () => {
    const answers: string[] = [];
    for (const [method, path] of ROUTES) {
      for (const { target, host } of tricks(path)) {
        const body = method === "POST" ? '{"model":"m","messages":[]}' : "";
        const headers: Record<string, string> = { Host: host };
        if (body) {
          headers["Content-Type"] = "application/json";
          headers["Content-Length"] = String(body.length);
        }
        const text = rawGet(target, headers, method).replace(/\r\n\r\n$/, `\r\n\r\n${body}`);
        const res = await rawTo(keyed.url, text);
        const ok =
          [400, 401, 403, 404].includes(res.status) &&
          (isOpenAiEnvelope(res.body) || isAnthropicEnvelope(res.body));
        if (!ok)
          answers.push(
            `${method} ${target} (Host ${host}) → ${res.status} ${res.body.slice(0, 80)}`,
          );
      }
    }
    expect(answers).toEqual([]);
  });

  test("a fragment is refused with 400; /health stays open", async () => {
    const frag = await rawTo(keyed.url, rawGet("/health#/api/status", { Host: "x" }));
    expect(frag.status).toBe(400);
    expect(frag.body).toContain("fragment");
    const health = await rawTo(keyed.url, rawGet("/health", { Host: "localhost" }));
    expect(health.status).toBe(200);
  });

  test("absolute-form is routed and authorized on its path", async () => {
    const res = await rawTo(
      keyed.url,
      rawGet("http://127.0.0.1/api/status", { Host: "localhost", Authorization: "Bearer k" }),
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).models[0].id).toBe("m");
  });

  test("a short Host that is allowed routes POST /v1/* correctly with the key", async () => {
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });
    const res = await rawTo(
      keyed.url,
      rawGet(
        "/v1/chat/completions",
        {
          Host: "qm",
          Authorization: "Bearer k",
          "Content-Type": "application/json",
          "Content-Length": String(body.length),
        },
        "POST",
      ).replace(/\r\n\r\n$/, `\r\n\r\n${body}`),
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).object).toBe("chat.completion");
  });

  test("a 401 says not to retry, in each API's envelope", async () => {
    const oai = await fetch(`${keyed.url}/v1/models`);
    expect(oai.status).toBe(401);
    expect(oai.headers.get("x-should-retry")).toBe("false");
    expect(isOpenAiEnvelope(await oai.text())).toBe(true);
    const ant = await fetch(`${keyed.url}/v1/messages`, { method: "POST", body: "{}" });
    expect(ant.status).toBe(401);
    expect(ant.headers.get("x-should-retry")).toBe("false");
    expect(isAnthropicEnvelope(await ant.text())).toBe(true);
  });
});

describe("Host names (DNS rebinding)", () => {
  test("a loopback listener refuses foreign names with 403 and admits loopback ones", async () => {
    const evil = await rawTo(open.url, rawGet("/api/status", { Host: "evil.example" }));
    expect(evil.status).toBe(403);
    expect(isOpenAiEnvelope(evil.body)).toBe(true);
    expect(evil.body).toContain("server.allowed_hosts");
    for (const host of ["localhost", "127.0.0.1", "[::1]", "app.localhost"]) {
      const res = await rawTo(open.url, rawGet("/api/status", { Host: host }));
      expect(res.status).toBe(200);
    }
  });

  test("allowed_hosts admits its names and wildcards, and nothing else", async () => {
    const auth = { Authorization: "Bearer k" };
    expect((await rawTo(keyed.url, rawGet("/running", { Host: "qm", ...auth }))).status).toBe(200);
    expect(
      (await rawTo(keyed.url, rawGet("/running", { Host: "box.lan:8080", ...auth }))).status,
    ).toBe(200);
    expect((await rawTo(keyed.url, rawGet("/running", { Host: "lan.evil", ...auth }))).status).toBe(
      403,
    );
  });

  test("a malformed or doubled Host is a 400", async () => {
    for (const host of ["a/b", "a b", "a, b"]) {
      const res = await rawTo(open.url, rawGet("/api/status", { Host: host }));
      expect(res.status).toBe(400);
      expect(isOpenAiEnvelope(res.body)).toBe(true);
    }
  });
});

describe("browsers (Origin)", () => {
  test("a cross-site text/plain POST cannot drive qm", async () => {
    for (const path of ["/v1/chat/completions", "/api/models/m/load"]) {
      const res = await fetch(`${open.url}${path}`, {
        method: "POST",
        headers: { origin: "http://evil.example", "content-type": "text/plain" },
        body: '{"model":"m","messages":[{"role":"user","content":"hi"}]}',
      });
      expect(res.status).toBe(403);
      expect(isOpenAiEnvelope(await res.text())).toBe(true);
    }
    const s = (await (await fetch(`${open.url}/api/status`)).json()) as {
      models: { state: string }[];
    };
    expect(s.models[0]!.state).toBe("stopped");
  });

  test("a listed origin gets CORS headers and its preflight answered; curl keeps working", async () => {
    const pre = await fetch(`${open.url}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: {
        origin: "http://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, authorization",
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("http://app.example");
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST");
    expect(pre.headers.get("access-control-allow-headers")).toBe("content-type, authorization");
    const res = await fetch(`${open.url}/v1/models`, { headers: { origin: "http://app.example" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("http://app.example");
    expect(res.headers.get("access-control-expose-headers")).toContain("x-qm-model");
    const curl = await fetch(`${open.url}/api/models/m/unload`, { method: "POST", body: "" });
    expect(curl.status).toBe(200);
  });

  test("qm's own origin is always allowed", async () => {
    const { host } = new URL(open.url);
    const res = await fetch(`${open.url}/api/status`, { headers: { origin: `http://${host}` } });
    expect(res.status).toBe(200);
  });

  test("a cross-site request without Origin is refused by its Sec-Fetch-Site", async () => {
    const res = await fetch(`${open.url}/upstream/m/health`, {
      headers: { "sec-fetch-site": "cross-site" },
    });
    expect(res.status).toBe(403);
  });
});

describe("HEAD", () => {
  test("answers as GET would, without a body, even on the endless /api/events", async () => {
    for (const path of ["/api/events", "/v1/models", "/api/status"]) {
      const res = await fetch(`${open.url}${path}`, {
        method: "HEAD",
        signal: AbortSignal.timeout(3000),
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("");
    }
    const events = await fetch(`${open.url}/api/events`, { method: "HEAD" });
    expect(events.headers.get("content-type")).toBe("text/event-stream");
  });
});

describe("every refusal is enveloped", () => {
  test("bad escapes, odd methods, long targets and big bodies", async () => {
    const cases: [string, number][] = [
      [rawGet("/upstream/fz/%ZZ", { Host: "localhost" }), 400],
      [rawGet("/v1/models", { Host: "localhost" }, "TRACE"), 405],
      [rawGet(`/${"a".repeat(20_000)}`, { Host: "localhost" }), 414],
      [
        rawGet(
          "/v1/chat/completions",
          { Host: "localhost", "Content-Length": String(5 * 1024 * 1024) },
          "POST",
        ),
        413,
      ],
      [
        rawGet(
          "/api/models/m/lease",
          { Host: "localhost", "Content-Length": "99999999999" },
          "POST",
        ),
        413,
      ],
    ];
    for (const [text, want] of cases) {
      const res = await rawTo(open.url, text);
      expect(res.status).toBe(want);
      expect(isOpenAiEnvelope(res.body)).toBe(true);
      expect(res.headers.get("x-should-retry")).toBe("false");
    }
  });

  test("a chunked body past max_body_mb gets the 413 envelope", async () => {
    const big = new Uint8Array(2 * 1024 * 1024).fill(32);
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(big);
        c.close();
      },
    });
    const res = await fetch(`${open.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: stream,
    });
    expect(res.status).toBe(413);
    expect(isOpenAiEnvelope(await res.text())).toBe(true);
  });
});
