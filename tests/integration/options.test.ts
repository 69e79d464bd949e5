import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, type status, until, writeConfig } from "../support/e2e.ts";
import { alive, type QmServer, startQm } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: loads, stops and TTLs take real time.
setDefaultTimeout(20_000);

let qm: QmServer;
const auth = { authorization: "Bearer k1" };

beforeAll(async () => {
  const path = writeConfig(`
[models.short]
cmd = "\${demo}"
ttl_s = 1
concurrency_limit = 1
`);
  // Options that need their own server: keys, a tiny body limit.
  qm = await startQm(path, {
    QM_SERVER__API_KEYS: "k1,k2",
    QM_SERVER__MAX_BODY_MB: "0.001",
  });
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

describe("api keys", () => {
  test("no key → 401 in the OpenAI envelope; /health stays open", async () => {
    const res = await chat(qm.url, "short");
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    expect((await fetch(`${qm.url}/health`)).status).toBe(200);
    expect((await fetch(`${qm.url}/api/status`)).status).toBe(401);
  });

  test("a wrong key → 401; Bearer and x-api-key both work", async () => {
    expect((await chat(qm.url, "short", {}, { authorization: "Bearer nope" })).status).toBe(401);
    const viaHeader = await fetch(`${qm.url}/api/status`, { headers: { "x-api-key": "k2" } });
    expect(viaHeader.status).toBe(200);
    await viaHeader.json();
  });
});

describe("body limit", () => {
  test("a body over server.max_body_mb → 413 naming the limit; chunked bodies too", async () => {
    const big = JSON.stringify({ model: "short", prompt: "x".repeat(5000) });
    const res = await chat(qm.url, "short", { prompt: "x".repeat(5000) }, auth);
    expect(res.status).toBe(413);
    const err = ((await res.json()) as { error: { message: string; code: string } }).error;
    expect(err.code).toBe("payload_too_large");
    expect(err.message).toContain("max_body_mb");
    const chunked = await fetch(`${qm.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth },
      body: new Blob([big]).stream(),
    });
    expect(chunked.status).toBe(413);
  });
});

describe("ttl and concurrency", () => {
  test("concurrency_limit = 1 serves parallel requests one after another, all succeeding", async () => {
    const results = await Promise.all(
      Array.from({ length: 4 }, () => chat(qm.url, "short", {}, auth).then((r) => r.status)),
    );
    expect(results).toEqual([200, 200, 200, 200]);
  });

  test("an idle model is unloaded after ttl_s", async () => {
    const withKey = () =>
      fetch(`${qm.url}/api/status`, { headers: auth }).then(
        (r) => r.json() as ReturnType<typeof status>,
      );
    const before = await withKey();
    const pid = before.models[0]!.pid;
    expect(before.models[0]!.state).toBe("ready");
    await until(withKey, (s) => s.models[0]!.state === "stopped", 5000);
    expect(alive(pid!)).toBe(false);
  });
});
