/**
 * The system's memory, which on a unified-memory box (Jetson, GB10) is the GPU's too, as the
 * platform reads it (src/platform: `memory()`; Linux's /proc/meminfo `MemTotal` and
 * `MemAvailable`, Linux 3.14+). `MemAvailable` is the kernel's estimate of what can be had
 * without swapping; `MemFree` alone would count the page cache as used. `QM_PROC_ROOT` points
 * the reading at another /proc, for tests.
 */
import { type MemoryTotals, platform, platformFor } from "../platform/index.ts";

export interface MemInfo {
  totalBytes: number;
  availableBytes: number;
}

/** Total and available, or null when either is unknown or available exceeds the total. */
export function unifiedMemory(m: MemoryTotals | null): MemInfo | null {
  if (!m || m.availableBytes === null || m.availableBytes > m.totalBytes) return null;
  return { totalBytes: m.totalBytes, availableBytes: m.availableBytes };
}

/** Reads the box's memory: this platform's, or with `$QM_PROC_ROOT` a Linux /proc there. */
export function systemMemory(
  env: Record<string, string | undefined> = process.env,
): () => MemoryTotals | null {
  const root = env.QM_PROC_ROOT;
  const on = root ? platformFor("linux", { root }) : platform;
  return () => on.memory();
}
