import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, status, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: a stubborn model takes its stop timeout to go.
setDefaultTimeout(20_000);

let qm: QmServer;

beforeAll(async () => {
  qm = await serve(`
[models.stubborn]
cmd = "\${demo} --ignore-sigterm"
stop_timeout_s = 1

[models.next]
cmd = "\${demo}"
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

describe("unloading a model whose swap is still stopping the old one", () => {
  test("it never starts, its waiter hears why, and the old model is gone", async () => {
    await (await chat(qm.url, "stubborn")).json();
    const waiting = chat(qm.url, "next"); // evicting stubborn takes ~1 s (SIGTERM ignored)
    await until(
      () => status(qm.url),
      (s) => s.models.find((m) => m.id === "next")?.state === "starting",
    );
    const unload = await fetch(`${qm.url}/api/models/next/unload`, { method: "POST" });
    expect(unload.status).toBe(200);
    const res = await waiting;
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("model_unloaded");
    const s = await until(
      () => status(qm.url),
      (v) => v.models.every((m) => m.state === "stopped"),
    );
    expect(s.models.map((m) => m.pid)).toEqual([null, null]);
    expect(qm.log()).not.toContain('starting model "next"');
  });
});
