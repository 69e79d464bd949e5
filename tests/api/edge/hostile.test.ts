/**
 * A scoped key, tried as a hostile user would: it walks every route — OpenAI, Anthropic,
 * Responses, Ollama, qm's `/api/*`, the event stream, metrics, the dashboard — with every id
 * it might guess, after another key has used a model it may not see and a model they share. No
 * answer (body or header) may carry a trace of what is outside its scope: the other model's
 * id, alias or command, the other key's prompts and answers, its stored responses, requests,
 * leases or usage. Everything outside alice's scope carries the marker `zq7`.
 */
import { describe, expect, test } from "bun:test";
import { bodyOf } from "../../support/in-process.ts";
import { keyedQm, modelsToml } from "./keyed.ts";

const MARK = /zq7/i;

const CONFIG = `[server]
api_keys = ["sk-root"]
metrics_on_api = true

[activity]
capture = true

[keys.alice]
key = "sk-alice"
models = ["pub-*"]

[keys.bob-zq7]
key = "sk-bob"
models = ["pub-*", "zq7-*"]
max_concurrency = 1

${modelsToml({ "pub-a": 'aliases = ["gpt-pub"]', "zq7-model": 'aliases = ["alias-zq7"]' })}`;

const chat = (model: string, content: string, extra: object = {}) => ({
  model,
  messages: [{ role: "user", content }],
  ...extra,
});

/** Reads an event stream until `done(text)` holds, then lets it go. */
async function readEvents(res: Response, done: (text: string) => boolean): Promise<string> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = "";
  while (!done(text)) {
    const { value, done: end } = await reader.read();
    if (end) break;
    text += dec.decode(value, { stream: true });
  }
  await reader.cancel();
  return text;
}

