/**
 * The residency timeline: a lane per model, loading hatched and resident solid, requests as
 * ticks, swaps marked at the top with their causes on hover (SVG `<title>`) — thrashing shows at
 * a glance.
 */
import { useRef } from "preact/hooks";
import { type Lane, lanes, linear, swapTitle } from "../charts.ts";
import type { History, RequestRecord } from "../wire.ts";
import { clock, modelOrder, PAD, seriesClass, TimeAxis, useWidth } from "./chart-parts.tsx";

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
