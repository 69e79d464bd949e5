/** The kinds of GPU the probe tells apart, named for people (the log, `qm doctor`). */
import type { GpuKind } from "./types.ts";

export const GPU_KIND_NAMES: Record<GpuKind, string> = {
  nvidia: "NVIDIA (nvidia-smi)",
  "nvidia-unified": "NVIDIA with unified memory (nvidia-smi; memory from /proc/meminfo)",
  amd: "AMD (sysfs)",
  apple: "Apple silicon (no live reading yet: static budget)",
  none: "none found (static budget)",
};
