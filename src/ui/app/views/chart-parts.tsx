/**
 * What the charts share: the history hook, the width of their box, the axes, the series
 * colours. Each chart is an SVG sized in pixels (text never stretches), coloured by CSS
 * variables (light and dark themes).
 */
import type { RefObject } from "preact";
import { useEffect, useState } from "preact/hooks";
import { getJson } from "../api.ts";
import { niceStep, ticks, timeTicks } from "../charts.ts";
import type { History } from "../wire.ts";

const EMPTY: History = { memory: [], residency: [], swaps: [] };
export const HEIGHT = 220;
export const PAD = { left: 46, right: 10, top: 10, bottom: 22 };

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
export function useWidth(ref: RefObject<HTMLElement | null>, fallback = 640): number {
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

export const clock = (t: number) =>
  new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });

/** The time axis of a chart `width` wide, and its labels. */
export function TimeAxis({
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

export function ValueAxis(props: {
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
