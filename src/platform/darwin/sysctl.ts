/**
 * Memory on Darwin, from sysctl(8):
 *
 *   sysctl hw.memsize hw.optional.arm64 iogpu.wired_limit_mb
 *
 * "NAME: value" lines; a name the system lacks (`iogpu.wired_limit_mb` before macOS 14 and
 * on Intel Macs) is reported on stderr and skipped.
 */
import type { UnifiedGpuBudget } from "../types.ts";

export const SYSCTL_NAMES = ["hw.memsize", "hw.optional.arm64", "iogpu.wired_limit_mb"] as const;

export function parseSysctl(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^([\w.]+): (.*)$/.exec(line.trim());
    if (m) out.set(m[1]!, m[2]!.trim());
  }
  return out;
}

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

/**
 * The GPU memory of an Apple Silicon Mac, whose GPU uses the system's RAM: what Metal lets
 * it wire. `iogpu.wired_limit_mb`, when set above 0 (`sudo sysctl iogpu.wired_limit_mb=N`),
 * is the limit. Otherwise Metal's default `recommendedMaxWorkingSetSize`: about 2/3 of RAM up
 * to 36 GiB and 3/4 above. Null on an Intel Mac (its GPU has memory of its own) or when the
 * RAM size cannot be read.
 */
export function unifiedBudget(values: Map<string, string>): UnifiedGpuBudget | null {
  const ram = Number(values.get("hw.memsize"));
  if (!Number.isFinite(ram) || ram <= 0) return null;
  if (values.get("hw.optional.arm64") !== "1") return null;
  const wired = Number(values.get("iogpu.wired_limit_mb"));
  if (Number.isFinite(wired) && wired > 0) {
    return { bytes: wired * MIB, ramBytes: ram, source: "iogpu.wired_limit_mb" };
  }
  const share = ram <= 36 * GIB ? 2 / 3 : 3 / 4;
  return { bytes: Math.floor(ram * share), ramBytes: ram, source: "default" };
}
