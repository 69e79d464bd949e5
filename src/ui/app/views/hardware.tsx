/**
 * The Hardware page: the VRAM picture now, memory over the last 30 minutes and which models were
 * resident when (from `/api/history`), the GPU reading and RAM.
 */
import { timesOf, windowStart } from "../charts.ts";
import { duration, gb, NONE } from "../format.ts";
import { useNow } from "../hooks.ts";
import type { CardStatus, History, RequestRecord, Status } from "../wire.ts";
import { BarTrack, VramBar } from "./bits.tsx";
import { useHistory } from "./chart-parts.tsx";
import { MemoryCharts } from "./memory-chart.tsx";
import { ResidencyTimeline } from "./residency.tsx";

const KINDS: Record<string, string> = {
  nvidia: "NVIDIA",
  "nvidia-unified": "NVIDIA, unified memory",
  amd: "AMD",
  apple: "Apple silicon",
  none: "none found",
};

/** The cards the charts draw: those the history has samples of, each with its memory. */
function chartCards(status: Status, history: History): { index: number; totalGb: number }[] {
  const r = status.resources;
  const seen = [...new Set(history.memory.flatMap((s) => s.cards.map((c) => c.index)))].sort(
    (a, b) => a - b,
  );
  const total = (index: number) =>
    r.gpus?.find((c) => c.index === index)?.reading?.total_gb ??
    (seen.length <= 1 ? (r.gpu?.total_gb ?? 0) : 0);
  return (seen.length > 0 ? seen : [0]).map((index) => ({ index, totalGb: total(index) }));
}

export function HardwarePage(props: { status: Status | null; requests: RequestRecord[] }) {
  const { status, requests } = props;
  const history = useHistory();
  const now = useNow(5000);
  if (!status) return <p class="muted">Reading qm's status…</p>;
  const from = windowStart(now, timesOf(history, requests));
  const r = status.resources;
  const gpu = r.gpu;
  const row = (label: string, value: string) => (
    <tr key={label}>
      <th scope="row">{label}</th>
      <td class="num">{value}</td>
    </tr>
  );
  return (
    <section aria-label="Hardware">
      <h2>VRAM</h2>
      <VramBar status={status} detailed />
      <p class="muted">{r.probe}</p>
      <h2>Memory over time</h2>
      <MemoryCharts history={history} cards={chartCards(status, history)} from={from} now={now} />
      <h2>Residency</h2>
      <ResidencyTimeline history={history} requests={requests} from={from} now={now} />
      {r.gpus && r.gpus.length > 0 && (
        <>
          <h2>Cards</h2>
          {r.gpus.map((c) => (
            <CardBar key={c.index} card={c} status={status} />
          ))}
        </>
      )}
      <div class="cols">
        <table class="kv">
          <caption>qm's accounting</caption>
          <tbody>
            {row("budget", gb(r.vram_budget_gb))}
            {row("ceiling now", gb(r.vram_ceiling_gb))}
            {row("loaded models (estimates)", gb(r.vram_used_gb))}
            {row("RAM budget", gb(r.ram_budget_gb))}
            {row("RAM used (estimates)", gb(r.ram_used_gb))}
          </tbody>
        </table>
        <table class="kv">
          <caption>GPU reading</caption>
          <tbody>
            {row("GPU", KINDS[r.gpu_kind ?? "none"] ?? NONE)}
            {gpu ? (
              <>
                {row(
                  "qm's memory told",
                  r.attribution === "by_change"
                    ? "by change (process ids not visible)"
                    : "by process",
                )}
                {row("total", gb(gpu.total_gb))}
                {row("used", gb(gpu.used_gb))}
                {row("free", gb(gpu.free_gb))}
                {row("qm's processes", gb(gpu.ours_gb))}
                {row("other programs", gb(gpu.foreign_gb))}
                {row(
                  "other programs, idle baseline",
                  gpu.foreign_baseline_gb === null ? NONE : gb(gpu.foreign_baseline_gb),
                )}
              </>
            ) : (
              <tr>
                <td>No trusted reading.</td>
              </tr>
            )}
          </tbody>
        </table>
        <table class="kv">
          <caption>qm</caption>
          <tbody>
            {row("version", status.version)}
            {row("uptime", duration(status.uptime_s * 1000))}
            {row("models", String(status.models.length))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

/** One card's bar: its models' shares (est_vram_gb / cards), other programs, the ceiling. */
function CardBar({ card, status }: { card: CardStatus; status: Status }) {
  const segments = card.models.map((id) => {
    const m = status.models.find((x) => x.id === id);
    const share = m ? m.est_vram_gb / Math.max(1, m.gpus?.length ?? 1) : 0;
    return { label: id, gb: share, kind: m?.state === "ready" ? "model" : "model-busy" };
  });
  const foreign = card.reading?.foreign_gb ?? 0;
  if (foreign > 0) segments.push({ label: "other programs", gb: foreign, kind: "foreign" });
  const scale = Math.max(
    card.reading?.total_gb ?? 0,
    card.budget_gb,
    card.ceiling_gb,
    segments.reduce((n, s) => n + s.gb, 0),
  );
  const summary =
    `GPU ${card.index}: ${gb(card.used_gb)} estimated for ${card.models.join(", ") || "no model"}` +
    `; ceiling ${gb(card.ceiling_gb)}, budget ${gb(card.budget_gb)}`;
  return (
    <figure class="vram">
      <BarTrack
        segments={segments}
        marks={[{ kind: "ceiling", gb: card.ceiling_gb }]}
        scale={scale}
        summary={summary}
      />
      <figcaption class="legend">
        <span>
          GPU <b class="num">{card.index}</b>
        </span>
        <span>
          <i class="key seg-model" /> qm's models <b class="num">{gb(card.used_gb)}</b>
        </span>
        {card.reading && (
          <span>
            used (GPU) <b class="num">{gb(card.reading.used_gb)}</b> of{" "}
            <b class="num">{gb(card.reading.total_gb)}</b>
          </span>
        )}
        <span>
          <i class="key mark-ceiling" /> ceiling <b class="num">{gb(card.ceiling_gb)}</b>
        </span>
        {card.models.map((id) => (
          <span key={id}>{id}</span>
        ))}
      </figcaption>
    </figure>
  );
}
