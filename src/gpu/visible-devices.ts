/**
 * Which variables place a model on its cards (several GPUs: `${GPU_IDS}`). NVIDIA's runtime reads
 * `CUDA_VISIBLE_DEVICES`. ROCm reads `ROCR_VISIBLE_DEVICES` (the one AMD recommends on Linux,
 * ROCm docs "GPU isolation techniques") and then `HIP_VISIBLE_DEVICES` — or its alias
 * `CUDA_VISIBLE_DEVICES` — as indexes *into the devices ROCR left visible*. So on an AMD box the
 * cards go in ROCR's variable and the HIP ones count from 0: setting the card ids in both would
 * make HIP pick card 1 of the one card ROCR shows, i.e. none.
 *
 * The box's kind is what the probe last found (set by the GPU watch; one GPU vendor per box).
 */
import type { GpuKind } from "./types.ts";

let boxKind: GpuKind = "none";

/** The GPU watch found this kind of GPU (AMD cards are placed through ROCm's variables). */
export function setPlacementKind(kind: GpuKind): void {
  boxKind = kind;
}

/** The environment that shows a model only `gpus` (card indexes), on a box of `kind`. */
export function placementEnv(
  gpus: readonly number[],
  kind: GpuKind = boxKind,
): Record<string, string> {
  const ids = gpus.join(",");
  if (kind !== "amd") return { CUDA_VISIBLE_DEVICES: ids };
  const relative = gpus.map((_, i) => i).join(",");
  return {
    ROCR_VISIBLE_DEVICES: ids,
    HIP_VISIBLE_DEVICES: relative,
    CUDA_VISIBLE_DEVICES: relative,
  };
}
