/** waitHealthy against in-process servers on port 0. */
import { afterEach, expect, test } from "bun:test";
import { waitHealthy } from "../../src/process/health.ts";
import { freePort } from "../support/net.ts";

const servers: Bun.Server<undefined>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop(true)));
});

function serve(fetch: (req: Request) => Response | Promise<Response>): string {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 0, fetch });
  servers.push(s);
  return `http://127.0.0.1:${s.port}/health`;
}

const wait = (url: string, ms: number, signal = new AbortController().signal) =>
  waitHealthy({ url, intervalMs: 10, deadline: performance.now() + ms, signal });

test("polls until a 200", async () => {
  let probes = 0;
  const url = serve(() => new Response(null, { status: ++probes < 4 ? 503 : 200 }));
  expect(await wait(url, 2000)).toEqual({ kind: "ready" });
  expect(probes).toBe(4);
});

test("times out, reporting the last answer", async () => {
  const url = serve(() => new Response("loading", { status: 503 }));
  expect(await wait(url, 100)).toEqual({ kind: "timeout", lastProbe: "HTTP 503" });
});

test("a refused connection is retried until the deadline", async () => {
  const out = await wait(`http://127.0.0.1:${freePort()}/health`, 80);
  expect(out).toEqual({ kind: "timeout", lastProbe: "connection refused" });
});

test("a probe that hangs is cut at the deadline", async () => {
  const url = serve(() => new Promise<Response>(() => {}));
  const t0 = performance.now();
  const out = await wait(url, 150);
  expect(out.kind).toBe("timeout");
  expect(performance.now() - t0).toBeLessThan(1000);
});

test("abort ends the wait", async () => {
  const url = serve(() => new Promise<Response>(() => {}));
  const ac = new AbortController();
  const waiting = wait(url, 10_000, ac.signal);
  ac.abort();
  expect(await waiting).toEqual({ kind: "aborted" });
});
