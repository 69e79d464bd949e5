/**
 * What qm needs from the operating system that differs between systems, as one small
 * interface (src/platform/design.md): the process table with start times, the listening TCP
 * sockets and their holders, the subreaper (or what stands in for it), whether the death
 * watch can run, which signals were ignored at start, and the memory totals. Linux reads /proc and
 * calls prctl; Darwin runs `ps`, `lsof` and `sysctl`; anything else gets none of it and qm
 * falls back to process groups and bind tests.
 */
import type { MaskedSignal } from "./signal-mask.ts";

/** One process, as the process table shows it. */
export interface ProcEntry {
  pid: number;
  ppid: number;
  pgrp: number;
  /** The session id; where the platform shows none (Darwin), the process group's. */
  session: number;
  /** One letter: R, S, D, Z (zombie), X (dead), … */
  state: string;
  /**
   * When it started, in the platform's own unit (Linux: clock ticks after boot; Darwin:
   * seconds since the epoch). With the pid it names one process for good; compare it only
   * with another reading of the same box.
   */
  start: number;
  comm: string;
}

/** A TCP socket in state LISTEN. */
export interface TcpListener {
  port: number;
  /** Names the socket within one reading: Linux its inode; Darwin "PID/FD" from lsof. */
  inode: string;
  /** Bound to a loopback or wildcard address: what a `http://127.0.0.1:PORT` URL reaches. */
  local: boolean;
}

/** The process table and the listening sockets. */
export interface ProcFs {
  /** Whether the process table can be read at all. */
  readonly available: boolean;
  /**
   * Whether `listeners()` sees every listening socket on the box, whoever holds it (Linux
   * /proc/net/tcp). Where not (Darwin's lsof sees only this user's), a port is judged free by
   * binding it, and `listeners()` only names holders.
   */
  readonly listenersComplete: boolean;
  /** Every process now. */
  list(): ProcEntry[];
  entry(pid: number): ProcEntry | null;
  /**
   * `NAME=value` strings, or null when unreadable (gone, another user's, a zombie). Darwin:
   * every word `ps -E` prints for it, its arguments as well as its environment.
   */
  environ(pid: number): string[] | null;
  /**
   * Names of the sockets the process has open, or null when unreadable. Darwin: its
   * listening TCP sockets as of the last `listeners()` reading, which every caller makes first.
   */
  socketInodes(pid: number): Set<string> | null;
  listeners(): TcpListener[];
  /**
   * `listeners()` without blocking qm while the sockets are read (on some kernels reading
   * /proc/net/tcp takes milliseconds); absent where a platform has only the blocking one.
   */
  listenersAsync?(): Promise<TcpListener[]>;
  /**
   * `list()` without blocking qm while the table is read: a command run (Darwin's `ps`), or
   * /proc read a slice of processes per turn of the event loop (Linux). The periodic scan uses
   * it; a stop's scans use `list()`, which must be current at once.
   */
  listAsync?(): Promise<ProcEntry[]>;
}

/** The box's memory, in bytes. */
export interface MemoryTotals {
  totalBytes: number;
  /** What programs can still get without swapping; null where not read. */
  availableBytes: number | null;
}

/**
 * The GPU memory an `"auto"` budget plans for where the GPU's memory is the system's RAM
 * (Apple Silicon): Metal's working-set limit.
 */
export interface UnifiedGpuBudget {
  bytes: number;
  ramBytes: number;
  /** Where the figure comes from: `iogpu.wired_limit_mb` when set, else Metal's default rule. */
  source: "iogpu.wired_limit_mb" | "default";
}

/** What qm's supervision gets from this platform, for `qm doctor` and the startup log. */
export interface PlatformReport {
  /** `linux-x64`, `darwin-arm64`, … */
  name: string;
  /** Orphaned descendants are reparented to qm (Linux prctl PR_SET_CHILD_SUBREAPER). */
  subreaper: boolean;
  /** A watcher SIGKILLs the models' process groups when qm dies, however it dies (src/process/death-watch.ts). */
  deathWatch: boolean;
  /** Descendants are tracked by a process table (start times included). */
  processTable: boolean;
  /** A port's holder can be named. */
  portHolders: boolean;
}

/**
 * `byDesign`: the platform has no subreaper at all (macOS), as opposed to one that failed
 * (Linux under qemu, or without libc by the usual names).
 */
export type SubreaperResult = { ok: true } | { ok: false; why: string; byDesign: boolean };

export interface Platform {
  /** The `process.platform` value it was made for. */
  readonly name: string;
  readonly procs: ProcFs;
  /**
   * Makes qm the reaper of last resort of its descendants: one whose parent dies is
   * reparented to qm instead of init, so qm still sees and kills it. Where the platform has
   * no such thing, says why; each model then has only its process group and the scans.
   */
  becomeSubreaper(): SubreaperResult;
  /** Reaps `pid` if it is a zombie child of ours (waitpid WNOHANG); true when it was reaped. */
  reapChild(pid: number): boolean;
  /**
   * Whether a watcher process can end the models' groups when qm dies outright
   * (src/process/death-watch.ts: a POSIX shell that reads them from a pipe only qm holds).
   */
  readonly deathWatch: boolean;
  /**
   * Whether any process of group `pgid` still runs, zombies aside (they hold no memory or
   * port); true where the platform cannot tell cheaply, leaving it to kill(2).
   */
  groupRunning(pgid: number): boolean;
  /**
   * Replaces this process with its own command line run again, `env` added to its environment
   * (execve(2) of the running program: the same pid, parent, descriptors and ignored signals).
   * Returns only when it could not, saying why.
   */
  execSelf(env: Readonly<Record<string, string>>): string;
  /** Whether this process ignores `signal` (set before qm installs handlers: `nohup`). */
  signalIgnored(signal: MaskedSignal): boolean;
  memory(): MemoryTotals | null;
  /** Linux's /proc/meminfo in bytes by field (`MemTotal`, `MemAvailable`, …); null elsewhere. */
  memInfo(): Map<string, number> | null;
  /**
   * A process's resident memory in bytes (Linux: `VmRSS` of /proc/PID/status); null when it is
   * gone, unreadable, or the platform has no cheap reading (elsewhere).
   */
  residentBytes(pid: number): number | null;
  /** Where the GPU's memory is unified with RAM (Apple Silicon): what it may use; else null. */
  unifiedGpuBudget(): UnifiedGpuBudget | null;
  /** The command a person runs to see who holds `port`, for messages that cannot name it. */
  portHint(port: number): string;
  report(): PlatformReport;
}
