/**
 * Linux: /proc for the process table, the sockets and memory (proc(5)); prctl for the child
 * subreaper and waitpid for its zombies (libc.ts); /bin/sh for the death watch
 * (src/process/death-watch.ts).
 */
import { existsSync, readFileSync, readlinkSync, statSync } from "node:fs";
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

/**
 * The running program's file under the name it was started by, so the process keeps its name
 * (`comm`, what `ps` and the port-holder messages show, comes from the file name execve is
 * given: through `/proc/self/exe` every qm would be called "exe"). `argv0` as started (a path,
 * or a name found on PATH), else the link's target, each only while it is still the same file
 * (device and inode); else `/proc/self/exe` itself, which is that file even if it was replaced.
 */
export function programPath(root: string, argv0: string): string {
  const exe = `${root}/self/exe`;
  let running: { dev: number; ino: number };
  try {
    running = statSync(exe);
  } catch {
    return exe;
  }
  const same = (path: string | null | undefined) => {
    if (!path) return false;
    try {
      const other = statSync(path);
      return other.dev === running.dev && other.ino === running.ino;
    } catch {
      return false;
    }
  };
  const started = argv0.includes("/") ? argv0 : Bun.which(argv0, { PATH: process.env.PATH ?? "" });
  if (same(started)) return started as string;
  let target: string | null = null;
  try {
    target = readlinkSync(exe);
  } catch {
    // no link to read: the link itself below
  }
  return same(target) ? (target as string) : exe;
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
      // The command line exactly as this process got it (the runtime's own flags included).
      const cmdline = read(`${root}/self/cmdline`);
      if (cmdline === null || cmdline === "") return `cannot read ${root}/self/cmdline`;
      const argv = cmdline.replace(/\0$/, "").split("\0");
      const vars = { ...process.env, ...env };
      const envp = Object.entries(vars).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
      return execProgram(programPath(root, argv[0] ?? ""), argv, envp);
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
