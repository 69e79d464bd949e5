/**
 * The last check before starting a model: is there room on the card right now? The
 * budget says what *should* fit; this says what *does*, from nvidia-smi's memory.free.
 * Starting into too little memory either fails minutes later or, worse, spills silently
 * into shared memory (WDDM) and crawls.
 */

import type { GpuReading } from "./types.ts";
import { fmtGb, mibToGb } from "./units.ts";

export interface SpawnRequest {
  /** Model id, for the message. */
  model: string;
  /** `est_vram_gb`; 0 or less = unknown, which this guard cannot judge. */
  estimateGb: number;
  /** `oom_guard_reserve_gb`. */
  reserveGb: number;
  /** GPU indexes the model will use; default all (llama.cpp splits across every card). */
  gpuIndexes?: readonly number[];
}

export type SpawnVerdict = { ok: true } | { ok: false; message: string };

export function spawnGuard(reading: GpuReading, req: SpawnRequest): SpawnVerdict {
  if (!(req.estimateGb > 0)) return { ok: true };
  const gpus = req.gpuIndexes
    ? reading.gpus.filter((g) => req.gpuIndexes!.includes(g.index))
    : reading.gpus;
  if (gpus.length === 0) {
    return {
      ok: false,
      message: `cannot start ${req.model}: nvidia-smi lists no GPU ${req.gpuIndexes?.join(",")}`,
    };
  }
  const freeGb = mibToGb(gpus.reduce((s, g) => s + g.freeMib, 0));
  const totalGb = mibToGb(gpus.reduce((s, g) => s + g.totalMib, 0));
  const needGb = req.estimateGb + Math.max(0, req.reserveGb);
  if (freeGb >= needGb) return { ok: true };
  const where =
    gpus.length === 1 ? `GPU ${gpus[0]!.index}` : `GPUs ${gpus.map((g) => g.index).join(",")}`;
  return {
    ok: false,
    message:
      `cannot start ${req.model} now: it needs ${fmtGb(req.estimateGb)} GB (est_vram_gb) + ` +
      `${fmtGb(req.reserveGb)} GB reserve (oom_guard_reserve_gb), but nvidia-smi reports ` +
      `${fmtGb(freeGb)} GB free of ${fmtGb(totalGb)} GB on ${where}`,
  };
}
