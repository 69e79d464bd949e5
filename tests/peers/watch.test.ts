/**
 * The peers' background watch on fake timers and a scripted fetch: a qm peer followed by its
 * events (snapshot, then changes, resumed with Last-Event-ID), its status polled when it has
 * no events, a llama-swap read by polling, a peer down probed back up.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { PeerTable } from "../../src/peers/table.ts";
import { PeerWatch } from "../../src/peers/watch.ts";
import { config } from "../support/config.ts";
import { FakeTimers } from "../support/fake-timers.ts";
import { quietLog } from "../support/in-process.ts";
import { refused } from "./support.ts";

interface Got {
  path: string;
  headers: Headers;
}

/** A watch over one peer, its fetch answered by `answer`; `settle` lets its promises run. */
function watched(toml: string, answer: (got: Got) => Response | Promise<Response>) {
  const timers = new FakeTimers();
  const cfg = config(toml);
  const got: Got[] = [];
  let watch: PeerWatch | null = null;
  const table = new PeerTable(
    cfg.peers,
    () => timers.now(),
    (s) => watch?.changed(s),
  );
  watch = new PeerWatch(table, {
    timers,
    log: quietLog(),
    fetch: async (url, init) => {
      const g = { path: url.replace(/^http:\/\/[^/]+/, ""), headers: new Headers(init.headers) };
      got.push(g);
      return answer(g);
    },
  });
  running.push(watch);
  return { timers, table, watch, got };
}

const running: PeerWatch[] = [];
afterEach(() => {
  for (const w of running.splice(0)) w.stop();
});

/** Turns of the event loop (no time passes) until `done` holds. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setImmediate(r));
  expect(done()).toBe(true);
}

const QM = `
[peers.b]
url = "http://b.test"
kind = "qm"
api_key = "kb"
poll_s = 5
`;

const status = (models: { id: string; state: string; aliases?: string[] }[]) => ({
  version: "x",
  models,
});

function sse(frames: string[], keepOpen = false): Response {
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const f of frames) c.enqueue(enc.encode(f));
      if (!keepOpen) c.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

describe("a qm peer's events", () => {
  test("the snapshot, then model changes; a lost stream resumes with Last-Event-ID", async () => {
    let streams = 0;
    const { timers, table, got, watch } = watched(QM, (g) => {
      if (g.path === "/health") return new Response("ok");
      if (g.path !== "/api/events") return new Response("?", { status: 500 });
      streams++;
      if (streams === 1) {
        return sse([
          `event: status\nid: 7\ndata: ${JSON.stringify(
            status([
              { id: "m2", state: "stopped" },
              { id: "m3", state: "ready", aliases: ["three"] },
            ]),
          )}\n\n`,
          `event: model\nid: 8\ndata: ${JSON.stringify({ type: "model", model: "m2", state: "ready" })}\n\n`,
        ]);
      }
      return sse([], true);
    });
    watch.start();
    await until(() => table.health("b") === "down");
    expect(table.status()[0]?.models).toEqual([
      { id: "m2", state: "ready" },
      { id: "m3", state: "ready" },
    ]);
    // The snapshot's aliases are known (the stream ended, so the peer is down: `lookup`).
    expect(table.lookup("three")?.peer?.remote).toBe("three");
    expect(got[0]?.headers.get("authorization")).toBe("Bearer kb");
    expect(got[0]?.headers.get("last-event-id")).toBeNull();
    timers.advance(1000);
    await until(() => streams === 2 && table.health("b") === "up");
    const resumed = got.filter((g) => g.path === "/api/events")[1];
    expect(resumed?.headers.get("last-event-id")).toBe("8");
  });

  test("no events (404): /api/status is polled every poll_s", async () => {
    let state = "stopped";
    const { timers, table, got, watch } = watched(QM, (g) => {
      if (g.path === "/api/status") return Response.json(status([{ id: "m2", state }]));
      return new Response("not found", { status: 404 });
    });
    watch.start();
    await until(() => table.status()[0]?.models.length === 1);
    expect(table.status()[0]?.models).toEqual([{ id: "m2", state: "offered" }]);
    state = "ready";
    timers.advance(4999);
    expect(got.filter((g) => g.path === "/api/status")).toHaveLength(1);
    timers.advance(1);
    await until(() => table.status()[0]?.models[0]?.state === "ready");
  });

  test("its status' exact aliases route to it; patterns, unlisted models' and odd ones do not", async () => {
    const { table, watch } = watched(QM, (g) => {
      if (g.path !== "/api/status") return new Response("not found", { status: 404 });
      return Response.json({
        version: "x",
        models: [
          { id: "m2", state: "ready", aliases: ["fast", "claude-*", "", 7, "m3", "x".repeat(300)] },
          { id: "m3", state: "stopped", aliases: ["fast", "slow"] },
          { id: "hidden", state: "ready", unlisted: true, aliases: ["secret"] },
          { id: "bare", state: "ready" },
        ],
      });
    });
    watch.start();
    await until(() => table.status()[0]?.models.length === 3);
    // Sent to the peer by the name the client used: the peer resolves its own alias.
    expect(table.resolve("fast")).toMatchObject({ id: "fast", useModelName: "fast" });
    expect(table.resolve("fast")?.peer).toEqual({ peer: "b", apiKey: "kb", remote: "fast" });
    expect(table.resolve("b/slow")).toMatchObject({ id: "b/slow", useModelName: "slow" });
    expect(table.resolve("slow")?.peer?.remote).toBe("slow");
    // `m3` is a model id there: it stays the model, not m2's alias.
    expect(table.resolve("m3")?.peer?.remote).toBe("m3");
    for (const name of ["claude-x", "claude-*", "secret", "x".repeat(300)]) {
      expect(table.resolve(name)).toBeUndefined();
    }
    expect(() => table.resolve("b/secret")).toThrow('peer "b" does not offer model "secret"');
  });

  test("a llama-swap: /running and /v1/models", async () => {
    const { table, watch } = watched(QM, (g) => {
      if (g.path === "/v1/models") return Response.json({ data: [{ id: "a" }, { id: "b" }] });
      if (g.path === "/running")
        return Response.json({ running: [{ model: "b", state: "ready" }] });
      return new Response("not found", { status: 404 });
    });
    watch.start();
    await until(() => table.status()[0]?.models.length === 2);
    expect(table.status()[0]?.models).toEqual([
      { id: "a", state: "offered" },
      { id: "b", state: "ready" },
    ]);
  });
});

describe("probing a peer that is down", () => {
  test("GET /health once its backoff passes; an answer closes the breaker", async () => {
    let healthy = false;
    const { timers, table, got } = watched(
      `[peers.o]\nurl = "http://o.test"\nmodels = ["m"]\n`,
      (g) => {
        if (g.path !== "/health") return new Response("?", { status: 500 });
        if (!healthy) throw refused();
        return new Response("ok");
      },
    );
    table.report("o", { ok: false, error: "refused" });
    expect(table.health("o")).toBe("down");
    timers.advance(999);
    expect(got).toHaveLength(0);
    timers.advance(1);
    await until(() => table.health("o") === "down" && got.length === 1);
    // Failed: the next probe waits the doubled backoff.
    healthy = true;
    timers.advance(1999);
    expect(got).toHaveLength(1);
    timers.advance(1);
    await until(() => table.health("o") === "up");
  });
});
