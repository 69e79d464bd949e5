/**
 * The GPU's history (`GET /api/history`): one memory sample per reading, residency bars from
 * model states, swaps with their causes, bounded by age and count; and the route's answers to
 * good and hostile `minutes`.
 */
import { describe, expect, test } from "bun:test";
import { historyMinutes } from "../../src/api/control/history.ts";
import {
  type CardSample,
  GpuHistory,
  type HistoryJson,
  stopCause,
  swapCause,
} from "../../src/gpu/history.ts";
import { QmError } from "../../src/shared/errors.ts";
import { useFakeFetch } from "../support/fake-fetch.ts";
import { fakeGateway, modelToml } from "../support/fake-gateway.ts";
import { appOf, bodyOf, call } from "../support/in-process.ts";

const MIN = 60_000;
const card = (used: number, models: Record<string, number> = {}): CardSample => ({
  index: 0,
  used_gb: used,
  models,
  foreign_gb: 1,
  budget_gb: 24,
  ceiling_gb: 23,
});

describe("GpuHistory", () => {
  test("samples, residency and swaps within the minutes asked for", () => {
    const h = new GpuHistory();
    const t0 = 1_700_000_000_000;
    h.memory(t0, [card(1)]);
    h.state(t0 + 1000, "a", "starting");
    h.swap(t0 + 1000, "a", [], swapCause([], []));
    h.state(t0 + 3000, "a", "ready");
    h.memory(t0 + 4000, [card(7, { a: 6 })]);
    h.state(t0 + 10 * MIN, "b", "starting");
    h.swap(t0 + 10 * MIN, "b", ["a"], swapCause(["a"], ["a"]));
    h.state(t0 + 10 * MIN + 1, "a", "stopping");
    h.state(t0 + 10 * MIN + 500, "a", "stopped");
    h.state(t0 + 10 * MIN + 2000, "b", "ready");
    const all = h.since(t0 + 11 * MIN, 30);
    expect(all.memory.map((s) => s.t)).toEqual([t0, t0 + 4000]);
    expect(all.residency).toEqual([
      { model: "a", state: "loading", from: t0 + 1000, to: t0 + 3000 },
      { model: "a", state: "resident", from: t0 + 3000, to: t0 + 10 * MIN + 500 },
      { model: "b", state: "loading", from: t0 + 10 * MIN, to: t0 + 10 * MIN + 2000 },
      { model: "b", state: "resident", from: t0 + 10 * MIN + 2000, to: null },
    ]);
    expect(all.swaps).toEqual([
      { t: t0 + 1000, loaded: "a", evicted: [], reason: "load" },
      { t: t0 + 10 * MIN, loaded: "b", evicted: ["a"], reason: "memory" },
    ]);
    // The last 5 minutes: no sample, only what still lasts or ended in them.
    const recent = h.since(t0 + 11 * MIN, 5);
    expect(recent.memory).toEqual([]);
    expect(recent.residency.map((r) => [r.model, r.state])).toEqual([
      ["a", "resident"],
      ["b", "loading"],
      ["b", "resident"],
    ]);
    expect(recent.swaps.map((s) => s.loaded)).toEqual(["b"]);
  });

  test("more than the window is read as the window; older entries are dropped", () => {
    const h = new GpuHistory();
    h.memory(0, [card(1)]);
    h.state(0, "a", "starting");
    h.state(1, "a", "stopped");
    h.memory(40 * MIN, [card(2)]);
    h.state(40 * MIN, "b", "starting");
    const r = h.since(40 * MIN, 999);
    expect(r.memory.map((s) => s.t)).toEqual([40 * MIN]);
    expect(r.residency.map((x) => x.model)).toEqual(["b"]);
  });

  test("bounded by count: a probe every 100 ms for 30 minutes keeps the newest 4500", () => {
    const h = new GpuHistory();
    for (let i = 0; i < 18_000; i++) h.memory(i * 100, [card(1)]);
    const r = h.since(18_000 * 100, 30);
    expect(r.memory).toHaveLength(4500);
    expect(r.memory.at(-1)?.t).toBe(17_999 * 100);
  });

  test("a model that thrashes keeps at most 2000 bars", () => {
    const h = new GpuHistory();
    for (let i = 0; i < 3000; i++) {
      h.state(i * 10, "a", "starting");
      h.state(i * 10 + 5, "a", "stopped");
    }
    expect(h.since(30_000, 30).residency.length).toBeLessThanOrEqual(2000);
  });

  test("the same state twice is one bar; a wake is a load", () => {
    const h = new GpuHistory();
    h.state(0, "a", "starting");
    h.state(1, "a", "starting");
    h.state(2, "a", "ready");
    h.state(3, "a", "sleeping");
    h.state(4, "a", "starting");
    h.state(5, "a", "ready");
    expect(h.since(10, 30).residency.map((r) => [r.state, r.from, r.to])).toEqual([
      ["loading", 0, 2],
      ["resident", 2, 3],
      ["loading", 4, 5],
      ["resident", 5, null],
    ]);
  });

  test("causes in a word", () => {
    expect(swapCause(["a"], [])).toBe("group");
    expect(
      ["ttl", "unload", "keep_alive 0", "RAM for b", "GPU memory pressure: ceiling 10 GB", "x"].map(
        stopCause,
      ),
    ).toEqual(["ttl", "unload", "keep_alive", "budget", "shed", "other"]);
  });
});

describe("GET /api/history", () => {
  const up = useFakeFetch();

  test("minutes: default 30, more read as 30; not a positive number is a 400 naming it", async () => {
    expect(historyMinutes("http://x/api/history")).toBe(30);
    expect(historyMinutes("http://x/api/history?minutes=5")).toBe(5);
    expect(historyMinutes("http://x/api/history?minutes=0.5")).toBe(0.5);
    expect(historyMinutes("http://x/api/history?minutes=90")).toBe(30);
    for (const bad of ["0", "-1", "x", "", "1e3", "NaN", "9".repeat(400), "5;drop"]) {
      expect(
        historyMinutes(`http://x/api/history?minutes=${encodeURIComponent(bad)}`),
      ).toBeInstanceOf(QmError);
    }
  });

  test("answers the gateway's history; a bad minutes in the OpenAI envelope", async () => {
    const gw = fakeGateway(`[server]\nlog_level = "error"\n${modelToml("m", up)}`);
    const asked: number[] = [];
    const h = new GpuHistory();
    h.memory(Date.now(), [card(3, { m: 2 })]);
    Object.assign(gw, {
      history: (minutes: number): HistoryJson => {
        asked.push(minutes);
        return h.since(Date.now(), minutes);
      },
    });
    const app = appOf(gw);
    const res = await call(app, "GET", "/api/history?minutes=45");
    expect(res.status).toBe(200);
    const body = (await bodyOf(res)) as HistoryJson;
    expect(body.memory[0]?.cards).toEqual([card(3, { m: 2 })]);
    expect(body.residency).toEqual([]);
    expect(body.swaps).toEqual([]);
    expect(asked).toEqual([30]);
    const bad = await call(app, "GET", "/api/history?minutes=-2");
    expect(bad.status).toBe(400);
    expect(await bodyOf(bad)).toMatchObject({
      error: { type: "invalid_request_error", param: "minutes" },
    });
    const post = await call(app, "POST", "/api/history", "{}");
    expect([post.status, post.headers.get("allow")]).toEqual([405, "GET"]);
  });
});
