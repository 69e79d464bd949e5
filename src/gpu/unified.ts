/**
 * Unified memory (Jetson, GB10/DGX Spark, any GPU nvidia-smi lists with `[N/A]` memory): the
 * GPU's memory is the system's, so the card's total and free are `/proc/meminfo`'s `MemTotal`
 * and `MemAvailable`, and qm's share is the resident memory (RSS) of its models' process trees.
 * Everything else in use — other programs, the desktop, the kernel's own — is foreign. Pure.
 */
import { attribute } from "./attribute.ts";
import type { MemInfo } from "./meminfo.ts";
import type { UnifiedGpu } from "./parse-gpu-query.ts";
import type { ComputeApp, GpuInfo, GpuReading, Parsed } from "./types.ts";

const MIB = 1024 * 1024;

export interface UnifiedInput {
  gpus: readonly UnifiedGpu[];
  mem: MemInfo;
  /** qm's process trees (with their roots) and each member's resident bytes. */
  ours: ReadonlySet<number>;
  rss: ReadonlyMap<number, number>;
  expectOurs: boolean;
}

/** One memory for the box: several unified GPUs (rare) share it, so it is read once. */
export function unifiedReading(input: UnifiedInput): Parsed<GpuReading> {
  const first = input.gpus[0];
  if (!first) return { ok: false, reason: "no unified-memory GPU listed" };
  const totalMib = input.mem.totalBytes / MIB;
  const freeMib = input.mem.availableBytes / MIB;
  const card: GpuInfo = {
    index: first.index,
    uuid: first.uuid,
    name: input.gpus.map((g) => g.name).join(", "),
    totalMib,
    usedMib: totalMib - freeMib,
    freeMib,
  };
  const apps: ComputeApp[] = [...input.ours].map((pid) => ({
    pid,
    gpuUuid: first.uuid,
    usedMib: (input.rss.get(pid) ?? 0) / MIB,
  }));
  // Every process of the trees is "listed": a model that has not touched memory yet shows 0.
  const r = attribute({ gpus: [card], apps, ours: input.ours, expectOurs: false });
  return r.ok ? { ok: true, value: { ...r.value, kind: "nvidia-unified" } } : r;
}
