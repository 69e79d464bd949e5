/**
 * Fields of /proc/PID/status (proc(5)). Which signals a process ignores (`SigIgn`): read before
 * qm installs its own handlers, it tells whether qm was started under `nohup` (SIGHUP
 * ignored). Its resident memory (`VmRSS`): on a unified-memory box a model's share of the GPU.
 */
import { type MaskedSignal, maskHas } from "../signal-mask.ts";

export function ignoredInStatus(status: string, signal: MaskedSignal): boolean {
  const mask = /^SigIgn:\s*([0-9a-fA-F]+)$/m.exec(status)?.[1];
  return mask !== undefined && maskHas(mask, signal);
}

/** `VmRSS` of a status file, in bytes (the kernel's kB is KiB); null when absent (a kernel thread, a zombie). */
export function vmRssInStatus(status: string): number | null {
  const m = /^VmRSS:\s+(\d+)\s*kB\s*$/m.exec(status);
  return m ? Number(m[1]) * 1024 : null;
}
