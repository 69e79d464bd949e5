/** The Logs page: one model's output, live (`/api/models/{id}/logs?follow=1`). */
import { useEffect, useRef, useState } from "preact/hooks";
import { openSse } from "../api.ts";
import { hrefOf } from "../hooks.ts";
import { follow } from "../sse.ts";
import type { Status } from "../wire.ts";

/** Lines kept in the page; older ones are dropped as new ones come. */
export const MAX_LINES = 1000;

export function LogsPage({ status, model }: { status: Status | null; model: string | null }) {
  const ids = status?.models.map((m) => m.id) ?? [];
  const id = model ?? ids[0] ?? null;
  const [lines, setLines] = useState<string[]>([]);
  const [live, setLive] = useState(false);
  const [stick, setStick] = useState(true);
  const box = useRef<HTMLPreElement>(null);

  useEffect(() => {
    if (!id) return;
    setLines([]);
    // Each (re)connection sends the kept lines again: start over on open.
    const path = `/api/models/${encodeURIComponent(id)}/logs?follow=1`;
    return follow((signal) => openSse(path, signal), {
      onOpen: () => {
        setLines([]);
        setLive(true);
      },
      onDrop: () => setLive(false),
      handlers: {
        event: (e) => {
          if (e.event !== "log") return;
          setLines((ls) => {
            const next = ls.length >= MAX_LINES ? ls.slice(ls.length - MAX_LINES + 1) : ls.slice();
            next.push(e.data);
            return next;
          });
        },
      },
    });
  }, [id]);

  useEffect(() => {
    const el = box.current;
    if (el && stick) el.scrollTop = el.scrollHeight;
  }, [lines, stick]);

  return (
    <section aria-label="Logs">
      <div class="toolbar">
        <label>
          Model{" "}
          <select
            value={id ?? ""}
            onChange={(e) => {
              location.hash = hrefOf("logs", e.currentTarget.value);
            }}
          >
            {ids.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
        <label>
          <input
            type="checkbox"
            checked={stick}
            onChange={(e) => setStick(e.currentTarget.checked)}
          />{" "}
          follow the end
        </label>
        <span class={live ? "live on" : "live"}>{live ? "live" : "connecting…"}</span>
        <span class="muted num">{lines.length} lines</span>
      </div>
      <pre
        class="logs"
        ref={box}
        role="log"
        aria-label={`Output of ${id ?? "no model"}`}
        // Focusable, so the keyboard can scroll it (WCAG 2.1.1).
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region
        tabIndex={0}
      >
        {lines.length === 0 ? <span class="muted">(no output yet)</span> : lines.join("\n")}
      </pre>
    </section>
  );
}
