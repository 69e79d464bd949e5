import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, postJson, serve, status, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: loads and lease expiry take real time.
setDefaultTimeout(20_000);

let qm: QmServer;

beforeAll(async () => {
  qm = await serve(`
[models.render]
cmd = "\${demo}"

[models.other]
cmd = "\${demo}"
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

const post = (path: string, body?: unknown) => postJson(qm.url, path, body);

describe("leases", () => {
  test("a lease holds a model busy: a swap that would evict it waits until it is released, once", async () => {
    const res = await post("/api/models/render/lease");
    expect(res.status).toBe(200);
    const { lease, model } = (await res.json()) as { lease: string; model: string };
    expect(model).toBe("render");
    let s = await status(qm.url);
    expect(s.models.find((m) => m.id === "render")).toMatchObject({
      state: "ready",
      inflight: 1,
      leases: 1,
    });

    const waiting = chat(qm.url, "other");
    s = await until(
      () => status(qm.url),
      (v) => v.queue.depth === 1,
    );
    expect(s.models.find((m) => m.id === "render")?.state).toBe("ready");

    const del = await fetch(`${qm.url}/api/models/render/lease/${lease}`, { method: "DELETE" });
    expect(del.status).toBe(200);
    expect((await waiting).status).toBe(200);
    const again = await fetch(`${qm.url}/api/models/render/lease/${lease}`, { method: "DELETE" });
    expect(again.status).toBe(404);
    s = await status(qm.url);
    expect(s.models.find((m) => m.id === "render")).toMatchObject({
      state: "stopped",
      inflight: 0,
    });
  });

  test("a lease whose holder disappears expires after its TTL; a renewal extends it", async () => {
    const res = await post("/api/models/render/lease", { ttl_s: 0.4 });
    const { lease } = (await res.json()) as { lease: string };
    const renewed = await post(`/api/models/render/lease/${lease}`, { ttl_s: 0.6 });
    expect(renewed.status).toBe(200);
    expect((await status(qm.url)).models.find((m) => m.id === "render")?.leases).toBe(1);
    await until(
      () => status(qm.url),
      (v) => v.models.find((m) => m.id === "render")?.inflight === 0,
      5000,
    );
    await qm.waitLog(`lease ${lease} on "render" expired`);
  });

  test("bad lease requests get clear errors", async () => {
    expect((await post("/api/models/nope/lease")).status).toBe(404);
    const bad = await post("/api/models/render/lease", { ttl_s: -1 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe("ttl_s");
    const unknown = await fetch(`${qm.url}/api/models/render/lease/not-a-lease`, {
      method: "DELETE",
    });
    expect(unknown.status).toBe(404);
  });
});
