/**
 * `/proc/meminfo` (proc(5)): the system's memory, which on a unified-memory box (Jetson, GB10)
 * is the GPU's too. `MemAvailable` (Linux 3.14+) is the kernel's estimate of what can be had
 * without swapping; `MemFree` alone would count the page cache as used. Values are in kB
 * (KiB, despite the unit's name). `QM_PROC_ROOT` replaces `/proc` here, for tests.
 */
import { readFile } from "node:fs/promises";

export interface MemInfo {
  totalBytes: number;
  availableBytes: number;
}

/** MemTotal and MemAvailable, or null when either is missing or not a number. */
export function parseMeminfo(text: string): MemInfo | null {
  const kb = (key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+)\\s*kB\\s*$`, "m").exec(text);
    return m ? Number(m[1]) * 1024 : null;
  };
  const totalBytes = kb("MemTotal");
  const availableBytes = kb("MemAvailable");
  if (totalBytes === null || availableBytes === null || availableBytes > totalBytes) return null;
  return { totalBytes, availableBytes };
}

/** The proc root for meminfo: `$QM_PROC_ROOT` (tests), else `/proc`. */
export function procRoot(env: Record<string, string | undefined> = process.env): string {
  return env.QM_PROC_ROOT || "/proc";
}

/** Reads `<root>/meminfo`; null when it cannot be read or understood (not Linux). */
export async function readMeminfo(root = procRoot()): Promise<MemInfo | null> {
  const text = await readFile(`${root}/meminfo`, "utf8").catch(() => null);
  return text === null ? null : parseMeminfo(text);
}
