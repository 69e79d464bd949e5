/**
 * A system qm has no reader for (FreeBSD, Windows…): no process table, no subreaper, no
 * memory totals. qm still runs there as it did before it knew platforms: each model in its
 * own process group, ports judged by binding them, and the static budget.
 */
import type { Platform, ProcFs } from "./types.ts";

const nothing: ProcFs = {
  available: false,
  listenersComplete: false,
  list: () => [],
  entry: () => null,
  environ: () => null,
  socketInodes: () => null,
  listeners: () => [],
};

export function otherPlatform(name: string, arch: string = process.arch): Platform {
  return {
    name,
    procs: nothing,
    becomeSubreaper: () => ({ ok: false, why: `not available on ${name}`, byDesign: true }),
    reapChild: () => false,
    deathWatch: false,
    groupRunning: () => true,
    execSelf: () => `not available on ${name}`,
    signalIgnored: () => false,
    memInfo: () => null,
    residentBytes: () => null,
    memory: () => null,
    unifiedGpuBudget: () => null,
    portHint: (port) => `lsof -nP -iTCP:${port} -sTCP:LISTEN`,
    report: () => ({
      name: `${name}-${arch}`,
      subreaper: false,
      deathWatch: false,
      processTable: false,
      portHolders: false,
    }),
  };
}
