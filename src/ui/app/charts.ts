/**
 * The charts' geometry, pure (no DOM): scales and ticks, the stacked memory areas, the residency
 * lanes, and per-model request rate and TTFT over time. The views turn these into SVG.
 */
import { quantile } from "./perf.ts";
import type { History, RequestRecord } from "./wire.ts";

/** What the charts show: the last 30 minutes (what qm keeps). */
export const WINDOW_MS = 30 * 60_000;

/** The shortest span the charts draw: a young qm's first minutes are not a sliver at the edge. */
export const MIN_SPAN_MS = 5 * 60_000;

/**
 * Where the charts' time axis starts: at the oldest thing to draw within the last 30 minutes,
 * but never less than 5 minutes before `now`.
 */
export function windowStart(now: number, times: Iterable<number>): number {
  let oldest = now - MIN_SPAN_MS;
  for (const t of times) if (t < oldest) oldest = t;
  return Math.max(now - WINDOW_MS, oldest);
}

/** Every time a history and the requests hold (for `windowStart`). */
export function* timesOf(
  history: History,
  requests: readonly RequestRecord[] = [],
): Iterable<number> {
  for (const s of history.memory) yield s.t;
  for (const r of history.residency) yield r.from;
  for (const s of history.swaps) yield s.t;
  for (const r of requests) yield r.time;
}

/** A linear map of [d0, d1] onto [r0, r1]; a zero-width domain maps to r0. */
export function linear(d0: number, d1: number, r0: number, r1: number): (v: number) => number {
  const span = d1 - d0;
  return (v) => (span === 0 ? r0 : r0 + ((v - d0) / span) * (r1 - r0));
}

/** A round step (1, 2 or 5 × 10^k) that cuts `span` into about `count` parts. */
export function niceStep(span: number, count = 5): number {
  if (!(span > 0)) return 1;
  const raw = span / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

/** The multiples of `step` within [lo, hi]. */
export function ticks(lo: number, hi: number, step: number): number[] {
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    out.push(Math.round(v / step) * step);
  }
  return out;
}

/** Time ticks on whole minutes: every 5 across a 30-minute window, every one across 5. */
export function timeTicks(from: number, to: number): number[] {
  const step = niceStep(to - from, 6) >= 300_000 ? 300_000 : 60_000;
  return ticks(from, to, step);
}

export interface Layer {
  key: string;
  label: string;
  kind: "model" | "foreign" | "releasing" | "free";
  /** GB at each sample. */
  values: number[];
}

export interface MemoryStack {
  times: number[];
  /** Bottom first: each of qm's models, qm's memory not told apart yet, other programs, free. */
  layers: Layer[];
  budget: number[];
  ceiling: number[];
  /** The top of the chart: the card's memory (or the most the stack reached). */
  maxGb: number;
}

/**
 * One card's samples as stacked layers. `totalGb` is the card's memory (from the status): what
 * is not used is free. Memory qm holds but has not yet attributed (a model that just stopped,
 * its memory on the way back) is its own layer, never passed off as another program's.
 */
export function memoryStack(history: History, card: number, totalGb: number): MemoryStack {
  const samples = history.memory
    .map((s) => ({ t: s.t, c: s.cards.find((c) => c.index === card) }))
    .filter((s): s is { t: number; c: NonNullable<typeof s.c> } => s.c !== undefined);
  const ids: string[] = [];
  for (const s of samples)
    for (const id of Object.keys(s.c.models)) if (!ids.includes(id)) ids.push(id);
  const models = ids.map((id) => ({
    key: `model:${id}`,
    label: id,
    kind: "model" as const,
    values: samples.map((s) => s.c.models[id] ?? 0),
  }));
  const attributed = samples.map((s) => Object.values(s.c.models).reduce((a, b) => a + b, 0));
  const releasing = samples.map((s, i) =>
    Math.max(0, s.c.used_gb - s.c.foreign_gb - attributed[i]!),
  );
  const layers: Layer[] = [...models];
  if (releasing.some((v) => v > 0.01)) {
    layers.push({
      key: "releasing",
      label: "qm, being released",
      kind: "releasing",
      values: releasing,
    });
  }
  layers.push({
    key: "foreign",
    label: "other programs",
    kind: "foreign",
    values: samples.map((s) => s.c.foreign_gb),
  });
  const maxUsed = Math.max(0, ...samples.map((s) => s.c.used_gb));
  const top = Math.max(totalGb, maxUsed);
  layers.push({
    key: "free",
    label: "free",
    kind: "free",
    values: samples.map((s) => Math.max(0, top - s.c.used_gb)),
  });
  return {
    times: samples.map((s) => s.t),
    layers,
    budget: samples.map((s) => s.c.budget_gb),
    ceiling: samples.map((s) => s.c.ceiling_gb),
    maxGb: Math.max(top, ...samples.map((s) => Math.max(s.c.budget_gb, s.c.ceiling_gb))),
  };
}

