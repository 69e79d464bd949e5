/** What every probe shares: its options, qm's process trees, and how a reading is told. */
import type { MemoryTotals } from "../platform/index.ts";
import type { Timers } from "../shared/timer.ts";
import type { attribute } from "./attribute.ts";
import { type ProcessTree, procTree } from "./process-tree.ts";
import type { RssReader } from "./rss.ts";
import type { GpuKind, ProbeResult } from "./types.ts";

export const DEFAULT_PROBE_TIMEOUT_MS = 2000;
export const SUFFIX = ": static budget applies";

export interface ProbeOptions {
  /** `resources.gpu_probe`: "auto", "amd", "unified", "off", or an nvidia-smi command. */
  command: string;
  /** Pids of the model processes qm started that should be on the GPU (ready models). */
  ourPids?: readonly number[];
  /**
   * Pids of qm's other model processes (starting, stopping, just exited): their memory is
   * ours when nvidia-smi lists them, but they need not be listed for the reading to count.
   */
  transientPids?: readonly number[];
  timeoutMs?: number;
  /** How to expand `ourPids` to their descendants; defaults to reading /proc. */
  processTree?: ProcessTree;
  /** The commands' deadline runs on these; default real. */
  timers?: Timers;
  /** Where AMD cards are read: default `$QM_SYSFS_ROOT` or `/sys`. */
  sysfsRoot?: string;
  /** The box's memory (unified memory); default the platform's (`systemMemory`, meminfo.ts). */
  memory?: () => MemoryTotals | null;
  /** Resident memory of qm's processes (unified memory); default the platform's. */
  rss?: RssReader;
  /** The nvidia-smi `"auto"` runs; default `nvidia-smi` on PATH. */
  nvidiaSmi?: string;
  /** AMD's per-process tools; default `amd-smi`, then `rocm-smi`. */
  amdSmi?: string;
  rocmSmi?: string;
  /** The platform's name (`darwin`, `linux`, …), to name Apple silicon; default this one's. */
  platform?: string;
}

/** The pids whose memory is qm's: every live model process and what descends from it. */
export function ourTree(opts: ProbeOptions): Promise<ReadonlySet<number>> {
  const roots = [...(opts.ourPids ?? []), ...(opts.transientPids ?? [])];
  return (opts.processTree ?? procTree())(roots);
}

/**
 * A reading, or why not. When per-process attribution failed only because none of qm's running
 * models is listed, the cards' figures still come along (`unattributed`, every byte foreign), so
 * the runtime can attribute by change instead.
 */
export function attributed(
  r: ReturnType<typeof attribute>,
  kind: GpuKind,
  unlisted: () => ReturnType<typeof attribute>,
): ProbeResult {
  if (r.ok) return { ok: true, reading: { ...r.value, kind } };
  const raw = unlisted();
  return {
    ok: false,
    kind,
    reason: r.reason + SUFFIX,
    ...(raw.ok ? { unattributed: { ...raw.value, kind } } : {}),
  };
}
