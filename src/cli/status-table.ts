import type { StatusJson } from "../api/status-json.ts";

/**
 * The state, with a load's progress (`starting 42%`, or seconds so far before a first load), or
 * while it waits to load, how much of its files qm has read ahead (`stopped prefetched 63%`).
 */
function loadCell(m: StatusJson["models"][number]): string {
  const load = m.load;
  // A peer running an older qm sends no `prefetched`.
  const ahead = m.prefetched ?? null;
  if (!load) return ahead === null ? m.state : `${m.state} prefetched ${Math.floor(ahead * 100)}%`;
  return load.progress === null
    ? `${m.state} ${Math.round(load.elapsed_ms / 1000)}s`
    : `${m.state} ${Math.floor(load.progress * 100)}%`;
}

/** The human view of `/api/status`: one row per model, then queue and budget. */
export function renderStatus(s: StatusJson): string {
  const head = ["MODEL", "STATE", "INFLIGHT", "QUEUED", "HOLD", "VRAM GB", "PID", "PORT"];
  const now = Date.now();
  const rows = s.models.map((m) => [
    m.id,
    loadCell(m),
    String(m.inflight),
    String(m.queued),
    m.held_until_ms && m.held_until_ms > now
      ? `${Math.ceil((m.held_until_ms - now) / 1000)}s`
      : "-",
    m.est_vram_gb ? m.est_vram_gb.toFixed(1) : "-",
    m.pid === null ? "-" : String(m.pid),
    m.port === null ? "-" : String(m.port),
  ]);
  const out = table(head, rows);
  for (const m of s.models) {
    if (m.held_reason && m.held_until_ms && m.held_until_ms > now) {
      out.push(`held ${m.id}: ${m.held_reason}`);
    } else if (m.hold_ended?.how === "dropped") {
      out.push(`hold of ${m.id} dropped (${m.hold_ended.reason})`);
    }
  }
  out.push("");
  out.push(`queue: ${s.queue.depth} waiting`);
  for (const [key, models] of waitingByKey(s.waiting ?? [])) {
    out.push(`  ${key} waits for ${models.map(([m, n]) => `${m} (${n})`).join(", ")}`);
  }
  for (const sw of s.swaps) {
    const evict = sw.evict.length ? `, stopping ${sw.evict.join(", ")}` : "";
    out.push(`swap: loading ${sw.target}${evict} (${sw.waiters} waiting)`);
  }
  const r = s.resources;
  out.push(
    r.vram_budget_gb > 0
      ? `vram: ${r.vram_used_gb} GB estimated in use of a ${r.vram_ceiling_gb} GB ceiling (budget ${r.vram_budget_gb} GB)`
      : `vram: no budget set (static group policy); estimated use ${r.vram_used_gb} GB`,
  );
  if (r.gpu) {
    const base =
      r.gpu.foreign_baseline_gb === null ? "not learned yet" : `${r.gpu.foreign_baseline_gb} GB`;
    out.push(
      `gpu: ${r.gpu.used_gb} of ${r.gpu.total_gb} GB used (qm's models ${r.gpu.ours_gb} GB, other programs ${r.gpu.foreign_gb} GB, idle baseline ${base})`,
    );
  }
  for (const c of r.gpus ?? []) {
    const seen = c.reading
      ? `; reads ${c.reading.used_gb} of ${c.reading.total_gb} GB used (qm ${c.reading.ours_gb} GB, others ${c.reading.foreign_gb} GB)`
      : "";
    const on = c.models.length > 0 ? c.models.join(", ") : "no model";
    out.push(
      `gpu ${c.index}: ${c.used_gb} GB estimated in use of a ${c.ceiling_gb} GB ceiling (budget ${c.budget_gb} GB) — ${on}${seen}`,
    );
  }
  out.push(`probe: ${r.probe}`);
  if (r.ram_budget_gb > 0)
    out.push(`ram: ${r.ram_used_gb} GB estimated in use of ${r.ram_budget_gb} GB`);
  if (s.preload) {
    const p = s.preload;
    const parts = [
      p.loading ? `loading ${p.loading}` : "",
      p.pending.length > 0 ? `pending ${p.pending.join(", ")}` : "",
      p.done.length > 0 ? `done ${p.done.join(", ")}` : "",
      p.skipped.length > 0 ? `skipped ${p.skipped.map((x) => x.model).join(", ")}` : "",
    ].filter(Boolean);
    out.push(`preload: ${parts.join("; ") || "nothing"}`);
    for (const x of p.skipped) out.push(`  ${x.model} skipped: ${x.reason}`);
  }
  for (const m of s.models) {
    if (m.last_error) out.push(`${m.id} failed: ${m.last_error.split("\n")[0]}`);
  }
  for (const m of s.models) {
    if (m.restart_pending) {
      out.push(
        `${m.id}: restart pending (a reload changed how it runs; applies on its next start)`,
      );
    }
  }
  if (s.peers && s.peers.length > 0) out.push("", ...fleet(s.peers, now));
  return `${out.join("\n")}\n`;
}

/** Who waits for what: each key's waiting requests by model, in the order they came. */
function waitingByKey(
  waiting: NonNullable<StatusJson["waiting"]>,
): Map<string, [string, number][]> {
  const by = new Map<string, Map<string, number>>();
  for (const w of waiting) {
    const models = by.get(w.key) ?? new Map<string, number>();
    by.set(w.key, models);
    models.set(w.model, (models.get(w.model) ?? 0) + 1);
  }
  return new Map([...by].map(([key, models]) => [key, [...models]]));
}

/** Columns padded to their widest cell, two spaces apart. */
function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [line(head), ...rows.map(line)];
}

/** The other boxes (`[peers.NAME]`): one row each, with what they serve and why one is down. */
function fleet(peers: NonNullable<StatusJson["peers"]>, now: number): string[] {
  const head = ["PEER", "KIND", "STATE", "INFLIGHT", "MODELS", "URL"];
  const rows = peers.map((p) => {
    const until =
      p.down_until_ms !== null && p.down_until_ms > now
        ? ` ${Math.ceil((p.down_until_ms - now) / 1000)}s`
        : "";
    const models = p.models.map((m) => (m.state === "ready" ? `${m.id}*` : m.id)).join(",");
    return [p.name, p.kind, `${p.state}${until}`, String(p.inflight), models || "-", p.url];
  });
  const out = table(head, rows);
  for (const p of peers) {
    if (!p.last_error) continue;
    // A peer back up keeps its last error in status; here it is told as past.
    out.push(
      p.state === "up"
        ? `${p.name} (up again; last error): ${p.last_error}`
        : `${p.name}: ${p.last_error}`,
    );
  }
  for (const p of peers) {
    if (p.can_unload === false) out.push(`${p.name}: cannot unload models (no_loader_config)`);
  }
  out.push("(* loaded and ready on the peer)");
  return out;
}
