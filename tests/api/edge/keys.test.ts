/**
 * Keys at the edge, through every API: who a request is, what it may name, the admin routes,
 * the limits, and a reload.
 */
import { describe, expect, test } from "bun:test";
import { bodyOf } from "../../support/in-process.ts";
import { keyedQm, modelsToml } from "./keyed.ts";

const MODELS = modelsToml({
  "pub-a": 'aliases = ["gpt-pub"]',
  hidden: 'aliases = ["gpt-hidden"]',
});
const KEYS = `[server]\napi_keys = ["sk-root"]\n\n[keys.alice]\nkey = "sk-alice"\nmodels = ["pub-*"]\n\n`;
const chat = (model: string, extra: object = {}) => ({
  model,
  messages: [{ role: "user", content: "hi" }],
  ...extra,
});

/** The requests that name a model, in each API, for `model`. */
const NAMING: [string, string, (model: string) => unknown, Record<string, string>?][] = [
  ["POST", "/v1/chat/completions", (m) => chat(m)],
  ["POST", "/v1/chat/completions", (m) => chat(m, { stream: true })],
  ["POST", "/v1/completions", (m) => ({ model: m, prompt: "hi" })],
  ["POST", "/v1/embeddings", (m) => ({ model: m, input: "hi" })],
  [
    "POST",
    "/v1/messages",
    (m) => ({ model: m, max_tokens: 9, messages: [{ role: "user", content: "hi" }] }),
  ],
  [
    "POST",
    "/v1/messages/count_tokens",
    (m) => ({ model: m, messages: [{ role: "user", content: "hi" }] }),
  ],
  ["POST", "/v1/responses", (m) => ({ model: m, input: "hi" })],
  [
    "POST",
    "/api/chat",
    (m) => ({ model: m, messages: [{ role: "user", content: "hi" }], stream: false }),
  ],
  ["POST", "/api/generate", (m) => ({ model: m, prompt: "hi", stream: false })],
  ["POST", "/api/embed", (m) => ({ model: m, input: "hi" })],
  ["POST", "/api/show", (m) => ({ model: m })],
  ["GET", "/v1/models/", () => undefined],
  ["GET", "/v1/models/", () => undefined, { "anthropic-version": "2023-06-01" }],
  ["POST", "/api/models//lease", () => undefined],
];

function pathFor(path: string, model: string): string {
  if (path === "/v1/models/") return `/v1/models/${encodeURIComponent(model)}`;
  if (path === "/api/models//lease") return `/api/models/${encodeURIComponent(model)}/lease`;
  return path;
}

async function seen(res: Response, name: string) {
  const text = (await res.text()).replaceAll(name, "NAME").replace(/"request_id":"[^"]+"/, "");
  const headers = [...res.headers].filter(([h]) => !["request-id", "date"].includes(h));
  return { status: res.status, text, headers };
}

describe("out of scope", () => {
  test("is answered exactly as a name that names nothing, on every API", async () => {
    const q = keyedQm(KEYS + MODELS);
    for (const [method, path, body, headers] of NAMING) {
      for (const [hidden, unknown] of [
        ["hidden", "nosuch"],
        ["gpt-hidden", "gpt-nosuch"],
        ["hidden:latest", "nosuch:latest"],
        ["hidden?ctx=8192", "nosuch?ctx=8192"],
      ] as const) {
        const a = await seen(
          await q.send("sk-alice", method, pathFor(path, hidden), body(hidden), headers),
          hidden,
        );
        const b = await seen(
          await q.send("sk-alice", method, pathFor(path, unknown), body(unknown), headers),
          unknown,
        );
        expect({ method, path, hidden, ...a }).toEqual({ method, path, hidden, ...b });
        expect({ method, path, hidden, status: a.status }).toEqual({
          method,
          path,
          hidden,
          status: 404,
        });
      }
    }
    // No variant was minted, no model asked, nothing loaded for it.
    expect(Object.keys(q.rt.config.models).sort()).toEqual(["hidden", "pub-a"]);
    expect(q.rt.modelState("hidden")).toBe("stopped");
    expect(q.up.sent).toEqual([]);
  });

  test("a model in scope is served, under its id or an alias; the admin sees all", async () => {
    const q = keyedQm(KEYS + MODELS);
    const mine = await q.send("sk-alice", "POST", "/v1/chat/completions", chat("gpt-pub"));
    expect(mine.status).toBe(200);
    expect(mine.headers.get("x-qm-model")).toBe("pub-a");
    expect((await q.send("sk-root", "POST", "/v1/chat/completions", chat("hidden"))).status).toBe(
      200,
    );
    const records = (await bodyOf(await q.send("sk-root", "GET", "/api/requests"))).requests;
    expect(records.map((r: { key: string; model: string }) => [r.key, r.model])).toEqual([
      ["admin", "hidden"],
      ["alice", "pub-a"],
    ]);
  });

  test("x-api-key works as Authorization does; a wrong key is 401", async () => {
    const q = keyedQm(KEYS + MODELS);
    const res = await q.send(null, "GET", "/v1/models", undefined, { "x-api-key": "sk-alice" });
    expect((await bodyOf(res)).data.map((m: { id: string }) => m.id)).toEqual(["pub-a"]);
    expect((await q.send("sk-alic", "GET", "/v1/models")).status).toBe(401);
    expect((await q.send(null, "GET", "/v1/models")).status).toBe(401);
  });
});

