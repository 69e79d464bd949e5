/**
 * The charts, drawn as SVG from ./charts.ts's geometry: memory over time (stacked per card, with
 * the budget and the live ceiling as lines), the residency timeline (a lane per model: loading
 * hatched, resident solid, requests as ticks, swaps marked with their causes on hover), and line
 * charts of request rate and TTFT per model. Sized to their container in pixels (so text is not
 * stretched), coloured by CSS variables (light and dark themes), with every figure also in a
 * legend or a title, never in colour alone.
 */
import type { RefObject } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { getJson } from "../api.ts";
import {
  type Lane,
  lanes,
  linear,
  linePath,
  type MemoryStack,
  memoryStack,
  niceStep,
  type Series,
  stackPaths,
  stepPath,
  swapTitle,
  ticks,
  timeTicks,
} from "../charts.ts";
import { gb } from "../format.ts";
import type { History, RequestRecord } from "../wire.ts";

const EMPTY: History = { memory: [], residency: [], swaps: [] };
const HEIGHT = 220;
const PAD = { left: 46, right: 10, top: 10, bottom: 22 };

/** `/api/history` for the last 30 minutes, read again every `everyMs`. */
export function useHistory(everyMs = 5000): History {
  const [history, setHistory] = useState<History>(EMPTY);
  useEffect(() => {
    let on = true;
    const read = () =>
      getJson<History>("/api/history?minutes=30")
        .then((h) => on && setHistory(h))
        .catch(() => {});
    void read();
    const t = setInterval(read, everyMs);
    return () => {
      on = false;
      clearInterval(t);
    };
  }, [everyMs]);
  return history;
}

/** The element's width in pixels, kept current as the page resizes. */
function useWidth(ref: RefObject<HTMLElement | null>, fallback = 640): number {
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(300, Math.floor(el.getBoundingClientRect().width)));
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [ref]);
  return width;
}

const clock = (t: number) =>
  new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });

/** The time axis of a chart `width` wide, and its labels. */
function TimeAxis({
  x,
  from,
  to,
  y,
}: {
  x: (t: number) => number;
  from: number;
  to: number;
  y: number;
}) {
  return (
    <g class="axis">
      {timeTicks(from, to).map((t) => (
        <text key={t} x={x(t)} y={y} text-anchor="middle">
          {clock(t)}
        </text>
      ))}
    </g>
  );
}

function ValueAxis(props: {
  y: (v: number) => number;
  max: number;
  left: number;
  right: number;
  format: (v: number) => string;
}) {
  const { y, max, left, right, format } = props;
  return (
    <g class="axis">
      {ticks(0, max, niceStep(max, 4)).map((v) => (
        <g key={v}>
          <line class="grid" x1={left} x2={right} y1={y(v)} y2={y(v)} />
          <text x={left - 4} y={y(v) + 4} text-anchor="end">
            {format(v)}
          </text>
        </g>
      ))}
    </g>
  );
}

/** A model's colour: one of eight series colours, the same for a model on every chart. */
export function seriesClass(index: number): string {
  return `series-${index % 8}`;
}

/** Memory over time, one chart per card, from `from` to `now`. */
export function MemoryCharts(props: {
  history: History;
  cards: { index: number; totalGb: number }[];
  from: number;
  now: number;
}) {
  const { history, cards, from, now } = props;
  const models = modelOrder(history);
  return (
    <>
      {cards.map((c) => (
        <MemoryChart
          key={c.index}
          card={c.index}
          stack={memoryStack(history, c.index, c.totalGb)}
          models={models}
          from={from}
          now={now}
          titled={cards.length > 1}
        />
      ))}
    </>
  );
}

/** Every model of the history, in the order they first appear: their colours. */
export function modelOrder(history: History): string[] {
  const ids: string[] = [];
  const add = (id: string) => {
    if (!ids.includes(id)) ids.push(id);
  };
  for (const s of history.memory)
    for (const c of s.cards) for (const id of Object.keys(c.models)) add(id);
  for (const r of history.residency) add(r.model);
  return ids;
}

function layerClass(layer: MemoryStack["layers"][number], models: readonly string[]): string {
  if (layer.kind === "model") return `area ${seriesClass(models.indexOf(layer.label))}`;
  return `area area-${layer.kind}`;
}

