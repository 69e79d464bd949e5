import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { BUILD_TIMEOUT_MS, needsBinary } from "../support/binary.ts";
import { chat, listenerUrls, serve, status, until } from "../support/e2e.ts";
import type { QmServer } from "../support/qm-process.ts";
import { alive } from "../support/qm-process.ts";

beforeAll(needsBinary, BUILD_TIMEOUT_MS);

// Real processes: loads, stops and TTLs take real time.
setDefaultTimeout(20_000);

// Two listeners, one scheduler: the models swap no matter which port asked.
let qm: QmServer;
let a: string;
let b: string;

beforeAll(async () => {
  qm = await serve(
    `
[models.alpha]
cmd = "\${demo} --load-delay-ms 200 --token-ms 30 --tokens 12"
aliases = ["gpt-4o-mini"]

[models.beta]
cmd = "\${demo} --load-delay-ms 100"
use_model_name = "beta-upstream-name"

[models.hidden]
cmd = "\${demo}"
unlisted = true
`,
    2,
  );
  [a, b] = listenerUrls(qm) as [string, string];
});

afterAll(async () => {
  const pids = (await status(a)).models.map((m) => m.pid).filter((p): p is number => p !== null);
  expect(await qm.stop()).toBe(0);
  for (const pid of pids) expect(alive(pid)).toBe(false);
});

describe("two listeners share one scheduler", () => {
  test("both ports are served and see the same state", async () => {
    expect(a).not.toBe(b);
    const res = await chat(a, "alpha");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-model")).toBe("alpha");
    expect(res.headers.get("x-qm-model-loaded")).toBe("false");
    expect(Number(res.headers.get("x-qm-wait-ms"))).toBeGreaterThanOrEqual(150);
    await res.json();
    const [sa, sb] = await Promise.all([status(a), status(b)]);
    expect(sa.models.find((m) => m.id === "alpha")?.state).toBe("ready");
    expect(sb.models.find((m) => m.id === "alpha")?.state).toBe("ready");
  });

  test("a request on the second port swaps out the model loaded through the first", async () => {
    const res = await chat(b, "beta");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { model: string };
    // The upstream saw its use_model_name ("beta-upstream-name"); the client sees its own.
    expect(body.model).toBe("beta");
    const s = await status(a);
    expect(s.models.find((m) => m.id === "alpha")?.state).toBe("stopped");
    expect(s.models.find((m) => m.id === "beta")?.state).toBe("ready");
  });
});

