/**
 * Bounds through the compiled binary: timer-sized request headers, the queue bound, and an
 * unload that would otherwise wait out a lease.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, postJson, serve, status, until } from "../support/e2e.ts";
import { QM, type QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

let qm: QmServer;

beforeAll(async () => {
  qm = await serve(`
[scheduler]
max_queue = 2

[groups.solo]
members = ["slow", "emb", "other", "vectors", "refuses"]
swap = false
exclusive = false

[models.slow]
cmd = "\${demo} --tokens 400 --token-ms 10"
concurrency_limit = 1

[models.emb]
cmd = "\${demo}"

[models.other]
cmd = "\${demo}"

[models.vectors]
cmd = "\${demo} --load-delay-ms 300"

[models.refuses]
cmd = "\${demo} --fail-status 503"
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

const post = (path: string, body?: unknown) => postJson(qm.url, path, body);

describe("request headers a timer cannot hold", () => {
  test("X-QM-Hold-Ms and X-QM-Patience-Ms past 2^31-1 ms are a 400 naming the header", async () => {
    for (const header of ["x-qm-hold-ms", "x-qm-patience-ms"]) {
      const res = await chat(qm.url, "emb", {}, { [header]: "99999999999" });
      expect(res.status).toBe(400);
      expect(res.headers.get("x-should-retry")).toBe("false");
      const body = (await res.json()) as { error: { message: string } };
      expect(body.error.message).toContain(header);
    }
    const ok = await chat(qm.url, "emb", {}, { "x-qm-hold-ms": "2147483647" });
    expect(ok.status).toBe(200);
  });
});

describe("scheduler.max_queue", () => {
  test("past the bound: 503 with Retry-After in the envelope; status shows the depth", async () => {
    const busy = chat(qm.url, "slow");
    await until(
      () => status(qm.url),
      (s) => s.models.find((m) => m.id === "slow")?.inflight === 1,
    );
    const waiting = [chat(qm.url, "slow"), chat(qm.url, "slow")];
    await until(
      () => status(qm.url),
      (s) => s.queue.depth === 2,
    );
    const over = await chat(qm.url, "slow");
    expect(over.status).toBe(503);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    const body = (await over.json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe("queue_full");
    expect(body.error.message).toContain("scheduler.max_queue");
    // A request that is served at once is not refused.
    expect((await chat(qm.url, "emb")).status).toBe(200);
    for (const r of [busy, ...waiting]) expect((await r).status).toBe(200);
  });
});

describe("unload while leased", () => {
  test("409 naming the lease; the model keeps serving; ?force=true revokes and unloads", async () => {
    const leased = await post("/api/models/other/lease");
    const { lease } = (await leased.json()) as { lease: string };
    const refused = await post("/api/models/other/unload");
    expect(refused.status).toBe(409);
    const body = (await refused.json()) as { error: { message: string } };
    expect(body.error.message).toContain(lease);
    expect(body.error.message).toContain("force=true");
    // Nothing is pending: a request arriving now is served at once.
    const served = await chat(qm.url, "other");
    expect(served.status).toBe(200);
    expect((await post("/api/models/unload")).status).toBe(409);

    const forced = await post("/api/models/other/unload?force=true");
    expect(forced.status).toBe(200);
    await until(
      () => status(qm.url),
      (s) => s.models.find((m) => m.id === "other")?.state === "stopped",
    );
    const renew = await post(`/api/models/other/lease/${lease}`);
    expect(renew.status).toBe(404);
    expect((await chat(qm.url, "other")).status).toBe(200);
  });
});

describe("stream: true where answers are not streams", () => {
  test("embeddings for a cold model answer plain JSON, never an event stream", async () => {
    const res = await post("/v1/embeddings", { model: "vectors", input: "hi", stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = (await res.json()) as { object: string; data: unknown[] };
    expect(body.object).toBe("list");
    expect(body.data.length).toBe(1);
  });
});

describe("durations in the config", () => {
  test("qm config check refuses one a timer cannot hold, at its line and column", () => {
    const path = join(mkdtempSync(join(tmpdir(), "qm-limits-")), "quartermaster.toml");
    writeFileSync(path, `[models.m]\ncmd = "x"\nttl_s = 2592000\n`);
    const run = Bun.spawnSync([QM, "config", "check", "-c", path]);
    expect(run.exitCode).toBe(1);
    expect(run.stderr.toString() + run.stdout.toString()).toContain(
      ":3:1: models.m.ttl_s: must be at most 2147483, got 2592000",
    );
  });
});

describe("a 503 from a model that is up", () => {
  test("is named as the model server's own, not as qm still loading it", async () => {
    const res = await post("/v1/messages", {
      model: "refuses",
      max_tokens: 8,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(529);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe("overloaded_error");
    expect(body.error.message).toContain("answered 503");
    expect(body.error.message).not.toContain("loading");
  });
});
