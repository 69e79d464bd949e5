/**
 * Linux: /proc for the process table, the sockets and memory (proc(5)); prctl for the child
 * subreaper and waitpid for its zombies (libc.ts); util-linux's `setpriv --pdeathsig` for the
 * parent-death signal.
 */
import { readFileSync } from "node:fs";
import type { MaskedSignal } from "../signal-mask.ts";
import type { Platform } from "../types.ts";
import { becomeSubreaper, canBeSubreaper, reapChild } from "./libc.ts";
import { parseMeminfo } from "./meminfo.ts";
import { procFs } from "./proc-fs.ts";
import { ignoredInStatus, vmRssInStatus } from "./signals.ts";

export interface LinuxOptions {
  /** Where /proc is (a recorded tree in tests). */
  root?: string;
  /** Finds a program on PATH; `Bun.which` by default. */
  which?: (program: string) => string | null;
  /** `process.arch`. */
  arch?: string;
}

function read(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

export function linuxPlatform(opts: LinuxOptions = {}): Platform {
  const root = opts.root ?? "/proc";
  const procs = procFs(root);
  const which = opts.which ?? ((p: string) => Bun.which(p));
  let setpriv: string | null | undefined;
  const findSetpriv = () => {
    if (setpriv === undefined) setpriv = which("setpriv");
    return setpriv;
  };
  const memInfo = () => {
    const text = read(`${root}/meminfo`);
    return text === null ? null : parseMeminfo(text);
  };
  return {
    name: "linux",
    procs,
    becomeSubreaper,
    reapChild,
    /**
     * If qm itself is killed outright (SIGKILL, OOM killer), no JavaScript runs to stop its
     * models. The kernel can: a parent-death signal (prctl PR_SET_PDEATHSIG) kills the model
     * the moment qm dies. `setpriv --pdeathsig` sets it and then execs the model's command, so
     * the pid and process group stay the model's own. Without `setpriv`, models run as they
     * are and the run file covers a killed qm.
     */
    withParentDeathSignal(argv) {
      const s = findSetpriv();
      return s ? [s, "--pdeathsig", "KILL", "--", ...argv] : argv;
    },
    /**
     * A killed child reparented to init stays a zombie until init reaps it (some container
     * inits take their time) and keeps its group "existing" for kill(2); zombies hold no
     * memory, files or ports, so only members that still run count.
     */
    groupRunning(pgid) {
      if (!procs.available) return true; // no procfs: trust kill(2)
      return procs.list().some((e) => e.pgrp === pgid && e.state !== "Z" && e.state !== "X");
    },
    signalIgnored(signal: MaskedSignal) {
      const status = read(`${root}/self/status`);
      return status !== null && ignoredInStatus(status, signal);
    },
    memInfo,
    residentBytes(pid) {
      const status = read(`${root}/${pid}/status`);
      return status === null ? null : vmRssInStatus(status);
    },
    memory() {
      const m = memInfo();
      const total = m?.get("MemTotal");
      if (total === undefined) return null;
      return { totalBytes: total, availableBytes: m?.get("MemAvailable") ?? null };
    },
    unifiedGpuBudget: () => null,
    portHint: (port) => `ss -ltnp 'sport = :${port}'`,
    report: () => ({
      name: `linux-${opts.arch ?? process.arch}`,
      subreaper: canBeSubreaper(),
      parentDeathSignal: findSetpriv() !== null,
      processTable: procs.available,
      portHolders: procs.available,
    }),
  };
}
