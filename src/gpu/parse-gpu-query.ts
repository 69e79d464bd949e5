/**
 * Parses `nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,memory.free
 * --format=csv,noheader,nounits`. One line per GPU, e.g.
 * `0, GPU-5f1c…, NVIDIA GeForce RTX 4090, 24564, 18234, 5933`. Since R470-era drivers
 * part of the card is reserved by the driver (`memory.reserved`), so used + free may be
 * less than total; nothing here assumes they add up.
 */
import { csvFields, csvLines, isUnavailable, parseCount, quote } from "./csv-line.ts";
import { smiFailure } from "./parse-smi-failure.ts";
import type { GpuInfo, Parsed } from "./types.ts";

export const GPU_QUERY_FIELDS = "index,uuid,name,memory.total,memory.used,memory.free";

export function parseGpuQuery(text: string): Parsed<GpuInfo[]> {
  const failure = smiFailure(text);
  if (failure) return { ok: false, reason: failure };
  const lines = csvLines(text);
  if (lines.length === 0) return { ok: false, reason: "nvidia-smi listed no GPU" };
  const gpus: GpuInfo[] = [];
  for (const line of lines) {
    const row = parseRow(line);
    if (!row.ok) return row;
    gpus.push(row.value);
  }
  return { ok: true, value: gpus };
}

function parseRow(line: string): Parsed<GpuInfo> {
  const f = csvFields(line);
  if (f.length < 6) return notUnderstood(line);
  // A name is the one free-text field; should it ever hold a comma, the fields around it
  // are still fixed, so rejoin the middle.
  const name = f.slice(2, f.length - 3).join(", ");
  const [indexF, uuid] = f as [string, string];
  const [totalF, usedF, freeF] = f.slice(-3) as [string, string, string];
  const index = parseCount(indexF);
  if (index === null || !/^GPU-/i.test(uuid)) return notUnderstood(line);
  const unavailable = [totalF, usedF, freeF].find(isUnavailable);
  if (unavailable !== undefined) {
    // Unified-memory parts (Jetson, GB10/DGX Spark) and some vGPU setups report no
    // framebuffer figures at all.
    return {
      ok: false,
      reason: `GPU ${index} (${name}) does not report its memory (nvidia-smi: ${unavailable})`,
    };
  }
  const totalMib = parseCount(totalF);
  const usedMib = parseCount(usedF);
  const freeMib = parseCount(freeF);
  if (totalMib === null || usedMib === null || freeMib === null) return notUnderstood(line);
  if (usedMib > totalMib || freeMib > totalMib) {
    return { ok: false, reason: `GPU ${index} reports impossible memory figures: ${quote(line)}` };
  }
  return { ok: true, value: { index, uuid, name, totalMib, usedMib, freeMib } };
}

function notUnderstood(line: string): Parsed<never> {
  return { ok: false, reason: `nvidia-smi output not understood: ${quote(line)}` };
}

/** A GPU whose memory nvidia-smi does not report: a unified-memory part. */
export interface UnifiedGpu {
  index: number;
  uuid: string;
  name: string;
}

/**
 * The GPUs of a `--query-gpu` answer whose memory figures all read `[N/A]`/`[Not Supported]`
 * (Jetson, GB10/DGX Spark: the GPU uses the system's memory). Null unless every row is such a
 * GPU; a row with one unreadable field among numbers (`[Unknown Error]`) is a fault, not this.
 */
export function parseUnifiedGpus(text: string): UnifiedGpu[] | null {
  if (smiFailure(text)) return null;
  const lines = csvLines(text);
  if (lines.length === 0) return null;
  const gpus: UnifiedGpu[] = [];
  for (const line of lines) {
    const f = csvFields(line);
    if (f.length < 6) return null;
    const memory = f.slice(-3);
    if (!memory.every((m) => /^\[?(N\/A|Not Supported)\]?$/i.test(m))) return null;
    const index = parseCount(f[0]!);
    if (index === null || !/^GPU-/i.test(f[1]!)) return null;
    gpus.push({ index, uuid: f[1]!, name: f.slice(2, f.length - 3).join(", ") });
  }
  return gpus;
}
