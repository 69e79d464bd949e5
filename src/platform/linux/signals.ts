/**
 * Which signals a process ignores: `SigIgn` of /proc/PID/status (proc(5)). Read before qm
 * installs its own handlers, it tells whether qm was started under `nohup` (SIGHUP ignored).
 */
import { type MaskedSignal, maskHas } from "../signal-mask.ts";

export function ignoredInStatus(status: string, signal: MaskedSignal): boolean {
  const mask = /^SigIgn:\s*([0-9a-fA-F]+)$/m.exec(status)?.[1];
  return mask !== undefined && maskHas(mask, signal);
}
