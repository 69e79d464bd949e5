/**
 * Everything a model started, including what left its process group or session (`setsid`
 * children, daemons, workers orphaned by a shell wrapper). A process group signal misses
 * those, so qm keeps, per running model, the set of its descendants as (pid, start time):
 * the start time (Linux: /proc/PID/stat field 22; Darwin: `ps -o lstart`) tells a reused pid
 * apart, and is checked again before every signal. A scan (Linux: one stat read per process;
 * Darwin: one `ps`) runs every second while a model runs, read without blocking qm (Linux: a
 * slice of processes per turn of the event loop), and right before and after each stop (read
 * at once). A process counts as the model's when:
 * - it descends from the leader by parent links, or shares the leader's session or group;
 * - it was recorded under the model before (it keeps counting after being reparented);
 * - it is reparented to qm (qm is a child subreaper, Linux only) and its environment carries
 *   `QM_OWNER=<qm pid>:<qm start>` and `QM_MODEL=<id>`, set on every model qm starts: that
 *   catches a child orphaned between two scans.
 */
import { platform, selfIdentity } from "../platform/index.ts";
import type { ProcEntry, ProcFs } from "../platform/types.ts";
import { delay, every, realTimers, type Timers } from "../shared/timer.ts";
import { liveGroups } from "./process-group.ts";

export interface ProcId {
  pid: number;
  /** Start time in clock ticks after boot; -1 when it could not be read. */
  start: number;
}

export interface WatchedRun {
  model: string;
  port: number | null;
  leader: ProcId;
  descendants: ProcId[];
}

export interface TreeDeps {
  fs: ProcFs;
  self: ProcId;
  kill(pid: number, signal: NodeJS.Signals): void;
  /** waitpid(pid, WNOHANG) on a zombie child of qm. */
  reap(pid: number): boolean;
  /** Pids Bun spawned and has not reaped yet: never adopted, never reaped by us. */
  spawned(): Iterable<number>;
  scanIntervalMs: number;
  /** The periodic scan runs on these; default real. */
  timers?: Timers;
}

interface Run {
  model: string;
  port: number | null;
  leader: ProcId;
  /** pid → start time. */
  descendants: Map<number, number>;
}

const dead = (e: ProcEntry) => e.state === "Z" || e.state === "X";

export class TreeWatch {
  private readonly runs = new Map<number, Run>();
  /** Sessions qm created that still have members (see noteSession). */
  private readonly sessions = new Set<number>();
  /** Stops the periodic scan; null while it is not running. */
  private stopScans: (() => void) | null = null;
  /** Counts scans, so a background reading older than a scan since is dropped. */
  private scans = 0;
  /** A background reading is under way. */
  private reading = false;
  /** A `scanSoon` is pending. */
  private soon = false;
  /** Called after any change to what is watched (the run file is rewritten from it). */
  onChange: (() => void) | null = null;

  constructor(private readonly deps: TreeDeps) {}

  /** Variables every model is started with, so its descendants can be told apart. */
  marker(model: string): Record<string, string> {
    return { QM_OWNER: `${this.deps.self.pid}:${this.deps.self.start}`, QM_MODEL: model };
  }

  /**
   * Starts watching a model whose leader (also its group and session id) is `pid`. Returns
   * the leader's identity.
   */
  register(model: string, pid: number, port: number | null): ProcId {
    const leader = { pid, start: this.deps.fs.entry(pid)?.start ?? -1 };
    this.runs.set(pid, { model, port, leader, descendants: new Map() });
    this.noteSession(pid);
    this.changed();
    return leader;
  }

  unregister(pid: number): void {
    if (!this.runs.delete(pid)) return;
    this.changed();
  }

  /**
   * A session qm created (`detached: true`: a model or a cmd_stop). Its orphans are
   * reparented to qm and their zombies are reaped while any member of it is left.
   */
  noteSession(pid: number): void {
    this.sessions.add(pid);
    if (this.stopScans === null && this.deps.fs.available) {
      const timers = this.deps.timers ?? realTimers;
      // unref: a background scan never keeps the process alive on its own.
      this.stopScans = every(() => this.scanInBackground(), this.deps.scanIntervalMs, timers, {
        unref: true,
      });
    }
  }

  private idle(): boolean {
    return !this.deps.fs.available || (this.runs.size === 0 && this.sessions.size === 0);
  }