describe("admin routes", () => {
  const ADMIN: [string, string][] = [
    ["POST", "/api/models/pub-a/load"],
    ["POST", "/api/models/hidden/load"],
    ["POST", "/api/models/nosuch/load"],
    ["POST", "/api/models/pub-a/unload"],
    ["POST", "/api/models/unload"],
    ["POST", "/api/models/unload/"],
    ["POST", "/api/config/reload"],
    ["GET", "/api/models/pub-a/logs"],
    ["GET", "/api/models/pub-a/logs?follow=1"],
    ["GET", "/logs"],
    ["GET", "/logs/stream"],
    ["GET", "/logs/stream/upstream"],
    ["GET", "/unload"],
    ["GET", "/upstream/pub-a/slots"],
    ["POST", "/upstream/pub-a/v1/chat/completions"],
    ["GET", "/metrics"],
  ];

  test("a key that is no admin gets 403 forbidden on each, whatever the model", async () => {
    const q = keyedQm(KEYS + MODELS);
    for (const [method, path] of ADMIN) {
      const res = await q.send("sk-alice", method, path);
      const body = await bodyOf(res);
      expect({ method, path, status: res.status, code: body.error?.code }).toEqual({
        method,
        path,
        status: 403,
        code: "forbidden",
      });
      expect(res.headers.get("x-should-retry")).toBe("false");
    }
    expect(q.rt.modelState("pub-a")).toBe("stopped");
  });

  test("an admin key may use them", async () => {
    const q = keyedQm(KEYS + MODELS);
    expect((await q.send("sk-root", "POST", "/api/models/pub-a/load")).status).toBe(200);
    expect((await q.send("sk-root", "POST", "/api/models/pub-a/unload")).status).toBe(200);
    expect((await q.send("sk-root", "GET", "/api/models/pub-a/logs")).status).toBe(200);
  });

  test("leases: a key leases its own models, and only it (or an admin) renews or releases", async () => {
    const q = keyedQm(`${KEYS}[keys.bob]\nkey = "sk-bob"\nmodels = ["pub-*"]\n\n${MODELS}`);
    const taken = await bodyOf(await q.send("sk-alice", "POST", "/api/models/pub-a/lease"));
    const path = `/api/models/pub-a/lease/${taken.lease}`;
    const bob = await q.send("sk-bob", "DELETE", path);
    expect(bob.status).toBe(403);
    expect((await bodyOf(bob)).error.code).toBe("forbidden");
    expect((await q.send("sk-bob", "POST", path, { ttl_s: 5 })).status).toBe(403);
    expect((await q.send("sk-alice", "POST", path, { ttl_s: 5 })).status).toBe(200);
    expect((await q.send("sk-root", "DELETE", path)).status).toBe(200);
  });
});

