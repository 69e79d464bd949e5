/**
 * Darwin (macOS): no /proc and no prctl. The process table comes from `ps`, listening
 * sockets and their holders from `lsof` (when installed; it ships with macOS), memory from
 * `sysctl`. There is no child subreaper, and the death watch is not used yet: each model leads its own
 * process group, which qm signals as a whole, and the run file covers a qm that was killed
 * (docs/security.md says what is weaker).
 */
import { type CommandOutput, type CommandRunner, realCommands } from "../command.ts";
import { type MaskedSignal, maskHas } from "../signal-mask.ts";
import type { Platform, ProcEntry, ProcFs } from "../types.ts";
import { isLocalHost, LSOF_LISTEN_ARGS, parseLsof } from "./lsof.ts";
import { PS_FIELDS, parsePs, parsePsEnvironment } from "./ps.ts";
import { parseSysctl, SYSCTL_NAMES, unifiedBudget } from "./sysctl.ts";

export interface DarwinOptions {
  commands?: CommandRunner;
  /** `process.arch`. */
  arch?: string;
  /** This process's pid (whose ignored signals are asked for). */
  pid?: number;
}

const table = (out: CommandOutput | null): ProcEntry[] =>
  out !== null && out.code === 0 ? parsePs(out.stdout) : [];

export function darwinProcs(run: CommandRunner): ProcFs {
  let available: boolean | undefined;
  /** Environments by pid, read at most once after each `list()` (one `ps` for all). */
  let environments: Map<number, string[]> | null = null;
  /** pid → its listening sockets, from the last `listeners()`. */
  let sockets = new Map<number, Set<string>>();
  const list = (entries: ProcEntry[]) => {
    environments = null;
    return entries;
  };
  return {
    get available() {
      available ??= run.sync(["ps", "-o", "pid=", "-p", "1"])?.code === 0;
      return available;
    },
    listenersComplete: false,
    list: () => list(table(run.sync(["ps", "-ax", "-o", PS_FIELDS]))),
    listAsync: async () => list(table(await run.async(["ps", "-ax", "-o", PS_FIELDS]))),
    entry(pid) {
      const found = table(run.sync(["ps", "-o", PS_FIELDS, "-p", String(pid)]));
      return found.find((e) => e.pid === pid) ?? null;
    },
    environ(pid) {
      if (environments === null) {
        const out = run.sync(["ps", "-axwwE", "-o", "pid=,command="]);
        environments = out === null ? new Map() : parsePsEnvironment(out.stdout);
      }
      return environments.get(pid) ?? null;
    },
    socketInodes: (pid) => sockets.get(pid) ?? new Set(),
    listeners() {
      const out = run.sync(["lsof", ...LSOF_LISTEN_ARGS]);
      const found = out === null ? [] : parseLsof(out.stdout);
      sockets = new Map();
      return found.map((l) => {
        const inode = `${l.pid}/${l.fd}`;
        const mine = sockets.get(l.pid) ?? new Set<string>();
        mine.add(inode);
        sockets.set(l.pid, mine);
        return { port: l.port, inode, local: isLocalHost(l.host) };
      });
    },
  };
}

export function darwinPlatform(opts: DarwinOptions = {}): Platform {
  const run = opts.commands ?? realCommands;
  const procs = darwinProcs(run);
  const sysctl = () => {
    const out = run.sync(["sysctl", ...SYSCTL_NAMES]);
    return out === null ? new Map<string, string>() : parseSysctl(out.stdout);
  };
  let lsof: boolean | undefined;
  return {
    name: "darwin",
    procs,
    becomeSubreaper: () => ({
      ok: false,
      why: "macOS has no child subreaper; each model's process group stands in for it",
      byDesign: true,
    }),
    reapChild: () => false,
    // Not yet run on macOS: its models' groups outlive a killed qm (docs/security.md).
    deathWatch: false,
    // Orphans go to launchd, which reaps them at once: a group that kill(2) still finds has
    // members that run.
    groupRunning: () => true,
    // Not yet run on macOS (its libc's execve through bun:ffi is untested there).
    execSelf: () => "not available on macOS yet",
    signalIgnored(signal: MaskedSignal) {
      // `sigignore`: the ignored-signal mask in hex (BSD ps; Linux's SigIgn).
      const out = run.sync(["ps", "-o", "sigignore=", "-p", String(opts.pid ?? process.pid)]);
      return out !== null && out.code === 0 && maskHas(out.stdout, signal);
    },
    memInfo: () => null,
    residentBytes: () => null,
    memory() {
      const total = Number(sysctl().get("hw.memsize"));
      return Number.isFinite(total) && total > 0
        ? { totalBytes: total, availableBytes: null }
        : null;
    },
    unifiedGpuBudget: () => unifiedBudget(sysctl()),
    portHint: (port) => `lsof -nP -iTCP:${port} -sTCP:LISTEN`,
    report() {
      lsof ??= run.sync(["lsof", "-v"]) !== null;
      return {
        name: `darwin-${opts.arch ?? process.arch}`,
        subreaper: false,
        deathWatch: false,
        processTable: procs.available,
        portHolders: lsof,
      };
    },
  };
}