function MemoryChart(props: {
  card: number;
  stack: MemoryStack;
  models: string[];
  from: number;
  now: number;
  titled: boolean;
}) {
  const { card, stack, models, from, now, titled } = props;
  const box = useRef<HTMLElement>(null);
  const width = useWidth(box);
  const x = linear(from, now, PAD.left, width - PAD.right);
  const y = linear(0, stack.maxGb || 1, HEIGHT - PAD.bottom, PAD.top);
  const last = stack.times.length - 1;
  const latest = (values: readonly number[]) => (last >= 0 ? gb(values[last]) : "–");
  const summary =
    last < 0
      ? `GPU ${card}: no reading in the last 30 minutes`
      : `GPU ${card} memory over the last 30 minutes; now: ` +
        stack.layers.map((l) => `${l.label} ${latest(l.values)}`).join(", ") +
        `; ceiling ${latest(stack.ceiling)}, budget ${latest(stack.budget)}`;
  return (
    <figure class="chart" ref={box}>
      {titled && <figcaption class="chart-title">GPU {card}</figcaption>}
      <svg
        data-testid="memory-chart"
        data-card={card}
        width={width}
        height={HEIGHT}
        role="img"
        aria-label={summary}
      >
        <ValueAxis
          y={y}
          max={stack.maxGb || 1}
          left={PAD.left}
          right={width - PAD.right}
          format={(v) => `${v} GB`}
        />
        {stackPaths(stack, x, y).map((p, i) => (
          <path key={p.key} class={layerClass(stack.layers[i]!, models)} d={p.d}>
            <title>{stack.layers[i]!.label}</title>
          </path>
        ))}
        {stack.budget.some((b) => b > 0) && (
          <path class="line-budget" d={stepPath(stack.times, stack.budget, x, y)}>
            <title>budget</title>
          </path>
        )}
        {stack.ceiling.some((c) => c > 0) && (
          <path class="line-ceiling" d={stepPath(stack.times, stack.ceiling, x, y)}>
            <title>live ceiling</title>
          </path>
        )}
        {last < 0 && (
          <text class="chart-empty" x={width / 2} y={HEIGHT / 2} text-anchor="middle">
            No GPU reading in the last 30 minutes
          </text>
        )}
        <TimeAxis x={x} from={from} to={now} y={HEIGHT - 6} />
      </svg>
      <figcaption class="legend">
        {stack.layers.map((l) => (
          <span key={l.key}>
            <i
              class={`key ${l.kind === "model" ? seriesClass(models.indexOf(l.label)) : `area-${l.kind}`}`}
            />{" "}
            {l.label} <b class="num">{latest(l.values)}</b>
          </span>
        ))}
        <span>
          <i class="key line-key-ceiling" /> ceiling <b class="num">{latest(stack.ceiling)}</b>
        </span>
        <span>
          <i class="key line-key-budget" /> budget <b class="num">{latest(stack.budget)}</b>
        </span>
      </figcaption>
    </figure>
  );
}

const LANE = 22;
const LABEL_W = 120;