describe("limits", () => {
  test("rpm: past it 429 with Retry-After, in each API's envelope", async () => {
    const q = keyedQm(`[keys.ci]\nkey = "sk-ci"\nrpm = 2\n\n${MODELS}`);
    expect((await q.send("sk-ci", "POST", "/v1/chat/completions", chat("pub-a"))).status).toBe(200);
    expect((await q.send("sk-ci", "POST", "/v1/chat/completions", chat("pub-a"))).status).toBe(200);
    const openai = await q.send("sk-ci", "POST", "/v1/chat/completions", chat("pub-a"));
    expect(openai.status).toBe(429);
    const retry = Number(openai.headers.get("retry-after"));
    expect(retry >= 1 && retry <= 60).toBe(true);
    expect(await bodyOf(openai)).toEqual({
      error: {
        message: 'key "ci" sent 2 requests in the last minute, its limit (rpm)',
        type: "rate_limit_error",
        param: null,
        code: "rate_limited",
      },
    });
    const anthropic = await q.send("sk-ci", "POST", "/v1/messages", {
      model: "pub-a",
      max_tokens: 5,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(anthropic.status).toBe(429);
    expect(anthropic.headers.get("retry-after")).not.toBeNull();
    expect((await bodyOf(anthropic)).error.type).toBe("rate_limit_error");
    const ollama = await q.send("sk-ci", "POST", "/api/chat", {
      model: "pub-a",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(ollama.status).toBe(429);
    expect(ollama.headers.get("retry-after")).not.toBeNull();
    expect((await bodyOf(ollama)).error).toContain("rpm");
    const responses = await q.send("sk-ci", "POST", "/v1/responses", {
      model: "pub-a",
      input: "hi",
    });
    expect(responses.status).toBe(429);
  });

  test("tokens_per_min: once the answers' tokens reach it, 429 until they are a minute old", async () => {
    const q = keyedQm(
      `[keys.ci]\nkey = "sk-ci"\ntokens_per_min = 30\n\n[keys.other]\nkey = "sk-o"\n\n${MODELS}`,
    );
    // Each answer states 11 + 7 tokens: two reach the limit.
    for (let i = 0; i < 2; i++) {
      const res = await q.send(
        "sk-ci",
        "POST",
        "/v1/chat/completions",
        chat("pub-a", { stream: i === 1 }),
      );
      expect(res.status).toBe(200);
      await res.text(); // the answer read to its end: its usage is counted
    }
    const refused = await q.send("sk-ci", "POST", "/v1/chat/completions", chat("pub-a"));
    expect(refused.status).toBe(429);
    expect((await bodyOf(refused)).error.message).toBe(
      'key "ci" used 36 tokens in the last minute; its limit is 30 (tokens_per_min)',
    );
    // Another key is not held to it.
    expect((await q.send("sk-o", "POST", "/v1/chat/completions", chat("pub-a"))).status).toBe(200);
  });
});

describe("a reload", () => {
  test("applies to the next request: a removed key is 401, a new one and a new scope apply", async () => {
    const q = keyedQm(KEYS + MODELS);
    expect((await q.send("sk-alice", "GET", "/v1/models")).status).toBe(200);
    q.write(
      `[server]\napi_keys = ["sk-root"]\n\n[keys.carol]\nkey = "sk-carol"\nmodels = ["hidden"]\n\n${MODELS}`,
    );
    expect((await bodyOf(await q.send("sk-root", "POST", "/api/config/reload"))).ok).toBe(true);
    expect((await q.send("sk-alice", "GET", "/v1/models")).status).toBe(401);
    const carol = await bodyOf(await q.send("sk-carol", "GET", "/v1/models"));
    expect(carol.data.map((m: { id: string }) => m.id)).toEqual(["hidden"]);
  });
});

describe("no key configured", () => {
  test("every request is anonymous, with every right", async () => {
    const q = keyedQm(MODELS);
    expect((await q.send(null, "POST", "/v1/chat/completions", chat("hidden"))).status).toBe(200);
    expect((await q.send(null, "POST", "/api/models/pub-a/load")).status).toBe(200);
    const records = (await bodyOf(await q.send(null, "GET", "/api/requests"))).requests;
    expect(records.map((r: { key: string }) => r.key)).toEqual(["anonymous", "anonymous"]);
  });
});
