import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, serve, status, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: loads and streams take real time.
setDefaultTimeout(20_000);

let qm: QmServer;

/** An agent offers tools; only then can an answer end in tool calls (and earn a hold). */
const TOOLS = [
  {
    type: "function",
    function: { name: "get_weather", parameters: { type: "object", properties: {} } },
  },
];

beforeAll(async () => {
  qm = await serve(`
[scheduler]
hold_ms = 60000
patience_ms = 300000
hold_on = "tool_calls"
hold_policy = "fixed"

[models.agent]
cmd = "\${demo} --tool-calls --token-ms 5 --tokens 8"

[models.chat]
cmd = "\${demo} --token-ms 40 --tokens 15"

[models.single]
cmd = "\${demo} --token-ms 10 --tokens 10"
concurrency_limit = 1

[groups.side]
members = ["single"]
exclusive = false
`);
});

afterAll(async () => {
  expect(await qm.stop()).toBe(0);
});

async function readAll(res: Response): Promise<string> {
  return new TextDecoder().decode(await res.arrayBuffer());
}

describe("wait status", () => {
  test("a streaming client that must wait sees `: qm-status: waiting 1` before its first data frame", async () => {
    // chat streams for ~600 ms; agent must evict it, so it queues behind it.
    const busy = await chat(qm.url, "chat", { stream: true });
    const reader = busy.body!.getReader();
    let first = "";
    while (!first.includes("data:")) first += new TextDecoder().decode((await reader.read()).value);
    const waiting = chat(qm.url, "agent", { stream: true }, { "x-qm-hold-ms": "0" });
    while (!(await reader.read()).done) {}
    const text = await readAll(await waiting);
    const lines = text.split("\n").filter((l) => l !== "");
    const firstData = lines.findIndex((l) => l.startsWith("data:"));
    expect(lines.slice(0, firstData)).toContain(": qm-status: waiting 1");
    expect(lines.slice(0, firstData)).toContain(": qm-status: loading");
    expect(lines.slice(0, firstData).every((l) => l.startsWith(":"))).toBe(true);
    expect(text).toContain("data: [DONE]");
  });
});

describe("holds", () => {
  test("X-QM-Hold-Ms: 0 is not held, even after a tool-call answer", async () => {
    const res = await chat(qm.url, "agent", { tools: TOOLS }, { "x-qm-hold-ms": "0" });
    expect(
      ((await res.json()) as { choices: { finish_reason: string }[] }).choices[0]!.finish_reason,
    ).toBe("tool_calls");
    const s = await status(qm.url);
    expect(s.models.find((m) => m.id === "agent")).toMatchObject({
      state: "ready",
      held_until_ms: null,
    });
  });

  test("a request without tools earns no hold, even if the model answers with a tool call", async () => {
    await (await chat(qm.url, "agent")).json();
    const s = await status(qm.url);
    expect(s.models.find((m) => m.id === "agent")?.held_until_ms).toBeNull();
  });

  test("a tool-call answer holds its model", async () => {
    const res = await chat(qm.url, "agent", { tools: TOOLS });
    await res.json();
    const held = (await status(qm.url)).models.find((m) => m.id === "agent") as unknown as {
      held_until_ms: number | null;
    };
    expect(held.held_until_ms).toBeGreaterThan(Date.now() + 50_000);
    // A request that honours holds for a model that must evict agent queues behind the hold.
    const ctrl = new AbortController();
    const waiting = fetch(`${qm.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "chat", messages: [] }),
      signal: ctrl.signal,
    }).catch(() => "aborted");
    const s = await until(
      () => status(qm.url),
      (v) => v.queue.depth > 0,
    );
    expect(s.models.find((m) => m.id === "chat")?.queued).toBe(1);
    expect(s.models.find((m) => m.id === "agent")?.state).toBe("ready");
    ctrl.abort();
    expect(await waiting).toBe("aborted");
  });

  test("a waiter with short patience preempts the held model", async () => {
    const t0 = Date.now();
    const res = await chat(qm.url, "chat", {}, { "x-qm-patience-ms": "300" });
    expect(res.status).toBe(200);
    await res.json();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    const s = await status(qm.url);
    expect(s.models.find((m) => m.id === "agent")?.state).toBe("stopped");
  });

  test("a bad X-QM-Hold-Ms is a clear 400", async () => {
    const res = await chat(qm.url, "chat", {}, { "x-qm-hold-ms": "soon" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      "x-qm-hold-ms",
    );
  });
});

describe("concurrency limit", () => {
  test("a concurrency_limit = 1 model serves 5 parallel requests one after another, all succeeding", async () => {
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        chat(qm.url, "single", { stream: true }).then(async (r) => ({
          status: r.status,
          text: await readAll(r),
        })),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    for (const r of results) expect(r.text).toContain("data: [DONE]");
    // 10 tokens × 10 ms each, one at a time: at least ~5 × 100 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
  });
});
