/**
 * Memory over time, one chart per card: each of qm's models, qm's memory not yet told apart,
 * other programs and free, stacked; the budget and the live ceiling as lines; every figure also
 * in the legend and the chart's label, never in colour alone.
 */
import { useRef } from "preact/hooks";
import { linear, type MemoryStack, memoryStack, stackPaths, stepPath } from "../charts.ts";
import { gb } from "../format.ts";
import type { History } from "../wire.ts";
import {
  HEIGHT,
  modelOrder,
  PAD,
  seriesClass,
  TimeAxis,
  useWidth,
  ValueAxis,
} from "./chart-parts.tsx";

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
