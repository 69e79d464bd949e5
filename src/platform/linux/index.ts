/**
 * Linux: /proc for the process table, the sockets and memory (proc(5)); prctl for the child
 * subreaper and waitpid for its zombies (libc.ts); /bin/sh for the death watch
 * (src/process/death-watch.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import type { MaskedSignal } from "../signal-mask.ts";
import type { Platform } from "../types.ts";
import { becomeSubreaper, canBeSubreaper, execProgram, reapChild } from "./libc.ts";
import { parseMeminfo } from "./meminfo.ts";
import { procFs } from "./proc-fs.ts";
import { ignoredInStatus, vmRssInStatus } from "./signals.ts";

export interface LinuxOptions {
  /** Where /proc is (a recorded tree in tests). */
  root?: string;
  /** Where the death watch's shell is; default /bin/sh. */
  shell?: string;
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
  const deathWatch = existsSync(opts.shell ?? "/bin/sh");
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
     * models: a watcher process does (src/process/death-watch.ts), where there is a shell.
     */
    deathWatch,
    /**
     * A killed child reparented to init stays a zombie until init reaps it (some container
     * inits take their time) and keeps its group "existing" for kill(2); zombies hold no
     * memory, files or ports, so only members that still run count.
     */
    groupRunning(pgid) {
      if (!procs.available) return true; // no procfs: trust kill(2)
      return procs.list().some((e) => e.pgrp === pgid && e.state !== "Z" && e.state !== "X");
    },
    execSelf(env) {
      // The command line exactly as this process got it (the runtime's own flags included),
      // and the program by its inode: right even if the file was replaced since it started.
      const cmdline = read(`${root}/self/cmdline`);
      if (cmdline === null || cmdline === "") return `cannot read ${root}/self/cmdline`;
      const argv = cmdline.replace(/\0$/, "").split("\0");
      const vars = { ...process.env, ...env };
      const envp = Object.entries(vars).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
      return execProgram(`${root}/self/exe`, argv, envp);
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
      deathWatch,
      processTable: procs.available,
      portHolders: procs.available,
    }),
  };
}
