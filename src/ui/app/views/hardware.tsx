/** The Hardware page: the VRAM picture, the GPU reading and RAM. */
import { duration, gb, NONE } from "../format.ts";
import type { Status } from "../wire.ts";
import { VramBar } from "./bits.tsx";

export function HardwarePage({ status }: { status: Status | null }) {
  if (!status) return <p class="muted">Reading qm's status…</p>;
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
          <caption>GPU reading (nvidia-smi)</caption>
          <tbody>
            {gpu ? (
              <>
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
