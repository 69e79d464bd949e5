/**
 * Peers that misbehave, as real servers on port 0 (the watch's timers fake): an endless event
 * line, an endless status body, redirects to another host, a model list of huge, invalid and
 * too many ids, a flood of status events, credentials in the peer's URL. qm reads each within
 * its bound and marks the peer down naming the bound, follows no redirect (the other host never
 * hears of it, nor gets the key), keeps the first 1 000 valid models and says so once, applies
 * a flood at most every 100 ms, and never shows the URL's password.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { MAX_PEER_ANSWER, MAX_PEER_MODELS } from "../../src/peers/limits.ts";
import { type PeerStatusJson, PeerTable } from "../../src/peers/table.ts";
import { PeerWatch } from "../../src/peers/watch.ts";
import type { Fetch } from "../../src/shared/fetch.ts";
import { createLogger } from "../../src/shared/log.ts";
import { config } from "../support/config.ts";
import { until } from "../support/e2e.ts";
import { FakeTimers } from "../support/fake-timers.ts";

const servers: Server<undefined>[] = [];
const watches: PeerWatch[] = [];
afterEach(() => {
  for (const w of watches.splice(0)) w.stop();
  for (const s of servers.splice(0)) void s.stop(true);
});

/** A fake peer on port 0. */
function peer(handle: (req: Request) => Response | Promise<Response>): Server<undefined> {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 30, fetch: handle });
  servers.push(s);
  return s;
}

/** A watch over one `kind = "qm"` peer at `url`, with what it logged and published. */
function watch(url: string, extra = "", fetch?: Fetch) {
  const timers = new FakeTimers();
  const cfg = config(
    `[peers.b]\nurl = "${url}"\nkind = "qm"\napi_key = "peer-key"\npoll_s = 5\n${extra}`,
  );
  const warnings: string[] = [];
  const published: PeerStatusJson[] = [];
  let w: PeerWatch | null = null;
  const table = new PeerTable(
    cfg.peers,
    () => timers.now(),
    (s) => {
      published.push(s);
      w?.changed(s);
    },
  );
  const log = createLogger("warn", (line) => warnings.push(line));
  w = new PeerWatch(table, { timers, log, ...(fetch ? { fetch } : {}) });
  watches.push(w);
  w.start();
  const state = () => table.status()[0]!;
  return { timers, table, warnings, published, state };
}

/** A body that never ends: `piece` again and again, counting what was sent, and whether the
 * reader let go of it (`cancelled`: qm stopped reading and closed the connection). */
function endless(
  piece: string,
  sent: { bytes: number; cancelled?: boolean },
): ReadableStream<Uint8Array> {
  const chunk = new TextEncoder().encode(piece.repeat(Math.ceil(65536 / piece.length)));
  return new ReadableStream({
    pull(c) {
      sent.bytes += chunk.length;
      c.enqueue(chunk);
    },
    cancel() {
      sent.cancelled = true;
    },
  });
}

const base = (s: Server<undefined>) => `http://127.0.0.1:${s.port}`;
const notFound = () => new Response("no", { status: 404 });

describe("bounded reads", () => {
  test("an endless event line: marked down, last_error naming the bound; reading stops", async () => {
    const sent: { bytes: number; cancelled?: boolean } = { bytes: 0 };
    const s = peer((req) =>
      new URL(req.url).pathname === "/api/events"
        ? new Response(endless("x", sent), { headers: { "content-type": "text/event-stream" } })
        : notFound(),
    );
    const { state } = watch(base(s));
    const st = await until(
      async () => state(),
      (p) => p.state === "down",
    );
    expect(st.last_error).toBe(
      "its /api/events sent a line over 4 MiB (the bound on a peer's event)",
    );
    const atDown = sent.bytes;
    // The stream was cancelled: the peer was not read on (a little in flight at most).
    await until(
      async () => sent.cancelled === true,
      (cancelled) => cancelled,
    );
    expect(sent.bytes - atDown).toBeLessThan(8 * 2 ** 20);
  });

  test("an endless /api/status body (no events): marked down naming the bound", async () => {
    const sent = { bytes: 0 };
    const s = peer((req) =>
      new URL(req.url).pathname === "/api/status"
        ? new Response(endless('{"models":[', sent), {
            headers: { "content-type": "application/json" },
          })
        : notFound(),
    );
    const { state } = watch(base(s));
    const st = await until(
      async () => state(),
      (p) => p.state === "down",
    );
    expect(st.last_error).toBe(
      "its /api/status answer is over 4 MiB (the bound on a peer's answer)",
    );
    expect(sent.bytes).toBeLessThan(MAX_PEER_ANSWER + 16 * 2 ** 20);
  });
});

describe("redirects", () => {
  test("never followed: the other host hears nothing, the key goes nowhere; the peer is down", async () => {
    const elsewhere: string[] = [];
    const other = peer((req) => {
      elsewhere.push(`${req.url} ${req.headers.get("x-api-key")}`);
      return new Response("stolen");
    });
    const s = peer((req) => Response.redirect(`${base(other)}${new URL(req.url).pathname}`, 307));
    const { state, timers, published } = watch(base(s));
    const st = await until(
      async () => state(),
      (p) => p.state === "down",
    );
    expect(st.last_error).toContain("/api/events answered 307, a redirect to");
    expect(st.last_error).toContain("qm does not follow a peer's redirects");
    // The probe after the backoff is refused the same way.
    timers.advance(1000);
    const errors = async () => published.map((p) => p.last_error ?? "");
    await until(errors, (e) => e.some((line) => line.includes("/health answered 307")));
    expect(elsewhere).toEqual([]);
  });
});

