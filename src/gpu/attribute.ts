/**
 * Splits GPU memory into "ours" (processes qm started, and their descendants) and
 * "foreign" (everything else). Pure: the process tree was walked by the caller.
 *
 *   ours    = Σ used_memory of compute apps whose pid is in one of qm's trees
 *   foreign = memory.used − ours, per GPU, never below 0, summed
 *
 * The reading cannot be trusted — and the static budget stands — when qm has models
 * on the GPU but the per-process figures can't see them:
 * - one of our processes is listed with `[N/A]`/`[Not Supported]` memory (WDDM, WSL) —
 *   even a starting one: its memory is ours, and unmeasured it would pass for foreign, or
 * - qm has ready models but none of our processes is listed at all (WSL lists none; inside
 *   a container with its own PID namespace nvidia-smi shows host pids, which never match
 *   ours). A starting model need not be listed yet: it may not have touched the GPU.
 * With no process of ours listed nothing needs attributing: foreign = used, whatever
 * the per-process column says, so the idle baseline can still be learned on WSL.
 */

import { rootIn } from "./process-tree.ts";
import type { CardReading, ComputeApp, GpuInfo, GpuReading, Parsed } from "./types.ts";
import { mibToGb } from "./units.ts";

export interface AttributionInput {
  gpus: GpuInfo[];
  apps: ComputeApp[];
  /** qm's model processes (ready, starting or stopping) and all their descendants. */
  ours: ReadonlySet<number>;
  /** True when qm has a ready model, which must be on the GPU. */
  expectOurs: boolean;
  /** The tool that listed the processes, for the reasons given; default "nvidia-smi". */
  source?: string;
}

export function attribute(input: AttributionInput): Parsed<GpuReading> {
  const { gpus, ours, expectOurs } = input;
  const known = new Set(gpus.map((g) => g.uuid));
  const apps = input.apps.filter((a) => known.has(a.gpuUuid));
  const mine = apps.filter((a) => ours.has(a.pid));
  if (mine.some((a) => a.usedMib === null)) {
    return {
      ok: false,
      reason: "per-process memory not reported by this driver (WDDM/WSL?)",
    };
  }
  if (expectOurs && mine.length === 0) {
    return {
      ok: false,
      reason: `${input.source ?? "nvidia-smi"} lists none of qm's model processes (WSL, or a container with its own PID namespace?)`,
    };
  }
  let totalMib = 0;
  let usedMib = 0;
  let freeMib = 0;
  let oursMib = 0;
  let foreignMib = 0;
  const cards: CardReading[] = [];
  const byRoot = new Map<number, number>();
  for (const gpu of gpus) {
    const listed = mine.filter((a) => a.gpuUuid === gpu.uuid);
    const onThis = listed.reduce((sum, a) => sum + (a.usedMib ?? 0), 0);
    const cardByRoot = new Map<number, number>();
    for (const a of listed) {
      const root = rootIn(ours, a.pid) ?? a.pid;
      const gb = mibToGb(a.usedMib ?? 0);
      cardByRoot.set(root, (cardByRoot.get(root) ?? 0) + gb);
      byRoot.set(root, (byRoot.get(root) ?? 0) + gb);
    }
    cards.push({
      index: gpu.index,
      totalGb: mibToGb(gpu.totalMib),
      usedGb: mibToGb(gpu.usedMib),
      freeGb: mibToGb(gpu.freeMib),
      oursGb: mibToGb(onThis),
      foreignGb: mibToGb(Math.max(0, gpu.usedMib - onThis)),
      ourPids: [...new Set(listed.map((a) => a.pid))].sort((a, b) => a - b),
      ...(cardByRoot.size > 0 ? { byRoot: cardByRoot } : {}),
    });
    totalMib += gpu.totalMib;
    usedMib += gpu.usedMib;
    freeMib += gpu.freeMib;
    oursMib += onThis;
    // used_memory per process and memory.used are sampled a moment apart; a process that
    // just freed memory can make ours exceed used. Clamp rather than report negative.
    foreignMib += Math.max(0, gpu.usedMib - onThis);
  }
  const ourPidsOnGpu = [...new Set(mine.map((a) => a.pid))].sort((a, b) => a - b);
  return {
    ok: true,
    value: {
      gpus,
      apps,
      totalGb: mibToGb(totalMib),
      usedGb: mibToGb(usedMib),
      freeGb: mibToGb(freeMib),
      oursGb: mibToGb(oursMib),
      foreignGb: mibToGb(foreignMib),
      ourPidsOnGpu,
      cards,
      ...(byRoot.size > 0 ? { byRoot } : {}),
    },
  };
}
