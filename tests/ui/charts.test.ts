/** The charts' geometry (src/ui/app/charts.ts): scales, stacks, lanes and per-model series. */
import { describe, expect, test } from "bun:test";
import {
  buckets,
  lanes,
  linear,
  linePath,
  memoryStack,
  niceStep,
  requestSeries,
  stackPaths,
  stepPath,
  swapTitle,
  ticks,
  timesOf,
  timeTicks,
  WINDOW_MS,
  windowStart,
} from "../../src/ui/app/charts.ts";
import type { History, RequestRecord } from "../../src/ui/app/wire.ts";

const card = (used: number, models: Record<string, number>, foreign: number, ceiling = 19) => ({
  index: 0,
  used_gb: used,
  models,
  foreign_gb: foreign,
  budget_gb: 20,
  ceiling_gb: ceiling,
});

const history: History = {
  memory: [
    { t: 1000, cards: [card(3, {}, 3)] },
    { t: 2000, cards: [card(9, { a: 6 }, 3)] },
    // b loads while a's memory is still on its way back: 2 GB qm holds but has not told apart.
    { t: 3000, cards: [card(13, { b: 8 }, 3, 17)] },
  ],
  residency: [
    { model: "a", state: "loading", from: 1500, to: 1800 },
    { model: "a", state: "resident", from: 1800, to: 2500 },
    { model: "b", state: "loading", from: 2500, to: 2900 },
    { model: "b", state: "resident", from: 2900, to: null },
  ],
  swaps: [{ t: 2500, loaded: "b", evicted: ["a"], reason: "group" }],
};

describe("scales and ticks", () => {
  test("linear maps the domain onto the range; a zero-width domain maps to its start", () => {
    const x = linear(0, 10, 100, 200);
    expect([x(0), x(5), x(10)]).toEqual([100, 150, 200]);
    expect(linear(3, 3, 7, 9)(100)).toBe(7);
  });

  test("round steps (rounded up: never more parts than asked) and their multiples", () => {
    expect([niceStep(24, 4), niceStep(7, 4), niceStep(0.9, 4), niceStep(0)]).toEqual([
      10, 2, 0.5, 1,
    ]);
    expect(ticks(0, 24, 5)).toEqual([0, 5, 10, 15, 20]);
    expect(timeTicks(0, WINDOW_MS)).toEqual([0, 5, 10, 15, 20, 25, 30].map((m) => m * 60_000));
    expect(timeTicks(0, 5 * 60_000)).toEqual([0, 1, 2, 3, 4, 5].map((m) => m * 60_000));
  });

  test("the time axis starts at the oldest thing to draw: at least 5, at most 30 minutes back", () => {
    const MIN = 60_000;
    const now = 100 * MIN;
    expect(windowStart(now, [])).toBe(95 * MIN);
    expect(windowStart(now, [99 * MIN])).toBe(95 * MIN);
    expect(windowStart(now, [88 * MIN, 97 * MIN])).toBe(88 * MIN);
    expect(windowStart(now, [10 * MIN])).toBe(70 * MIN);
    expect([...timesOf(history, [rec("a", 5, null)])]).toEqual([
      1000, 2000, 3000, 1500, 1800, 2500, 2900, 2500, 5,
    ]);
  });
});

describe("memory over time", () => {
  test("models bottom up, qm's untold memory, other programs, free up to the card", () => {
    const s = memoryStack(history, 0, 24);
    expect(s.times).toEqual([1000, 2000, 3000]);
    expect(s.layers.map((l) => [l.label, l.values])).toEqual([
      ["a", [0, 6, 0]],
      ["b", [0, 0, 8]],
      ["qm, being released", [0, 0, 2]],
      ["other programs", [3, 3, 3]],
      ["free", [21, 15, 11]],
    ]);
    expect(s.ceiling).toEqual([19, 19, 17]);
    expect(s.maxGb).toBe(24);
    // Each sample's layers add up to the card.
    for (let i = 0; i < 3; i++) expect(s.layers.reduce((n, l) => n + l.values[i]!, 0)).toBe(24);
  });

  test("stacked areas close on the layer below; the step line holds each value", () => {
    const s = memoryStack(history, 0, 24);
    const paths = stackPaths(
      s,
      (t) => t / 1000,
      (gb) => 100 - gb,
    );
    expect(paths[0]).toEqual({
      key: "model:a",
      d: "M1.0,100.0L2.0,94.0L3.0,100.0L3.0,100.0L2.0,100.0L1.0,100.0Z",
    });
    expect(paths.at(-1)?.d.startsWith("M1.0,76.0L2.0,76.0L3.0,76.0L")).toBe(true);
    expect(
      stepPath(
        s.times,
        s.ceiling,
        (t) => t / 1000,
        (v) => v,
      ),
    ).toBe("M1.0,19.0H2.0V19.0H3.0V17.0");
    expect(memoryStack({ ...history, memory: [] }, 0, 24).layers.map((l) => l.label)).toEqual([
      "other programs",
      "free",
    ]);
  });
});

const rec = (model: string, time: number, ttft: number | null, api = "openai"): RequestRecord => ({
  time,
  model,
  api,
  status: 200,
  answered: true,
  wait_ms: 0,
  swap: false,
  duration_ms: 10,
  ttft_ms: ttft,
  prompt_tokens: 1,
  completion_tokens: 1,
  cached_tokens: null,
  finish_reason: "stop",
});

describe("residency and requests", () => {
  test("a lane per model, bars clipped to the window (an open one to now), ticks for requests", () => {
    const list = lanes(
      history,
      [rec("a", 1900, 50), rec("b", 9000, 10), rec("c", 100, 5), rec("a", 2000, null, "load")],
      1600,
      3500,
    );
    expect(list).toEqual([
      {
        model: "a",
        bars: [
          { state: "loading", from: 1600, to: 1800 },
          { state: "resident", from: 1800, to: 2500 },
        ],
        requests: [1900],
      },
      {
        model: "b",
        bars: [
          { state: "loading", from: 2500, to: 2900 },
          { state: "resident", from: 2900, to: 3500 },
        ],
        requests: [],
      },
    ]);
    expect(swapTitle(history.swaps[0]!)).toEndWith("loaded b, evicted a (group)");
    expect(swapTitle({ t: 0, loaded: null, evicted: ["a"], reason: "ttl" })).toEndWith(
      "stopped a (ttl)",
    );
  });

  test("requests per minute and the median TTFT per model and minute; no request, no point", () => {
    const now = 10 * 60_000;
    const starts = buckets(now, 60_000, 3 * 60_000);
    expect(starts).toEqual([7, 8, 9].map((m) => m * 60_000));
    const at = (m: number) => m * 60_000 + 1;
    const { rate, ttft } = requestSeries(
      [
        rec("a", at(7), 100),
        rec("a", at(7), 300),
        rec("a", at(9), 50),
        rec("b", at(8), null),
        rec("a", at(8), 1, "load"),
      ],
      starts,
    );
    expect(rate).toEqual([
      { model: "a", values: [2, 0, 1] },
      { model: "b", values: [0, 1, 0] },
    ]);
    expect(ttft).toEqual([
      { model: "a", values: [100, null, 50] },
      { model: "b", values: [null, null, null] },
    ]);
    expect(
      linePath(
        starts,
        [1, null, 3],
        (t) => t / 60_000,
        (v) => v,
      ),
    ).toBe("M7.0,1.0M9.0,3.0");
  });
});
