/**
 * `GET /ready` through the compiled binary, as a kubelet probe or a load balancer's health
 * check sees it: open without the key on a keyed qm, on exactly that path, and no longer 200
 * once SIGTERM began the shutdown.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";
import { rawGet, rawTo } from "../support/raw-http.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

setDefaultTimeout(20_000);

const KEYED = `
[server]
api_keys = ["k"]
allowed_hosts = ["qm.internal"]

[models.m]
cmd = "\${demo} --token-ms 50 --tokens 40"
`;

describe("a keyed qm", () => {
  let qm: QmServer;
  beforeAll(async () => {
    qm = await serve(KEYED);
  });
  afterAll(async () => {
    expect(await qm.stop()).toBe(0);
  });

  test("answers /ready without a key, not to be cached", async () => {
    const res = await rawTo(qm.url, rawGet("/ready", { Host: "qm.internal:8080" }));
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(JSON.parse(res.body)).toEqual({ ready: true });
  });

  test("no request-target that starts at /ready reaches a keyed route", async () => {
    const answers: string[] = [];
    for (const target of [
      "/ready#/api/status",
      "/ready/../api/status",
      "/ready/%2e%2e/api/status",
      "/ready/..%2fapi/status",
      "/ready?#/api/status",
      "/ready/",
    ]) {
      const res = await rawTo(qm.url, rawGet(target, { Host: "qm.internal" }));
      if (res.status !== 400 && res.status !== 401 && res.status !== 404) {
        answers.push(`${target} → ${res.status} ${res.body.slice(0, 80)}`);
      }
    }
    expect(answers).toEqual([]);
  });

  test("a Host outside allowed_hosts is refused there too", async () => {
    const res = await rawTo(qm.url, rawGet("/ready", { Host: "evil.example" }));
    expect(res.status).toBe(403);
  });
});

test("once SIGTERM begins the shutdown, /ready is no longer 200", async () => {
  const qm = await serve(KEYED);
  // A stream in flight keeps qm in its shutdown grace while /ready is asked.
  const res = await chat(qm.url, "m", { stream: true }, { authorization: "Bearer k" });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("data:")) text += decoder.decode((await reader.read()).value);
  const ready = () =>
    fetch(`${qm.url}/ready`).then(
      async (r) => ({ status: r.status, body: (await r.json()) as unknown }),
      () => "refused" as const,
    );
  expect(await ready()).toEqual({ status: 200, body: { ready: true } });
  qm.proc.kill("SIGTERM");
  const after = await until(ready, (r) => r === "refused" || r.status !== 200);
  // A connection kept alive is answered; a new one finds the listener closed.
  if (after !== "refused") {
    expect(after).toEqual({ status: 503, body: { ready: false, reason: "qm is shutting down" } });
  }
  await reader.cancel();
  expect(await qm.proc.exited).toBe(0);
});