/** One lane per model: loading (hatched) and resident bars, request ticks, swap marks. */
export function ResidencyTimeline(props: {
  history: History;
  requests: readonly RequestRecord[];
  from: number;
  now: number;
}) {
  const { history, requests, from, now } = props;
  const box = useRef<HTMLElement>(null);
  const width = useWidth(box);
  const list: Lane[] = lanes(history, requests, from, now);
  const models = modelOrder(history);
  const height = PAD.top + Math.max(1, list.length) * LANE + PAD.bottom;
  const x = linear(from, now, LABEL_W, width - PAD.right);
  const swaps = history.swaps.filter((s) => s.t >= from && s.t <= now);
  const summary =
    list.length === 0
      ? "No model was loaded in the last 30 minutes"
      : `Residency over time: ${list.map((l) => `${l.model} ${l.bars.length} bar(s), ${l.requests.length} request(s)`).join("; ")}; ${swaps.length} swap(s)`;
  return (
    <figure class="chart" ref={box}>
      <svg
        data-testid="residency-timeline"
        width={width}
        height={height}
        role="img"
        aria-label={summary}
      >
        <defs>
          <pattern
            id="hatch"
            width="6"
            height="6"
            patternUnits="userSpaceOnUse"
            patternTransform="rotate(45)"
          >
            <rect width="6" height="6" class="hatch-bg" />
            <line x1="0" y1="0" x2="0" y2="6" class="hatch-line" />
          </pattern>
        </defs>
        {list.map((l, i) => {
          const top = PAD.top + i * LANE;
          const colour = seriesClass(Math.max(0, models.indexOf(l.model)));
          return (
            <g key={l.model} class="lane">
              <text x={LABEL_W - 6} y={top + LANE / 2 + 4} text-anchor="end" class="lane-label">
                {l.model}
              </text>
              <line
                class="grid"
                x1={LABEL_W}
                x2={width - PAD.right}
                y1={top + LANE - 1}
                y2={top + LANE - 1}
              />
              {l.bars.map((b) => (
                <rect
                  key={`${b.state}-${b.from}`}
                  class={b.state === "loading" ? "bar-loading" : `bar-resident ${colour}`}
                  x={x(b.from)}
                  y={top + 3}
                  width={Math.max(1.5, x(b.to) - x(b.from))}
                  height={LANE - 10}
                >
                  <title>{`${l.model}: ${b.state} ${clock(b.from)}–${clock(b.to)}`}</title>
                </rect>
              ))}
              {l.requests.map((t, k) => (
                <line
                  key={`${t}-${k}`}
                  class="tick"
                  x1={x(t)}
                  x2={x(t)}
                  y1={top + LANE - 7}
                  y2={top + LANE - 1}
                />
              ))}
            </g>
          );
        })}
        {swaps.map((s, i) => (
          <g key={`${s.t}-${i}`} class="swap">
            <line x1={x(s.t)} x2={x(s.t)} y1={PAD.top} y2={height - PAD.bottom} />
            <path d={`M${x(s.t) - 4},${PAD.top - 8}h8l-4,7z`}>
              <title>{swapTitle(s)}</title>
            </path>
          </g>
        ))}
        {list.length === 0 && (
          <text
            class="chart-empty"
            x={(LABEL_W + width) / 2}
            y={PAD.top + LANE / 2 + 4}
            text-anchor="middle"
          >
            No model was loaded in the last 30 minutes
          </text>
        )}
        <TimeAxis x={x} from={from} to={now} y={height - 6} />
      </svg>
      <figcaption class="legend">
        <span>
          <i class="key bar-loading" /> loading
        </span>
        <span>
          <i class="key series-0" /> resident
        </span>
        <span>
          <i class="key tick-key" /> request
        </span>
        <span>▾ swap (hover for its cause)</span>
      </figcaption>
    </figure>
  );
}

/** A line per model over the window's buckets (request rate, TTFT). */
export function LineChart(props: {
  testid: string;
  label: string;
  starts: number[];
  series: Series[];
  models: string[];
  format: (v: number) => string;
  /** What the legend says of a model over the whole span. */
  legend: (model: string) => string;
  from: number;
  now: number;
}) {
  const { testid, label, starts, series, models, format, legend, from, now } = props;
  const box = useRef<HTMLElement>(null);
  const width = useWidth(box);
  const max = Math.max(
    0,
    ...series.flatMap((s) => s.values.filter((v): v is number => v !== null)),
  );
  const top = max > 0 ? max * 1.1 : 1;
  const x = linear(from, now, PAD.left, width - PAD.right);
  const y = linear(0, top, HEIGHT - PAD.bottom, PAD.top);
  return (
    <figure class="chart" ref={box}>
      <figcaption class="chart-title">{label}</figcaption>
      <svg
        data-testid={testid}
        width={width}
        height={HEIGHT}
        role="img"
        aria-label={`${label}, over time`}
      >
        <ValueAxis y={y} max={top} left={PAD.left} right={width - PAD.right} format={format} />
        {series.map((s) => {
          const colour = seriesClass(Math.max(0, models.indexOf(s.model)));
          return (
            <g key={s.model}>
              <path class={`series-line ${colour}`} d={linePath(starts, s.values, x, y)}>
                <title>{s.model}</title>
              </path>
              {/* A minute on its own is a point, not a line: a dot for every value. */}
              {s.values.map((v, i) =>
                v === null ? null : (
                  <circle
                    key={starts[i]}
                    class={`series-dot ${colour}`}
                    cx={x(starts[i]!)}
                    cy={y(v)}
                    r={2.5}
                  >
                    <title>{`${s.model} ${clock(starts[i]!)}: ${format(v)}`}</title>
                  </circle>
                ),
              )}
            </g>
          );
        })}
        {series.length === 0 && (
          <text class="chart-empty" x={width / 2} y={HEIGHT / 2} text-anchor="middle">
            No requests in the last 30 minutes
          </text>
        )}
        <TimeAxis x={x} from={from} to={now} y={HEIGHT - 6} />
      </svg>
      <figcaption class="legend">
        {series.map((s) => (
          <span key={s.model}>
            <i class={`key ${seriesClass(Math.max(0, models.indexOf(s.model)))}`} /> {s.model}{" "}
            <b class="num">{legend(s.model)}</b>
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