describe("streaming", () => {
  test("a cold streaming request sees the wait status, then the model's own frames, chunk by chunk", async () => {
    const res = await chat(a, "gpt-4o-mini", { stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    let reads = 0;
    let firstDataAtRead = -1;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      reads++;
      text += decoder.decode(value);
      if (firstDataAtRead < 0 && text.includes("data:")) firstDataAtRead = reads;
    }
    expect(text.startsWith(": qm-status: loading\n\n")).toBe(true);
    const beforeData = text.slice(0, text.indexOf("data:"));
    expect(beforeData.split("\n").every((l) => l === "" || l.startsWith(":"))).toBe(true);
    expect(text).toContain("data: [DONE]");
    // 12 tokens paced 30 ms apart cannot arrive in one read unless something buffered them.
    expect(reads - firstDataAtRead).toBeGreaterThanOrEqual(10);
  });

  test("a warm streaming request has no placeholder and carries X-QM-Wait-Ms", async () => {
    const res = await chat(a, "alpha", { stream: true });
    expect(res.headers.get("x-qm-model-loaded")).toBe("true");
    expect(res.headers.get("x-qm-wait-ms")).not.toBeNull();
    const text = await res.text();
    expect(text.startsWith("data: ")).toBe(true);
  });

  test("a client that leaves mid-stream leaves nothing in flight", async () => {
    const ctrl = new AbortController();
    const res = await chat(a, "alpha", { stream: true }, {});
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    ctrl.abort();
    const s = await until(
      () => status(a),
      (v) => v.models.every((m) => m.inflight === 0),
    );
    expect(s.models.find((m) => m.id === "alpha")?.inflight).toBe(0);
  });
});

describe("models list and routes", () => {
  test("GET /v1/models lists models with status and aliases, hides unlisted ones", async () => {
    const res = await fetch(`${a}/v1/models`);
    const body = (await res.json()) as {
      data: { id: string; aliases: string[]; status: { value: string } }[];
    };
    expect(body.data.map((m) => m.id).sort()).toEqual(["alpha", "beta"]);
    expect(body.data.find((m) => m.id === "alpha")?.aliases).toEqual(["gpt-4o-mini"]);
    expect(body.data.find((m) => m.id === "alpha")?.status.value).toBe("ready");
  });

  test("an unlisted model is still served by name", async () => {
    const res = await chat(a, "hidden");
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });

  test("/upstream/{model}/… reaches the model's own API, hop-by-hop and auth headers stripped", async () => {
    const res = await fetch(`${a}/upstream/alpha/debug/echo?x=1`, {
      method: "POST",
      headers: {
        "content-type": "text/plain",
        connection: "keep-alive, x-drop-me",
        "x-drop-me": "1",
        "x-keep-me": "2",
        authorization: "Bearer secret",
      },
      body: "raw body",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-qm-model")).toBe("alpha");
    const echo = (await res.json()) as {
      method: string;
      path: string;
      headers: Record<string, string>;
      body: string;
    };
    expect(echo.method).toBe("POST");
    expect(echo.path).toBe("/debug/echo");
    expect(echo.body).toBe("raw body");
    expect(echo.headers["x-keep-me"]).toBe("2");
    expect(echo.headers["x-drop-me"]).toBeUndefined();
    expect(echo.headers.authorization).toBeUndefined();
  });

  test("GET /api/models/{id}/logs shows the model's own output", async () => {
    const res = await fetch(`${a}/api/models/alpha/logs`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("listening on http://127.0.0.1:");
    expect((await fetch(`${a}/api/models/nope/logs`)).status).toBe(404);
  });

  test("GET /api/events streams a status snapshot, then each model state change", async () => {
    const ctrl = new AbortController();
    const res = await fetch(`${a}/api/events`, { signal: ctrl.signal });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body!.getReader();
    let text = "";
    const decoder = new TextDecoder();
    text += decoder.decode((await reader.read()).value);
    expect(text).toMatch(/^id: \d+\nevent: status\ndata: \{/);
    await (await chat(a, "beta")).json(); // a swap: alpha/hidden stop, beta starts
    while (!text.includes('"model":"beta","state":"ready"')) {
      text += decoder.decode((await reader.read()).value);
    }
    const events = text
      .split("\n\n")
      .filter((e) => /^id: \d+\nevent: model\n/.test(e))
      .map((e) => JSON.parse(e.slice(e.indexOf("data: ") + 6)) as Record<string, unknown>);
    // beta loaded once already (the swap test above): its start says how long that took.
    const starting = events.find((e) => e.model === "beta" && e.state === "starting");
    expect(starting).toMatchObject({ type: "model", detail: null });
    expect(starting?.expected_load_ms).toBeGreaterThan(0);
    expect(events).toContainEqual({ type: "model", model: "beta", state: "ready", detail: null });
    ctrl.abort();
  });

  test("/running lists the models that are not stopped", async () => {
    const body = (await (await fetch(`${a}/running`)).json()) as {
      running: { model: string; state: string }[];
    };
    const s = await status(a);
    expect(body.running).toEqual(
      s.models.filter((m) => m.state !== "stopped").map((m) => ({ model: m.id, state: m.state })),
    );
    expect(body.running.length).toBeGreaterThan(0);
    expect(body.running.every((r) => r.state !== "stopped")).toBe(true);
  });
});