/** The SVG path of each layer stacked on those below it (a closed area per layer). */
export function stackPaths(
  stack: MemoryStack,
  x: (t: number) => number,
  y: (gb: number) => number,
): { key: string; d: string }[] {
  const n = stack.times.length;
  const base = new Array<number>(n).fill(0);
  return stack.layers.map((layer) => {
    const bottom = [...base];
    for (let i = 0; i < n; i++) base[i] = (base[i] ?? 0) + (layer.values[i] ?? 0);
    if (n === 0) return { key: layer.key, d: "" };
    const pt = (i: number, v: number) => `${x(stack.times[i]!).toFixed(1)},${y(v).toFixed(1)}`;
    const up = stack.times.map((_, i) => pt(i, base[i]!));
    const down = stack.times.map((_, i) => pt(i, bottom[i]!)).reverse();
    return { key: layer.key, d: `M${up.join("L")}L${down.join("L")}Z` };
  });
}

/** A step line through (times, values): each value holds until the next sample. */
export function stepPath(
  times: readonly number[],
  values: readonly number[],
  x: (t: number) => number,
  y: (v: number) => number,
): string {
  if (times.length === 0) return "";
  let d = `M${x(times[0]!).toFixed(1)},${y(values[0]!).toFixed(1)}`;
  for (let i = 1; i < times.length; i++) {
    d += `H${x(times[i]!).toFixed(1)}V${y(values[i]!).toFixed(1)}`;
  }
  return d;
}

export interface Bar {
  state: "loading" | "resident";
  from: number;
  to: number;
}

export interface Lane {
  model: string;
  bars: Bar[];
  /** Times of the model's requests in the window. */
  requests: number[];
}

/**
 * One lane per model that was loading or resident in the window, or got requests in it: its
 * bars clipped to [from, now] (an open bar lasts until now), and its requests as ticks.
 */
export function lanes(
  history: History,
  requests: readonly RequestRecord[],
  from: number,
  now: number,
): Lane[] {
  const by = new Map<string, Lane>();
  const lane = (model: string) => {
    const known = by.get(model);
    if (known) return known;
    const made: Lane = { model, bars: [], requests: [] };
    by.set(model, made);
    return made;
  };
  for (const r of history.residency) {
    const to = Math.min(now, r.to ?? now);
    if (to < from) continue;
    lane(r.model).bars.push({ state: r.state, from: Math.max(from, r.from), to });
  }
  for (const r of requests) {
    if (r.api === "load" || r.time < from || r.time > now) continue;
    lane(r.model).requests.push(r.time);
  }
  return [...by.values()].sort((a, b) => a.model.localeCompare(b.model));
}

/** A swap's hover text: what loaded, what it evicted, and why. */
export function swapTitle(s: History["swaps"][number]): string {
  const when = new Date(s.t).toLocaleTimeString();
  const evicted = s.evicted.length > 0 ? `evicted ${s.evicted.join(", ")}` : "evicted nothing";
  return s.loaded === null
    ? `${when}: stopped ${s.evicted.join(", ")} (${s.reason})`
    : `${when}: loaded ${s.loaded}, ${evicted} (${s.reason})`;
}

export interface Series {
  model: string;
  /** One value per bucket; null where there is none (no request, so no TTFT). */
  values: (number | null)[];
}

/** Buckets of `bucketMs` ending at `now` covering the window: each bucket's start time. */
export function buckets(now: number, bucketMs = 60_000, windowMs = WINDOW_MS): number[] {
  const n = Math.max(1, Math.round(windowMs / bucketMs));
  return Array.from({ length: n }, (_, i) => now - n * bucketMs + i * bucketMs);
}

/** Requests per minute and median TTFT (ms) per model and bucket. */
export function requestSeries(
  requests: readonly RequestRecord[],
  starts: readonly number[],
  bucketMs = 60_000,
): { rate: Series[]; ttft: Series[] } {
  const models = [...new Set(requests.filter((r) => r.api !== "load").map((r) => r.model))].sort();
  const rate: Series[] = [];
  const ttft: Series[] = [];
  for (const model of models) {
    const mine = requests.filter((r) => r.model === model && r.api !== "load");
    const inBucket = (start: number) =>
      mine.filter((r) => r.time >= start && r.time < start + bucketMs);
    rate.push({ model, values: starts.map((s) => inBucket(s).length / (bucketMs / 60_000)) });
    ttft.push({
      model,
      values: starts.map((s) =>
        quantile(
          inBucket(s).flatMap((r) => (r.ttft_ms === null ? [] : [r.ttft_ms])),
          0.5,
        ),
      ),
    });
  }
  return { rate, ttft };
}

/** A polyline through the non-null values; a null breaks the line. */
export function linePath(
  starts: readonly number[],
  values: readonly (number | null)[],
  x: (t: number) => number,
  y: (v: number) => number,
): string {
  let d = "";
  let pen = false;
  values.forEach((v, i) => {
    if (v === null) {
      pen = false;
      return;
    }
    d += `${pen ? "L" : "M"}${x(starts[i]!).toFixed(1)},${y(v).toFixed(1)}`;
    pen = true;
  });
  return d;
}
