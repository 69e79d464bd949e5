/**
 * waitHealthy: its poll, probe limit and deadline on a fake clock against a fake fetch (the
 * order of probes and outcomes, no wall time), and against in-process servers on port 0 (what
 * a real refused connection or HTTP error reads as).
 */
import { afterEach, expect, test } from "bun:test";
import {
  type HealthOutcome,
  type HealthWait,
  LOAD_SHARE,
  MIN_GAP_MS,
  nextProbeIn,
  ProbeNudge,
  type ReadyWindow,
  readyWindow,
  waitHealthy,
} from "../../src/process/health.ts";
import type { Fetch } from "../../src/shared/fetch.ts";
import { FakeTimers } from "../support/fake-timers.ts";
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

/** Lets every promise chain in flight run (no clock time passes). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

/**
 * A fake health endpoint: `answer(n)` for the n-th probe (from 1), or null for one that never
 * answers (it rejects as fetch does once its signal aborts). `at` records when each was sent.
 */
function endpoint(timers: FakeTimers, answer: (n: number) => number | null) {
  const at: number[] = [];
  const fetch: Fetch = (_url, init) => {
    at.push(timers.now());
    const status = answer(at.length);
    if (status !== null) return Promise.resolve(new Response(null, { status }));
    return new Promise((_, reject) => {
      init.signal?.addEventListener("abort", () => reject(init.signal?.reason), { once: true });
    });
  };
  return { fetch, at };
}

/** waitHealthy on the fake clock from 0; `outcome` is null until it ends. */
function waitOn(
  timers: FakeTimers,
  fetch: Fetch,
  deadline: number,
  signal?: AbortSignal,
  nudge?: ProbeNudge,
  readyAround?: ReadyWindow,
) {
  const w: HealthWait = {
    url: "http://model.test/health",
    intervalMs: 10,
    deadline,
    signal: signal ?? new AbortController().signal,
    timers,
    fetch,
    ...(nudge ? { nudge } : {}),
    ...(readyAround ? { readyAround } : {}),
  };
  const state: { outcome: HealthOutcome | null } = { outcome: null };
  const done = waitHealthy(w).then((o) => {
    state.outcome = o;
    return o;
  });
  return { state, done };
}

test("polls every interval until a 200, and is ready at that probe", async () => {
  const timers = new FakeTimers();
  const up = endpoint(timers, (n) => (n < 4 ? 503 : 200));
  const w = waitOn(timers, up.fetch, 2000);
  for (let t = 0; t < 29; t++) {
    await settle();
    timers.advance(1);
  }
  await settle();
  expect(w.state.outcome).toBeNull();
  timers.advance(1);
  expect(await w.done).toEqual({ kind: "ready" });
  expect(up.at).toEqual([0, 10, 20, 30]);
  expect(timers.pending).toBe(0);
});

test("near the load's expected end, probes come every minimum gap; before and after it, every interval", async () => {
  const timers = new FakeTimers();
  // Healthy from 47 ms; the window is 35 – 55 ms.
  const up = endpoint(timers, () => (timers.now() < 47 ? 503 : 200));
  const w = waitOn(timers, up.fetch, 2000, undefined, undefined, { at: 45, halfMs: 10 });
  for (let t = 0; t < 60 && w.state.outcome === null; t++) {
    await settle();
    timers.advance(1);
  }
  expect(await w.done).toEqual({ kind: "ready" });
  expect(up.at).toEqual([0, 10, 20, 30, 35, 37, 39, 41, 43, 45, 47]);
  expect(timers.pending).toBe(0);
});

test("a load that runs past the window goes back to the interval", async () => {
  const timers = new FakeTimers();
  const up = endpoint(timers, () => (timers.now() < 80 ? 503 : 200));
  const w = waitOn(timers, up.fetch, 2000, undefined, undefined, { at: 20, halfMs: 10 });
  for (let t = 0; t < 100 && w.state.outcome === null; t++) {
    await settle();
    timers.advance(1);
  }
  expect(await w.done).toEqual({ kind: "ready" });
  expect(up.at).toEqual([0, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 40, 50, 60, 70, 80]);
});

test("the window: a twentieth of the expected load either side, 10 – 250 ms; none when unknown", () => {
  expect(readyWindow(1000, null)).toBeNull();
  expect(readyWindow(1000, 100)).toEqual({ at: 1100, halfMs: 10 });
  expect(readyWindow(0, 2000)).toEqual({ at: 2000, halfMs: 100 });
  expect(readyWindow(0, 60_000)).toEqual({ at: 60_000, halfMs: 250 });
  const around = { at: 100, halfMs: 10 };
  expect(nextProbeIn(0, 10, null)).toBe(10);
  expect(nextProbeIn(85, 10, around)).toBe(5); // to the window's start
  expect(nextProbeIn(90, 10, around)).toBe(MIN_GAP_MS);
  expect(nextProbeIn(109, 10, around)).toBe(MIN_GAP_MS);
  expect(nextProbeIn(110, 10, around)).toBe(10);
  expect(nextProbeIn(95, 1, around)).toBe(1); // never longer than the interval
});

