/** Pieces the pages share: state badges, progress bars, the VRAM bar. */
import { gb, percent } from "../format.ts";
import type { ModelState, Status } from "../wire.ts";

export function StateBadge({ state }: { state: ModelState }) {
  return <span class={`badge state-${state}`}>{state}</span>;
}

/** A bar for a fraction, or an indeterminate one (null) with `text` beside it. */
export function Progress(props: {
  value: number | null;
  label: string;
  text?: string | undefined;
}) {
  const { value, label, text } = props;
  return (
    <span class="progress-wrap">
      <progress class="progress" max={1} value={value ?? undefined} aria-label={label} />
      <span class="num">{text ?? (value === null ? "…" : percent(value))}</span>
    </span>
  );
}

export interface Segment {
  label: string;
  gb: number;
  kind: string;
}

/**
 * The bar itself: stacked segments over `scale` GB, and marks (ceiling, budget) at their place;
 * `summary` says it all for a screen reader.
 */
export function BarTrack(props: {
  segments: readonly Segment[];
  marks: readonly { kind: string; gb: number }[];
  scale: number;
  summary: string;
}) {
  const { segments, marks, scale, summary } = props;
  const pct = (v: number) => `${scale > 0 ? Math.min(100, (v / scale) * 100) : 0}%`;
  return (
    <div class="vram-bar" role="img" aria-label={summary}>
      {segments.map((s) => (
        <span
          key={s.label}
          class={`seg seg-${s.kind}`}
          style={{ width: pct(s.gb) }}
          title={`${s.label}: ${gb(s.gb)}`}
        />
      ))}
      {marks
        .filter((m) => m.gb > 0)
        .map((m) => (
          <span key={m.kind} class={`mark mark-${m.kind}`} style={{ left: pct(m.gb) }} />
        ))}
    </div>
  );
}

/**
 * The VRAM picture: qm's loaded models (by their estimates) and other programs' use (the GPU
 * reading), stacked over the card (or the budget when there is no reading), with the budget and
 * the ceiling marked. Every figure is also in the legend, so nothing is read from colour alone.
 */
export function VramBar({ status, detailed }: { status: Status; detailed?: boolean }) {
  const r = status.resources;
  const gpu = r.gpu;
  const loaded = status.models.filter(
    // A sleeping model (evict = "sleep") has let go of its GPU memory.
    // A managed node's models hold the node's memory, not this box's.
    (m) =>
      m.state !== "stopped" &&
      m.state !== "failed" &&
      m.state !== "sleeping" &&
      m.est_vram_gb > 0 &&
      m.node === undefined,
  );
  const segments: Segment[] = loaded.map((m) => ({
    label: m.id,
    gb: m.est_vram_gb,
    kind: m.state === "ready" ? "model" : "model-busy",
  }));
  if (gpu && gpu.foreign_gb > 0) {
    segments.push({ label: "other programs", gb: gpu.foreign_gb, kind: "foreign" });
  }
  const scale = Math.max(
    gpu?.total_gb ?? 0,
    r.vram_budget_gb,
    r.vram_ceiling_gb,
    segments.reduce((n, s) => n + s.gb, 0),
  );
  if (scale <= 0) {
    return (
      <p class="muted">
        No VRAM budget is set and there is no GPU reading ({r.probe || "no probe"}).
      </p>
    );
  }
  // From the same model list as the segments (an event may have moved it since the status).
  const used = loaded.reduce((n, m) => n + m.est_vram_gb, 0);
  const summary =
    `VRAM: ${gb(used)} estimated for qm's models` +
    (gpu ? `, ${gb(gpu.foreign_gb)} used by other programs, of ${gb(gpu.total_gb)}` : "") +
    `; ceiling ${gb(r.vram_ceiling_gb)}, budget ${gb(r.vram_budget_gb)}`;
  return (
    <figure class="vram">
      <BarTrack
        segments={segments}
        marks={[
          { kind: "ceiling", gb: r.vram_ceiling_gb },
          { kind: "budget", gb: r.vram_budget_gb },
        ]}
        scale={scale}
        summary={summary}
      />
      <figcaption class="legend">
        <span>
          <i class="key seg-model" /> qm's models <b class="num">{gb(used)}</b>
        </span>
        {gpu && (
          <span>
            <i class="key seg-foreign" /> other programs <b class="num">{gb(gpu.foreign_gb)}</b>
          </span>
        )}
        {gpu && (
          <span>
            qm's processes (measured) <b class="num">{gb(gpu.ours_gb)}</b>
          </span>
        )}
        {gpu && (
          <span>
            used (GPU) <b class="num">{gb(gpu.used_gb)}</b> of <b class="num">{gb(gpu.total_gb)}</b>
          </span>
        )}
        <span>
          <i class="key mark-ceiling" /> ceiling <b class="num">{gb(r.vram_ceiling_gb)}</b>
        </span>
        <span>
          <i class="key mark-budget" /> budget <b class="num">{gb(r.vram_budget_gb)}</b>
        </span>
        {detailed &&
          segments
            .filter((s) => s.kind !== "foreign")
            .map((s) => (
              <span key={s.label}>
                {s.label} <b class="num">{gb(s.gb)}</b>
              </span>
            ))}
      </figcaption>
    </figure>
  );
}
