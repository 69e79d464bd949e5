/**
 * Which processes hold memory on AMD cards, from the tools ROCm installs:
 *
 * - `amd-smi process --json`: one entry per card, `{"gpu": N, "process_list": [{"process_info":
 *   {"pid", "memory_usage": {"vram_mem": {"value", "unit"}}, …}}]}`; an idle card lists the
 *   string `"No running processes detected"` instead of an object.
 * - `rocm-smi --showpids`: a table after `KFD process information:` (or the line `No KFD PIDs
 *   currently running`), tab-separated
 *   `PID, PROCESS NAME, GPU(s), VRAM USED, SDMA USED, CU OCCUPANCY`, VRAM in bytes and `GPU(s)`
 *   a count of cards, not which: so it places a process only on a box with one card.
 *
 * Parsing never throws: a value, or a reason the output cannot be used.
 */
import type { ComputeApp, GpuInfo, Parsed } from "../types.ts";

const UNITS: Record<string, number> = {
  B: 1,
  KB: 1024,
  KIB: 1024,
  MB: 1024 ** 2,
  MIB: 1024 ** 2,
  GB: 1024 ** 3,
  GIB: 1024 ** 3,
};

/** `{"value": 123, "unit": "MB"}`, `"123 MB"` or a bare byte count → MiB; null if neither. */
function mib(v: unknown): number | null {
  let value: unknown = v;
  let unit = "B";
  if (typeof v === "object" && v !== null) {
    value = (v as { value?: unknown }).value;
    unit = String((v as { unit?: unknown }).unit ?? "B");
  } else if (typeof v === "string") {
    const m = /^\s*([\d.]+)\s*([A-Za-z]*)\s*$/.exec(v);
    if (!m) return null;
    value = Number(m[1]);
    unit = m[2] || "B";
  }
  const scale = UNITS[unit.toUpperCase()];
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || scale === undefined) {
    return null;
  }
  return (value * scale) / 1024 ** 2;
}

export function parseAmdSmiProcesses(text: string, gpus: readonly GpuInfo[]): Parsed<ComputeApp[]> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return { ok: false, reason: "amd-smi process output is not JSON" };
  }
  if (!Array.isArray(doc)) return { ok: false, reason: "amd-smi process output is not a list" };
  const apps: ComputeApp[] = [];
  for (const card of doc) {
    const index = (card as { gpu?: unknown })?.gpu;
    const list = (card as { process_list?: unknown })?.process_list;
    const gpu = gpus.find((g) => g.index === index);
    if (typeof index !== "number" || !Array.isArray(list)) {
      return { ok: false, reason: "amd-smi process output not understood" };
    }
    if (!gpu) continue; // a card sysfs does not report VRAM for
    for (const item of list) {
      const info = (item as { process_info?: unknown })?.process_info ?? item;
      if (typeof info !== "object" || info === null) continue; // "No running processes detected"
      const pid = (info as { pid?: unknown }).pid;
      if (typeof pid !== "number" || !Number.isInteger(pid)) {
        return { ok: false, reason: "amd-smi process output not understood (a pid)" };
      }
      const usage = (info as { memory_usage?: { vram_mem?: unknown } }).memory_usage?.vram_mem;
      apps.push({ pid, gpuUuid: gpu.uuid, usedMib: usage === undefined ? null : mib(usage) });
    }
  }
  return { ok: true, value: apps };
}

export function parseRocmSmiPids(text: string, gpus: readonly GpuInfo[]): Parsed<ComputeApp[]> {
  const at = text.indexOf("KFD process information:");
  if (at < 0) {
    return /No KFD PIDs currently running/i.test(text)
      ? { ok: true, value: [] }
      : { ok: false, reason: "rocm-smi --showpids output not understood" };
  }
  const rows = text
    .slice(at)
    .split(/\r?\n/)
    .slice(1)
    .filter((l) => /^\s*\d+\s/.test(l));
  if (rows.length > 0 && gpus.length !== 1) {
    return {
      ok: false,
      reason: "rocm-smi --showpids does not say which card a process is on (several cards)",
    };
  }
  const apps: ComputeApp[] = [];
  for (const row of rows) {
    const f = row.split("\t").map((x) => x.trim());
    const pid = Number(f[0]);
    const vram = f[3] !== undefined && /^\d+$/.test(f[3]) ? Number(f[3]) : null;
    if (!Number.isInteger(pid) || f.length < 4) {
      return { ok: false, reason: "rocm-smi --showpids output not understood" };
    }
    apps.push({ pid, gpuUuid: gpus[0]!.uuid, usedMib: vram === null ? null : vram / 1024 ** 2 });
  }
  return { ok: true, value: apps };
}
