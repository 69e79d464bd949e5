/** An in-memory process table for the tracking logic: processes, environments, sockets, listeners. */
import type { ProcEntry, ProcFs, TcpListener } from "../../src/platform/types.ts";

export class FakeProc implements ProcFs {
  available = true;
  /** Like Linux's /proc: every listener of the box is seen. */
  listenersComplete = true;
  readonly procs = new Map<number, ProcEntry>();
  readonly envs = new Map<number, string[]>();
  readonly sockets = new Map<number, Set<string>>();
  tcp: TcpListener[] = [];

  /** Adds (or replaces) a process; defaults: its own group and session, started at tick 1. */
  add(pid: number, over: Partial<ProcEntry> = {}, env?: string[]): ProcEntry {
    const e: ProcEntry = {
      pid,
      ppid: 1,
      pgrp: pid,
      session: pid,
      state: "S",
      start: 1,
      comm: `p${pid}`,
      ...over,
    };
    this.procs.set(pid, e);
    if (env) this.envs.set(pid, env);
    return e;
  }

  remove(pid: number): void {
    this.procs.delete(pid);
    this.envs.delete(pid);
  }

  list(): ProcEntry[] {
    return [...this.procs.values()].map((e) => ({ ...e }));
  }
  entry(pid: number): ProcEntry | null {
    const e = this.procs.get(pid);
    return e ? { ...e } : null;
  }
  environ(pid: number): string[] | null {
    return this.envs.get(pid) ?? null;
  }
  socketInodes(pid: number): Set<string> | null {
    return this.procs.has(pid) ? (this.sockets.get(pid) ?? new Set()) : null;
  }
  listeners(): TcpListener[] {
    return this.tcp;
  }
}