describe("model lists", () => {
  test("100 000 ids, some huge or invalid: the first 1 000 valid ones, said once", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 100_000; i++) {
      const kind = i % 5;
      ids.push(
        kind === 0
          ? `m${i}`
          : kind === 1
            ? `${"x".repeat(300)}${i}` // over 256 characters
            : kind === 2
              ? `nul\u0000${i}`
              : kind === 3
                ? `模型${i}`
                : `../<b>${i}</b>`, // printable: taken, as a name
      );
    }
    // Each poll's list starts five names later, so that the next poll's answer shows in status.
    let polls = 0;
    const body = (from: number) =>
      JSON.stringify({
        models: ids.slice(from, from + 8000).map((id) => ({ id, state: "stopped" })),
      });
    expect(body(0).length).toBeLessThan(MAX_PEER_ANSWER);
    const s = peer((req) =>
      new URL(req.url).pathname === "/api/status"
        ? new Response(body(5 * polls++), { headers: { "content-type": "application/json" } })
        : notFound(),
    );
    const { table, warnings, timers, state } = watch(base(s));
    await until(
      async () => state().models.length,
      (n) => n > 0,
    );
    const listed = state().models.map((m) => m.id);
    expect(listed).toHaveLength(MAX_PEER_MODELS);
    expect(listed.every((id) => id.startsWith("m") || id.startsWith("../<b>"))).toBe(true);
    expect(listed[0]).toBe("m0");
    expect(table.listing()).toHaveLength(MAX_PEER_MODELS);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("peer b: names left out of its model list:");
    expect(warnings[0]).toContain("past the first 1000");
    expect(warnings[0]).toContain("invalid (the first:");
    // The next poll, its answer applied, says nothing new.
    timers.advance(5000);
    await until(
      async () => state().models[0]?.id,
      (first) => first === "m5",
    );
    expect(warnings).toHaveLength(1);
  });

  test("a status too large for the bound is not read at all: down, naming it", async () => {
    const huge = JSON.stringify({
      models: Array.from({ length: 100_000 }, (_, i) => ({
        id: `${"x".repeat(2048)}${i}`,
        state: "stopped",
      })),
    });
    const s = peer((req) =>
      new URL(req.url).pathname === "/api/status" ? new Response(huge) : notFound(),
    );
    const { state } = watch(base(s));
    const st = await until(
      async () => state(),
      (p) => p.state === "down",
    );
    expect(st.last_error).toContain("over 4 MiB");
    expect(st.models).toEqual([]);
  });
});

describe("floods", () => {
  test("thousands of status events in a burst: applied at once, then once per 100 ms", async () => {
    const frame = (n: number) =>
      `event: status\ndata: ${JSON.stringify({ models: [{ id: `m${n}`, state: "ready" }] })}\n\n`;
    const burst = Array.from({ length: 5000 }, (_, i) => frame(i)).join("");
    const s = peer((req) =>
      new URL(req.url).pathname === "/api/events"
        ? new Response(
            new ReadableStream({
              start(c) {
                c.enqueue(new TextEncoder().encode(burst));
                // Kept open: the flood is over, the stream is not.
              },
            }),
            { headers: { "content-type": "text/event-stream" } },
          )
        : notFound(),
    );
    // Counts the bytes of the event stream the watch has read, to know when the burst is in.
    const bytes = new TextEncoder().encode(burst).length;
    let read = 0;
    const counting: Fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (!res.body || !new URL(String(input)).pathname.endsWith("/api/events")) return res;
      const count = new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, c) {
          read += chunk.byteLength;
          c.enqueue(chunk);
        },
      });
      return new Response(res.body.pipeThrough(count), res);
    };
    const { state, published, timers } = watch(base(s), "", counting);
    await until(
      async () => read,
      (n) => n === bytes,
    );
    // The last chunk, handed on, is parsed within the turns that follow.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(state().models.length).toBeGreaterThan(0);
    const changes = published.filter((p) => p.models.length > 0).length;
    expect(changes).toBeLessThanOrEqual(2);
    timers.advance(100);
    // The latest status wins.
    expect(state().models).toEqual([{ id: "m4999", state: "ready" }]);
    expect(published.length).toBeLessThanOrEqual(3);
  });
});

describe("credentials in the peer's URL", () => {
  test("sent as Basic auth; shown as user:*** in status and events", async () => {
    const auth: (string | null)[] = [];
    const s = peer((req) => {
      auth.push(req.headers.get("authorization"));
      return new Response("down", { status: 500 });
    });
    const url = `http://admin:s3cret@127.0.0.1:${s.port}`;
    // Without api_key, so that the URL's credentials are what goes out.
    const timers = new FakeTimers();
    const cfg = config(`[peers.b]\nurl = "${url}"\nkind = "qm"\npoll_s = 5\n`);
    const published: PeerStatusJson[] = [];
    const table = new PeerTable(
      cfg.peers,
      () => timers.now(),
      (p) => published.push(p),
    );
    const w = new PeerWatch(table, { timers, log: createLogger("error", () => {}) });
    watches.push(w);
    w.start();
    await until(
      async () => table.status()[0]!,
      (p) => p.state === "down",
    );
    expect(auth[0]).toBe(`Basic ${btoa("admin:s3cret")}`);
    expect(table.status()[0]!.url).toBe(`http://admin:***@127.0.0.1:${s.port}`);
    expect(JSON.stringify([table.status(), published])).not.toContain("s3cret");
  });
});
