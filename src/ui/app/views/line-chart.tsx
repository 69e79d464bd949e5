/** A line per model over time (request rate, TTFT), with a dot per value: a lone one shows too. */
import { useRef } from "preact/hooks";
import { linear, linePath, type Series } from "../charts.ts";
import { clock, HEIGHT, PAD, seriesClass, TimeAxis, useWidth, ValueAxis } from "./chart-parts.tsx";

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