test("early in a load the interval is a fiftieth of the time it has taken, 2 ms at least", () => {
  expect(LOAD_SHARE).toBe(50);
  expect(nextProbeIn(0, 10, null, 0)).toBe(MIN_GAP_MS);
  expect(nextProbeIn(50, 10, null, 0)).toBe(MIN_GAP_MS);
  expect(nextProbeIn(250, 10, null, 0)).toBe(5);
  expect(nextProbeIn(1250, 10, null, 1000)).toBe(5); // from the load's start, not the clock's
  expect(nextProbeIn(500, 10, null, 0)).toBe(10);
  expect(nextProbeIn(5000, 10, null, 0)).toBe(10); // never longer than the interval
  // The window still brings probes closer, and its start is not passed over.
  expect(nextProbeIn(400, 10, { at: 1000, halfMs: 50 }, 0)).toBe(8);
  expect(nextProbeIn(946, 10, { at: 1000, halfMs: 50 }, 0)).toBe(4);
  expect(nextProbeIn(960, 10, { at: 1000, halfMs: 50 }, 0)).toBe(MIN_GAP_MS);
  expect(nextProbeIn(1100, 10, { at: 1000, halfMs: 50 }, 0)).toBe(10);
});

test("a line the model prints brings the next probe forward, never closer than the minimum gap", async () => {
  const timers = new FakeTimers();
  const up = endpoint(timers, (n) => (n < 4 ? 503 : 200));
  const nudge = new ProbeNudge();
  const w = waitOn(timers, up.fetch, 2000, undefined, nudge);
  await settle();
  timers.advance(3);
  nudge.now(); // 3 ms into the wait: the next probe now
  await settle();
  timers.advance(0);
  await settle();
  expect(up.at).toEqual([0, 3]);
  nudge.now(); // right after a probe: held to the minimum gap
  nudge.now();
  await settle();
  timers.advance(MIN_GAP_MS - 1);
  await settle();
  expect(up.at).toEqual([0, 3]);
  timers.advance(1);
  await settle();
  expect(up.at).toEqual([0, 3, 3 + MIN_GAP_MS]);
  // No line: the interval again.
  timers.advance(9);
  await settle();
  expect(up.at).toHaveLength(3);
  timers.advance(1);
  expect(await w.done).toEqual({ kind: "ready" });
  expect(up.at).toEqual([0, 3, 3 + MIN_GAP_MS, 13 + MIN_GAP_MS]);
  expect(timers.pending).toBe(0);
});

test("a line printed while a probe is under way brings the one after it forward", async () => {
  const timers = new FakeTimers();
  let release: (() => void) | null = null;
  const at: number[] = [];
  const fetch: Fetch = () => {
    at.push(timers.now());
    if (at.length === 1) {
      return new Promise((resolve) => {
        release = () => resolve(new Response(null, { status: 503 }));
      });
    }
    return Promise.resolve(new Response(null, { status: 200 }));
  };
  const nudge = new ProbeNudge();
  const w = waitOn(timers, fetch, 2000, undefined, nudge);
  await settle();
  timers.advance(5);
  nudge.now(); // the first probe has not answered yet
  release!();
  await settle();
  timers.advance(MIN_GAP_MS);
  expect(await w.done).toEqual({ kind: "ready" });
  expect(at).toEqual([0, 5 + MIN_GAP_MS]);
});

test("a probe that hangs is given up after the probe limit (1 s), then the next is sent", async () => {
  const timers = new FakeTimers();
  const up = endpoint(timers, (n) => (n === 1 ? null : 200));
  const w = waitOn(timers, up.fetch, 60_000);
  await settle();
  timers.advance(999);
  await settle();
  expect(up.at).toEqual([0]);
  timers.advance(1); // the probe limit: the hung probe is cut
  await settle();
  timers.advance(10); // one poll interval later
  expect(await w.done).toEqual({ kind: "ready" });
  expect(up.at).toEqual([0, 1010]);
});

test("a probe that hangs is cut at the deadline, not before", async () => {
  const timers = new FakeTimers();
  const up = endpoint(timers, () => null);
  const w = waitOn(timers, up.fetch, 150);
  await settle();
  timers.advance(149);
  await settle();
  expect(w.state.outcome).toBeNull();
  timers.advance(1);
  expect(await w.done).toEqual({
    kind: "timeout",
    lastProbe: "no answer within the probe timeout",
  });
  expect(up.at).toEqual([0]);
  expect(timers.pending).toBe(0);
});

test("a probe cut by the deadline keeps the last real answer as the reason", async () => {
  const timers = new FakeTimers();
  const up = endpoint(timers, (n) => (n === 1 ? 503 : null));
  const w = waitOn(timers, up.fetch, 500);
  await settle();
  timers.advance(10);
  await settle();
  expect(up.at).toEqual([0, 10]);
  timers.advance(490);
  expect(await w.done).toEqual({ kind: "timeout", lastProbe: "HTTP 503" });
});

test("abort ends the wait, on whatever clock", async () => {
  const timers = new FakeTimers();
  const up = endpoint(timers, () => null);
  const ac = new AbortController();
  const w = waitOn(timers, up.fetch, 10_000, ac.signal);
  await settle();
  ac.abort();
  expect(await w.done).toEqual({ kind: "aborted" });
  expect(timers.pending).toBe(0);
});

test("polls a real server until a 200", async () => {
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

test("abort ends a wait on a real server", async () => {
  const url = serve(() => new Promise<Response>(() => {}));
  const ac = new AbortController();
  const waiting = wait(url, 10_000, ac.signal);
  ac.abort();
  expect(await waiting).toEqual({ kind: "aborted" });
});