  /**
   * A scan as soon as the current work is done (a timer of the tree's own, at 0 ms), read as
   * the periodic one is, without blocking: after a model turned ready, its descendants are
   * recorded while its first answers go out, since a full read of the table takes
   * milliseconds.
   */
  scanSoon(): void {
    if (this.soon) return;
    this.soon = true;
    (this.deps.timers ?? realTimers).set(() => {
      this.soon = false;
      this.scanInBackground();
    }, 0);
  }

  /** Re-reads the process table: records new descendants, forgets dead ones, reaps our zombies. */
  scan(): void {
    if (this.idle()) return;
    this.apply(this.deps.fs.list());
  }

  /**
   * The periodic scan, read without blocking qm's event loop where the platform can (Darwin's
   * `ps` runs as a command; Linux reads /proc a slice at a time), so a stream's next chunk
   * waits for nothing; a scan made meanwhile (a stop's) is newer, and this reading is then
   * dropped.
   */
  private scanInBackground(): void {
    const { fs } = this.deps;
    if (!fs.listAsync) {
      this.scan();
      return;
    }
    if (this.reading || this.idle()) return;
    this.reading = true;
    const before = this.scans;
    fs.listAsync().then(
      (all) => {
        this.reading = false;
        if (this.scans === before && !this.idle()) this.apply(all);
      },
      () => {
        this.reading = false;
      },
    );
  }

  private apply(all: ProcEntry[]): void {
    this.scans++;
    const byPid = new Map(all.map((e) => [e.pid, e]));
    const children = new Map<number, ProcEntry[]>();
    const byGroup = new Map<number, ProcEntry[]>();
    const push = (m: Map<number, ProcEntry[]>, k: number, e: ProcEntry) => {
      const list = m.get(k);
      if (list) list.push(e);
      else m.set(k, [e]);
    };
    for (const e of all) {
      push(children, e.ppid, e);
      push(byGroup, e.session, e);
      if (e.pgrp !== e.session) push(byGroup, e.pgrp, e);
    }
    const spawned = new Set(this.deps.spawned());
    for (const r of this.runs.values()) spawned.add(r.leader.pid);
    const tracked = new Set([...this.runs.values()].flatMap((r) => [...r.descendants.keys()]));
    const adoptable = this.adoptable(children.get(this.deps.self.pid) ?? [], spawned, tracked);
    const reaped = new Set<number>();
    const reap = (pid: number) => {
      if (reaped.has(pid)) return; // one waitpid per zombie
      reaped.add(pid);
      this.deps.reap(pid);
    };
    let changed = false;
    for (const run of this.runs.values()) {
      const known = (e: ProcEntry) => run.descendants.get(e.pid) === e.start;
      const roots = [...(byGroup.get(run.leader.pid) ?? []), ...(adoptable.get(run.model) ?? [])];
      const leader = byPid.get(run.leader.pid);
      if (leader?.start === run.leader.start) roots.push(leader);
      for (const pid of run.descendants.keys()) {
        const e = byPid.get(pid);
        if (e && known(e)) roots.push(e);
      }
      const found = new Map<number, number>();
      const seen = new Set<number>();
      while (roots.length > 0) {
        const e = roots.pop()!;
        if (seen.has(e.pid)) continue;
        seen.add(e.pid);
        if (spawned.has(e.pid)) {
          // The leader itself (or a pid Bun still owns): follow its children, never track it.
          for (const c of children.get(e.pid) ?? []) roots.push(c);
          continue;
        }
        if (dead(e)) {
          // Ours to reap only when it is our child and we know it as this model's.
          if (e.ppid === this.deps.self.pid) reap(e.pid);
          continue;
        }
        found.set(e.pid, e.start);
        for (const c of children.get(e.pid) ?? []) roots.push(c);
      }
      if (!sameMap(found, run.descendants)) changed = true;
      run.descendants = found;
    }
    this.reapOrphans(children.get(this.deps.self.pid) ?? [], spawned, byGroup, reap);
    if (changed) this.changed();
  }

  /** Zombies reparented to qm from a session qm created; forgets sessions left empty. */
  private reapOrphans(
    ours: ProcEntry[],
    spawned: Set<number>,
    byGroup: Map<number, ProcEntry[]>,
    reap: (pid: number) => void,
  ): void {
    for (const e of ours) {
      if (dead(e) && !spawned.has(e.pid) && this.sessions.has(e.session)) reap(e.pid);
    }
    for (const s of this.sessions) {
      if (!this.runs.has(s) && !byGroup.has(s)) this.sessions.delete(s);
    }
    if (this.sessions.size === 0 && this.runs.size === 0 && this.stopScans !== null) {
      this.stopScans();
      this.stopScans = null;
    }
  }

