/**
 * The one place qm tells operating systems apart (src/platform/design.md). The platform is
 * chosen once, from `process.platform`, when this module loads; code that needs another one
 * (a test of the Darwin paths on a Linux box) builds it with `platformFor` and passes it in.
 */
import { type DarwinOptions, darwinPlatform } from "./darwin/index.ts";
import { type LinuxOptions, linuxPlatform } from "./linux/index.ts";
import { otherPlatform } from "./other.ts";
import type { Platform } from "./types.ts";

export type { CommandOutput, CommandRunner } from "./command.ts";
export type { MaskedSignal } from "./signal-mask.ts";
export type {
  MemoryTotals,
  Platform,
  PlatformReport,
  ProcEntry,
  ProcFs,
  SubreaperResult,
  TcpListener,
  UnifiedGpuBudget,
} from "./types.ts";

export function platformFor(name: string, opts: LinuxOptions & DarwinOptions = {}): Platform {
  if (name === "linux") return linuxPlatform(opts);
  if (name === "darwin") return darwinPlatform(opts);
  return otherPlatform(name, opts.arch);
}

/** This process's platform. */
export const platform: Platform = platformFor(process.platform);

/** The box's memory (Linux /proc/meminfo fields in bytes), for the GPU probe on unified boxes. */
export function memInfo(): Map<string, number> | null {
  return platform.memInfo();
}

/** qm's own identity: pid and start time, which together outlive pid reuse. */
export function selfIdentity(p: Platform = platform): { pid: number; start: number } {
  return { pid: process.pid, start: p.procs.entry(process.pid)?.start ?? 0 };
}
