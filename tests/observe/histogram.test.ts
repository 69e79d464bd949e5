import { expect, test } from "bun:test";
import { Histogram, Registry } from "prom-client";
import { SeriesHistogram } from "../../src/observe/histogram.ts";

test("a SeriesHistogram scrapes exactly as prom-client's Histogram with the same observations", async () => {
  const bounds = [0.01, 0.1, 1, 10];
  const ours = new Registry();
  const theirs = new Registry();
  const h = new SeriesHistogram("x_seconds", "help text", ["model", "api"], bounds, ours);
  const ref = new Histogram({
    name: "x_seconds",
    help: "help text",
    labelNames: ["model", "api"],
    buckets: bounds,
    registers: [theirs],
  });
  const cases: [Record<string, string>, number][] = [
    [{ model: "m", api: "openai" }, 0.005],
    [{ model: "m", api: "openai" }, 0.01],
    [{ model: "m", api: "openai" }, 0.5],
    [{ model: "m", api: "openai" }, 99],
    [{ model: "org/x", api: "anthropic" }, 1],
    [{ model: "org/x", api: "anthropic" }, 0],
    [{ model: 'q"uote', api: "openai" }, 3],
  ];
  for (const [labels, v] of cases) {
    h.series(labels).observe(v);
    ref.observe(labels, v);
  }
  expect(h.series({ model: "m", api: "openai" })).toBe(h.series({ api: "openai", model: "m" }));
  expect(await ours.metrics()).toBe(await theirs.metrics());
  h.reset();
  ref.reset();
  expect(await ours.metrics()).toBe(await theirs.metrics());
});
