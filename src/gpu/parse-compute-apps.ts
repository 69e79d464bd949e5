/**
 * Parses `nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory
 * --format=csv,noheader,nounits`. One line per (process, GPU) pair: a process using two
 * cards appears twice. No compute processes → empty output (older drivers may print
 * "No running processes found"). Only compute (CUDA) contexts are listed; graphics
 * clients such as Xorg are not, so their memory lands in "foreign", as it should.
 * Under WDDM (Windows, WSL) and on some consumer drivers per-process memory reads
 * `[N/A]` or `[Not Supported]`; that becomes `usedMib: null`, and whether it matters is
 * decided by the attribution, not here.
 */
import { csvFields, csvLines, isUnavailable, parseCount, quote } from "./csv-line.ts";
import { smiFailure } from "./parse-smi-failure.ts";
import type { ComputeApp, Parsed } from "./types.ts";

export const COMPUTE_APPS_FIELDS = "pid,gpu_uuid,used_memory";

export function parseComputeApps(text: string): Parsed<ComputeApp[]> {
  const failure = smiFailure(text);
  if (failure) return { ok: false, reason: failure };
  const apps: ComputeApp[] = [];
  for (const line of csvLines(text)) {
    if (/^No running (compute )?processes found/i.test(line)) continue;
    const f = csvFields(line);
    const pid = f.length === 3 ? parseCount(f[0]!) : null;
    const gpuUuid = f[1] ?? "";
    const memF = f[2] ?? "";
    if (pid === null || !Number.isInteger(pid) || !/^(GPU|MIG)-/i.test(gpuUuid)) {
      return { ok: false, reason: `nvidia-smi output not understood: ${quote(line)}` };
    }
    if (isUnavailable(memF)) {
      apps.push({ pid, gpuUuid, usedMib: null });
      continue;
    }
    const usedMib = parseCount(memF);
    if (usedMib === null) {
      return { ok: false, reason: `nvidia-smi output not understood: ${quote(line)}` };
    }
    apps.push({ pid, gpuUuid, usedMib });
  }
  return { ok: true, value: apps };
}