describe("a scoped key sees nothing outside its scope", () => {
  test("by any route", async () => {
    const q = keyedQm(CONFIG);
    const seen: { route: string; status: number; text: string }[] = [];
    /**
     * Keeps what alice got. `echoed`: what she sent herself (a name in her path or body),
     * which an error may say back to her; it is taken out before looking for the marker, and
     * such a request must then have been refused (it named something outside her scope).
     */
    const look = async (route: string, res: Response, echoed: string[] = []) => {
      let text = `${[...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n")}\n\n${await res.text()}`;
      const hidden = echoed.filter((e) => MARK.test(e));
      for (const e of hidden) {
        for (const form of [e, encodeURIComponent(e), JSON.stringify(e).slice(1, -1)]) {
          text = text.replaceAll(form, "ECHO");
        }
      }
      if (hidden.length > 0) {
        expect({ route, refused: [400, 403, 404].includes(res.status) }).toEqual({
          route,
          refused: true,
        });
      }
      seen.push({ route, status: res.status, text });
      return text;
    };
    const alice = (
      method: string,
      path: string,
      body?: unknown,
      headers?: Record<string, string>,
    ) => q.send("sk-alice", method, path, body, headers);

    // Alice listens to the events from the start (and a second stream resumes from id 0 later).
    const events = await alice("GET", "/api/events");

    // Bob (and the admin) use the hidden model and the shared one, every API, leaving data.
    const bob = (method: string, path: string, body?: unknown) =>
      q.send("sk-bob", method, path, body);
    const bobsWords = "zq7 prompt of bob";
    for (const model of ["zq7-model", "alias-zq7", "pub-a"]) {
      await (await bob("POST", "/v1/chat/completions", chat(model, bobsWords))).text();
      await (
        await bob("POST", "/v1/chat/completions", chat(model, bobsWords, { stream: true }))
      ).text();
      await (
        await bob("POST", "/v1/messages", {
          model,
          max_tokens: 5,
          messages: [{ role: "user", content: bobsWords }],
        })
      ).text();
      await (
        await bob("POST", "/api/chat", {
          model,
          messages: [{ role: "user", content: bobsWords }],
          stream: false,
        })
      ).text();
    }
    const stored = await bodyOf(
      await bob("POST", "/v1/responses", { model: "pub-a", input: bobsWords }),
    );
    const storedHidden = await bodyOf(
      await bob("POST", "/v1/responses", { model: "zq7-model", input: bobsWords }),
    );
    expect(stored.id).toMatch(/^resp_/);
    const lease = await bodyOf(await bob("POST", "/api/models/zq7-model/lease"));
    expect(lease.lease).toBeDefined();
    // Bob's next request waits behind his lease (max_concurrency = 1): status lists it.
    const waiting = new AbortController();
    const bobWaits = q.app.handle(
      new Request("http://localhost/v1/chat/completions", {
        method: "POST",
        headers: { authorization: "Bearer sk-bob", "content-type": "application/json" },
        body: JSON.stringify(chat("zq7-model", bobsWords)),
        signal: waiting.signal,
      }),
    );
    const bobRecords = (await bodyOf(await q.send("sk-root", "GET", "/api/requests?key=bob-zq7")))
      .requests as { id: number }[];
    expect(bobRecords.length).toBeGreaterThan(10);
    const admin = await bodyOf(await q.send("sk-root", "GET", "/api/status"));
    expect(admin.waiting.map((w: { key: string }) => w.key)).toEqual(["bob-zq7"]);

    // Alice's own requests, so that the walk has something of hers to find.
    await (await alice("POST", "/v1/chat/completions", chat("gpt-pub", "alice asks"))).text();
    const mine = await bodyOf(
      await alice("POST", "/v1/responses", { model: "pub-a", input: "alice asks" }),
    );

    // The walk.
    const ids = [...bobRecords.map((r) => String(r.id)), "1", "2", "999"];
    const respIds = [stored.id, storedHidden.id, "resp_0"];
    const names = ["zq7-model", "alias-zq7", "zq7-model:latest", "zq7-model?ctx=8192", "pub-a"];
    const gets = [
      "/v1/models",
      "/models",
      "/api/tags",
      "/api/ps",
      "/api/version",
      "/api/status",
      "/running",
      "/api/requests",
      "/api/requests?key=bob-zq7",
      "/api/requests?model=zq7-model",
      "/api/usage",
      "/api/usage?since=0",
      "/api/usage?key=bob-zq7",
      "/api/history",
      "/api/history?minutes=30",
      "/metrics",
      "/logs",
      "/logs/stream",
      "/unload",
      "/health",
      "/ready",
      "/",
      "/ui/",
      "/ui/app.js",
      ...ids.map((id) => `/api/requests/${id}`),
      ...respIds.flatMap((id) => [`/v1/responses/${id}`, `/v1/responses/${id}/input_items`]),
      ...names.flatMap((n) => [
        `/v1/models/${encodeURIComponent(n)}`,
        `/api/models/${encodeURIComponent(n)}/logs`,
        `/upstream/${encodeURIComponent(n)}/slots`,
      ]),
    ];
    // A name in the path (a filter in the query is no echo: it finds nothing of hers).
    const echoedIn = (path: string) =>
      names.filter((n) => path.split("?")[0]!.includes(encodeURIComponent(n)));
    for (const path of gets) {
      await look(`GET ${path}`, await alice("GET", path), echoedIn(path));
      await look(
        `GET ${path} (anthropic)`,
        await alice("GET", path, undefined, { "anthropic-version": "2023-06-01" }),
        echoedIn(path),
      );
    }
    for (const n of names) {
      const m = encodeURIComponent(n);
      const bodies: [string, unknown][] = [
        ["/v1/chat/completions", chat(n, "alice")],
        ["/v1/chat/completions", chat(n, "alice", { stream: true })],
        ["/v1/completions", { model: n, prompt: "alice" }],
        ["/v1/embeddings", { model: n, input: "alice" }],
        [
          "/v1/messages",
          { model: n, max_tokens: 5, messages: [{ role: "user", content: "alice" }] },
        ],
        [
          "/v1/messages",
          { model: n, max_tokens: 5, stream: true, messages: [{ role: "user", content: "alice" }] },
        ],
        ["/v1/messages/count_tokens", { model: n, messages: [{ role: "user", content: "alice" }] }],
        ["/v1/responses", { model: n, input: "alice" }],
        ["/api/chat", { model: n, messages: [{ role: "user", content: "alice" }] }],
        ["/api/generate", { model: n, prompt: "alice" }],
        ["/api/embed", { model: n, input: "alice" }],
        ["/api/embeddings", { model: n, prompt: "alice" }],
        ["/api/show", { model: n }],
        [`/api/models/${m}/load`, undefined],
        [`/api/models/${m}/unload`, undefined],
        [`/api/models/${m}/lease`, undefined],
        [`/api/models/${m}/lease/${lease.lease}`, { ttl_s: 5 }],
        [`/upstream/${m}/v1/chat/completions`, chat(n, "alice")],
      ];
      for (const [path, body] of bodies) {
        await look(`POST ${path} (${n})`, await alice("POST", path, body), [n]);
      }
    }
    for (const id of respIds) {
      await look(
        `POST /v1/responses prev ${id}`,
        await alice("POST", "/v1/responses", {
          model: "pub-a",
          input: "x",
          previous_response_id: id,
        }),
      );
      await look(`DELETE /v1/responses/${id}`, await alice("DELETE", `/v1/responses/${id}`));
    }
    await look(
      "DELETE lease",
      await alice("DELETE", `/api/models/zq7-model/lease/${lease.lease}`),
      ["zq7-model"],
    );
    await look(
      "DELETE lease (shared path)",
      await alice("DELETE", `/api/models/pub-a/lease/${lease.lease}`),
    );
    for (const path of ["/api/models/unload", "/api/config/reload"]) {
      await look(`POST ${path}`, await alice("POST", path));
    }

    // The event streams: live from the start, and resumed from the first event kept.
    await (await alice("POST", "/v1/chat/completions", chat("pub-a", "alice last"))).text();
    const live = await readEvents(events, (t) => (t.match(/"key":"alice"/g) ?? []).length >= 4);
    seen.push({ route: "GET /api/events", status: 200, text: live });
    const resumed = await readEvents(
      await alice("GET", "/api/events", undefined, { "last-event-id": "0" }),
      (t) => (t.match(/"key":"alice"/g) ?? []).length >= 4,
    );
    seen.push({ route: "GET /api/events (resumed)", status: 200, text: resumed });

    const leaks = seen.filter((s) => MARK.test(s.text) || s.text.includes("prompt of bob"));
    expect(leaks.map((l) => `${l.route}: ${l.text.match(/.{0,60}zq7.{0,60}/i)?.[0]}`)).toEqual([]);
    expect(seen.length).toBeGreaterThan(200);

    // What is hers, she does see (so the walk could have found something).
    const hers = seen.find((s) => s.route === "GET /api/requests")!.text;
    expect(hers).toContain('"key":"alice"');
    expect(hers).not.toContain('"key":"bob-zq7"');
    expect(seen.find((s) => s.route === "GET /v1/models")!.text).toContain('"id":"pub-a"');
    expect(seen.find((s) => s.route === "GET /api/ps")!.text).toContain("pub-a");
    expect(live).toContain("event: request");
    expect((await alice("GET", `/v1/responses/${mine.id}`)).status).toBe(200);
    const usage = await bodyOf(await alice("GET", "/api/usage"));
    expect(Object.keys(usage.totals)).toEqual(["alice"]);
    // Bob's things were not touched by any of it.
    expect((await bob("GET", `/v1/responses/${stored.id}`)).status).toBe(200);
    expect(q.rt.leases.count("zq7-model")).toBe(1);
    waiting.abort();
    await Promise.resolve(bobWaits).catch(() => {});
  });
});