  /** qm's children Bun did not spawn, by the model their marker names. */
  private adoptable(
    ours: ProcEntry[],
    spawned: Set<number>,
    tracked: Set<number>,
  ): Map<string, ProcEntry[]> {
    const out = new Map<string, ProcEntry[]>();
    const owner = `QM_OWNER=${this.deps.self.pid}:${this.deps.self.start}`;
    for (const e of ours) {
      if (spawned.has(e.pid) || tracked.has(e.pid) || dead(e)) continue;
      const env = this.deps.fs.environ(e.pid);
      if (!env?.includes(owner)) continue;
      const model = env.find((v) => v.startsWith("QM_MODEL="))?.slice("QM_MODEL=".length);
      if (model === undefined) continue;
      out.set(model, [...(out.get(model) ?? []), e]);
    }
    return out;
  }

  /**
   * Signals the run's descendants that are still the processes recorded (start time checked
   * right before each signal); `outsideGroup` skips those the group signal reaches anyway.
   */
  signal(pid: number, signal: NodeJS.Signals, opts: { outsideGroup?: boolean } = {}): number {
    const run = this.runs.get(pid);
    if (!run) return 0;
    let n = 0;
    for (const [child, start] of run.descendants) {
      const e = this.deps.fs.entry(child);
      if (!e || e.start !== start || dead(e)) continue;
      if (opts.outsideGroup && e.pgrp === run.leader.pid) continue;
      try {
        this.deps.kill(child, signal);
        n++;
      } catch {}
    }
    return n;
  }

  /** Whether any recorded descendant still runs (zombies hold nothing and do not count). */
  running(pid: number): boolean {
    const run = this.runs.get(pid);
    if (!run) return false;
    for (const [child, start] of run.descendants) {
      const e = this.deps.fs.entry(child);
      if (e && e.start === start && !dead(e)) return true;
    }
    return false;
  }

  /**
   * Resolves once no recorded descendant runs, or after `maxMs`; then reaps our zombies (one
   * more scan). It waits on the kernel, so it polls on real time (as `waitGroupGone` does).
   * Called right after a scan: when that scan recorded nothing for the run, it saw nothing of
   * the run's alive and reaped what had died, so there is nothing to wait for and no second
   * scan (a stop then reads the process table twice, not three times).
   */
  async waitGone(pid: number, maxMs: number): Promise<boolean> {
    if ((this.runs.get(pid)?.descendants.size ?? 0) === 0) return true;
    const until = performance.now() + maxMs;
    let gone = !this.running(pid);
    while (!gone && performance.now() < until) {
      await delay(2);
      gone = !this.running(pid);
    }
    this.scan();
    return gone;
  }

  /** The leader and its running descendants (for the port ownership check). */
  members(pid: number): number[] {
    const run = this.runs.get(pid);
    return run ? [pid, ...run.descendants.keys()] : [];
  }

  /** The model a pid is recorded under, if any. */
  ownerOf(pid: number): string | null {
    for (const [leader, run] of this.runs) {
      if (leader === pid || run.descendants.has(pid)) return run.model;
    }
    return null;
  }

  snapshot(): WatchedRun[] {
    return [...this.runs.values()].map((r) => ({
      model: r.model,
      port: r.port,
      leader: r.leader,
      descendants: [...r.descendants].map(([pid, start]) => ({ pid, start })),
    }));
  }

  /** SIGKILLs every recorded descendant of every run, synchronously (exit hooks). */
  killAllSync(): number {
    this.scan();
    let n = 0;
    for (const pid of this.runs.keys()) n += this.signal(pid, "SIGKILL");
    return n;
  }

  private changed(): void {
    try {
      this.onChange?.();
    } catch {}
  }
}

function sameMap(a: Map<number, number>, b: Map<number, number>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

let self: ProcId | undefined;

/** The one watch of this process, on this process's platform. */
export const tree = new TreeWatch({
  fs: platform.procs,
  // Read on first use, not when the module loads (on Darwin that runs `ps`).
  get self() {
    self ??= selfIdentity();
    return self;
  },
  kill: (pid, signal) => process.kill(pid, signal),
  reap: (pid) => platform.reapChild(pid),
  spawned: liveGroups,
  scanIntervalMs: 1000,
});
