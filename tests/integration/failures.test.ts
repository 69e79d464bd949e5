import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, status, until } from "../support/e2e.ts";
import { freePort } from "../support/net.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: loads, stops and TTLs take real time.
setDefaultTimeout(20_000);

let qm: QmServer;

beforeAll(async () => {
  qm = await serve(`
[groups.solo]
members = ["broken", "midway", "steady", "slowpoke", "refuser"]
swap = false
exclusive = false

[models.broken]
cmd = "\${demo} --crash-at-start"

[models.midway]
cmd = "\${demo} --crash-after-tokens 3 --token-ms 5"

[models.steady]
cmd = "\${demo}"

[models.slowpoke]
cmd = "\${demo} --hang-health"

# Runs, but nothing listens where qm sends its requests.
[models.refuser]
cmd = "sleep 3600"
proxy = "http://127.0.0.1:${freePort()}"
check_endpoint = "none"
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

function errorOf(body: unknown): { message: string; code: string; type: string } {
  return (body as { error: { message: string; code: string; type: string } }).error;
}

describe("upstream failures", () => {
  test("a model that crashes at start fails fast with 502 naming it and a one-line cause", async () => {
    const t0 = Date.now();
    const res = await chat(qm.url, "broken");
    expect(res.status).toBe(502);
    const err = errorOf(await res.json());
    expect(err.code).toBe("upstream_start_failed");
    expect(err.message).toContain("broken");
    expect(err.message).toContain("simulated by --crash-at-start");
    // One line of cause; the command and the output stay in qm's log and behind the key.
    expect(err.message).not.toContain("command:");
    expect(err.message).not.toContain("dist/qm");
    expect(err.message).toContain("/api/models/broken/logs");
    await qm.waitLog("command:");
    expect(Date.now() - t0).toBeLessThan(5000);
    expect((await status(qm.url)).models.find((m) => m.id === "broken")?.state).toBe("failed");
  });

  test("a streaming request to a crashing model gets an error event after its wait status", async () => {
    const res = await chat(qm.url, "broken", { stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.startsWith(": qm-status: loading")).toBe(true);
    const data = text.split("\n").filter((l) => l.startsWith("data: "));
    expect(data).toHaveLength(1);
    expect(errorOf(JSON.parse(data[0]!.slice(6))).message).toContain(
      "simulated by --crash-at-start",
    );
  });

  test("a crash mid-stream ends the stream with an error event naming the model; the next request restarts it", async () => {
    const res = await chat(qm.url, "midway", { stream: true });
    const text = await res.text();
    const data = text.split("\n").filter((l) => l.startsWith("data: "));
    const last = JSON.parse(data.at(-1)!.slice(6));
    // The model and a plain cause: no runtime internals (the stderr tail is for the logs).
    expect(errorOf(last).message).toMatch(/^model "midway" failed mid-answer: [a-z ]+$/);
    expect(text).not.toContain("[DONE]");
    await until(
      () => status(qm.url),
      (s) => s.models.find((m) => m.id === "midway")?.state === "failed",
    );
    const again = await chat(qm.url, "midway", { stream: true });
    expect(again.status).toBe(200);
    await again.text();
    await qm.waitLog(/model "midway" exited unexpectedly/);
  });

  test("an upstream killed while ready is noticed at once and started again by the next request", async () => {
    const first = await chat(qm.url, "steady");
    await first.json();
    const pid = (await status(qm.url)).models.find((m) => m.id === "steady")!.pid!;
    process.kill(pid, "SIGKILL");
    const s = await until(
      () => status(qm.url),
      (v) => v.models.find((m) => m.id === "steady")?.state === "failed",
    );
    expect(s.models.find((m) => m.id === "steady")?.pid).toBeNull();
    const res = await chat(qm.url, "steady");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-model-loaded")).toBe("false");
    await res.json();
  });

  test("an upstream nobody listens for: 502 with one plain cause; the details are in qm's log", async () => {
    const res = await chat(qm.url, "refuser");
    expect(res.status).toBe(502);
    const err = errorOf(await res.json());
    expect(err.code).toBe("upstream_failed");
    expect(err.message).toBe('model "refuser" failed to answer: connection refused');
    await qm.waitLog(/model "refuser": upstream call failed: .*(ECONNREFUSED|refused)/i);
  });

  test("a client that leaves while its model loads leaves no trace; the load is not lost", async () => {
    const ctrl = new AbortController();
    const pending = fetch(`${qm.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "slowpoke", messages: [] }),
      signal: ctrl.signal,
    }).catch(() => null);
    await until(
      () => status(qm.url),
      (s) => s.models.find((m) => m.id === "slowpoke")?.state === "starting",
    );
    ctrl.abort();
    await pending;
    const s = await until(
      () => status(qm.url),
      (v) => v.models.find((m) => m.id === "slowpoke")?.queued === 0,
    );
    expect(s.models.every((m) => m.inflight === 0)).toBe(true);
    // Other models keep working meanwhile.
    const res = await chat(qm.url, "steady");
    expect(res.status).toBe(200);
    await res.json();
    const unload = await fetch(`${qm.url}/api/models/slowpoke/unload`, { method: "POST" });
    expect(unload.status).toBe(200);
    await until(
      () => status(qm.url),
      (v) => v.models.find((m) => m.id === "slowpoke")?.state === "stopped",
    );
  });
});
