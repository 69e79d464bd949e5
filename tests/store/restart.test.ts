/**
 * What outlasts a restart of qm: stored Responses (still their owner's), the activity records
 * (ids going on; captures only with `capture_persist`) and the usage per key × model × hour.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../src/shared/log.ts";
import { StateDb } from "../../src/store/database.ts";
import { keyedQm, modelsToml } from "../api/edge/keyed.ts";
import { bodyOf } from "../support/in-process.ts";

const dir = mkdtempSync(join(tmpdir(), "qm-restart-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEYS = `[server]\napi_keys = ["sk-root"]\n[keys.alice]\nkey = "sk-alice"\n[keys.bob]\nkey = "sk-bob"\n`;
const MODELS = modelsToml({ m: "" });

function open(file: string): StateDb {
  const r = StateDb.open(file, {
    bounds: { maxAgeMs: 24 * 3600 * 1000, maxBytes: 1 << 30 },
    log: createLogger("error", () => {}),
  });
  if (!r.ok) throw new Error(r.reason);
  return r.db;
}

describe("a restart", () => {
  test("keeps the Responses chain, the records and the usage", async () => {
    const file = join(dir, "a.db");
    const config = `${KEYS}[activity]\ncapture = true\ncapture_persist = true\n${MODELS}`;
    let db = open(file);
    let q = keyedQm(config, { db });
    const first = await bodyOf(
      await q.send("sk-alice", "POST", "/v1/responses", {
        model: "m",
        input: "capital of France?",
      }),
    );
    await (
      await q.send("sk-bob", "POST", "/v1/chat/completions", {
        model: "m",
        messages: [{ role: "user", content: "bob's" }],
      })
    ).text();
    const before = (await bodyOf(await q.send("sk-root", "GET", "/api/requests"))).requests;
    expect(before.map((r: { id: number; key: string }) => [r.id, r.key])).toEqual([
      [2, "bob"],
      [1, "alice"],
    ]);
    // Nothing is written until the queue's second (or the close at shutdown).
    expect(db.counts()).toEqual({ responses: 0, requests: 0, usage: 0 });
    db.close();

    db = open(file);
    q = keyedQm(config, { db });
    // The next turn of alice's chain finds the first, in the database.
    const second = await q.send("sk-alice", "POST", "/v1/responses", {
      model: "m",
      input: "and its population?",
      previous_response_id: first.id,
    });
    expect(second.status).toBe(200);
    const sent = JSON.parse(new TextDecoder().decode(q.up.last("/v1/chat/completions").body));
    expect(sent.messages.map((m: { content: string }) => m.content)).toEqual([
      "capital of France?",
      'echo: "capital of France?"',
      "and its population?",
    ]);
    // Bob's key does not find it, as an id never made; the admin does.
    const bobs = await q.send("sk-bob", "GET", `/v1/responses/${first.id}`);
    const none = await q.send("sk-bob", "GET", "/v1/responses/resp_0000");
    expect(bobs.status).toBe(404);
    expect((await bodyOf(bobs)).error.message.replace(first.id, "ID")).toBe(
      (await bodyOf(none)).error.message.replace("resp_0000", "ID"),
    );
    expect((await q.send("sk-root", "GET", `/v1/responses/${first.id}`)).status).toBe(200);
    // Records: the old ones back, ids going on, each key's own; a capture read back by id.
    const after = (await bodyOf(await q.send("sk-root", "GET", "/api/requests"))).requests;
    expect(after.map((r: { id: number; key: string }) => [r.id, r.key])).toEqual([
      [3, "alice"],
      [2, "bob"],
      [1, "alice"],
    ]);
    const old = await bodyOf(await q.send("sk-alice", "GET", "/api/requests/1"));
    expect(old.key).toBe("alice");
    expect(old.capture.request.body.text).toContain("capital of France?");
    expect(old.capture.request.headers.authorization).toBe("[redacted]");
    expect((await q.send("sk-alice", "GET", "/api/requests/2")).status).toBe(404);
    // Usage adds up across the restart (each run found the model cold once: a swap each).
    const usage = await bodyOf(await q.send("sk-root", "GET", "/api/usage"));
    expect(usage.totals).toEqual({
      alice: {
        requests: 2,
        prompt_tokens: 22,
        completion_tokens: 14,
        cached_tokens: 0,
        wait_ms: expect.any(Number),
        swaps: 2,
      },
      bob: {
        requests: 1,
        prompt_tokens: 11,
        completion_tokens: 7,
        cached_tokens: 0,
        wait_ms: expect.any(Number),
        swaps: 0,
      },
    });
    db.close();
  });

  test("captures stay in memory unless capture_persist", async () => {
    const file = join(dir, "b.db");
    const config = `${KEYS}[activity]\ncapture = true\n${MODELS}`;
    let db = open(file);
    let q = keyedQm(config, { db });
    await (
      await q.send("sk-alice", "POST", "/v1/chat/completions", {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
      })
    ).text();
    expect(
      (await bodyOf(await q.send("sk-alice", "GET", "/api/requests/1"))).capture,
    ).not.toBeNull();
    db.close();
    db = open(file);
    q = keyedQm(config, { db });
    const back = await bodyOf(await q.send("sk-alice", "GET", "/api/requests/1"));
    expect(back.key).toBe("alice");
    expect(back.capture).toBeNull();
    db.close();
  });

  test("a database given up mid-run leaves qm serving from memory", async () => {
    const db = open(join(dir, "c.db"));
    const q = keyedQm(`${KEYS}${MODELS}`, { db });
    (db as unknown as { db: { close(): void } }).db.close();
    const res = await q.send("sk-alice", "POST", "/v1/responses", { model: "m", input: "hi" });
    expect(res.status).toBe(200);
    const { id } = await bodyOf(res);
    db.flush();
    expect(db.failed).not.toBeNull();
    expect((await q.send("sk-alice", "GET", `/v1/responses/${id}`)).status).toBe(200);
    expect((await q.send("sk-alice", "GET", "/api/requests")).status).toBe(200);
  });
});
