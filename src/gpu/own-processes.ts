/**
 * Which of qm's model processes a reading must count as "ours", and whether qm is idle
 * enough for the reading to teach the foreign baseline. Pure: the caller passes the time.
 *
 * A model's memory is qm's from the moment it spawns, not from when it answers its health
 * check: llama.cpp maps gigabytes of weights while still "starting". Counting a starting
 * model as another program's once taught the idle baseline 9.78 GB. Likewise a model that
 * just exited: its leftovers (children in its session) may still hold memory, and drivers
 * reclaim an exited process's memory a little late, so for `settleMs` after a process goes
 * away its pid stays a root of "ours" and qm is not idle.
 */

/** The slice of a model process this needs (structurally a `ModelProcess`). */
export interface ProcessView {
  readonly state: "stopped" | "starting" | "ready" | "stopping";
  readonly pid: number | null;
  /**
   * Put to sleep over its server's sleep API: alive, but not required on the GPU (a reading
   * that does not list it is still trusted; one that does attributes its memory to qm).
   */
  readonly asleep?: boolean;
}

export interface OwnPids {
  /** Ready models: expected on the GPU, so a reading that cannot see them is untrusted. */
  ready: number[];
  /** Starting, stopping and just-exited models: ours when listed, not required to be. */
  transient: number[];
  /** No process of qm's alive or recently gone: foreign usage is the idle baseline. */
  idle: boolean;
}

/** How long memory let go by a stopped model may take to show up free (Ollama: 5 s). */
export const RELEASE_SETTLE_MS = 5000;

export class OwnProcesses {
  /** Pids alive at the last look, to notice the ones that went away. */
  #alive = new Set<number>();
  /** Pids that went away, and when they were first seen gone. */
  #gone = new Map<number, number>();
  #releasedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly settleMs = RELEASE_SETTLE_MS) {}

  /** Sorts the processes now; pids missing since the last look count as a release. */
  look(now: number, processes: Iterable<ProcessView>): OwnPids {
    const ready: number[] = [];
    const transient: number[] = [];
    let allStopped = true;
    for (const p of processes) {
      if (p.state !== "stopped") allStopped = false;
      if (p.pid === null) continue;
      (p.state === "ready" && !p.asleep ? ready : transient).push(p.pid);
    }
    const alive = new Set([...ready, ...transient]);
    for (const pid of this.#alive) {
      if (!alive.has(pid)) {
        this.#gone.set(pid, now);
        this.released(now);
      }
    }
    this.#alive = alive;
    for (const [pid, at] of this.#gone) {
      if (alive.has(pid) || now - at >= this.settleMs) this.#gone.delete(pid);
    }
    transient.push(...this.#gone.keys());
    return { ready, transient, idle: allStopped && alive.size === 0 && !this.settling(now) };
  }

  /** qm let go of GPU memory at `now` (it stopped a model, seen or not). */
  released(now: number): void {
    this.#releasedAt = Math.max(this.#releasedAt, now);
  }

  /** When the memory let go of last may still be on its way back: until this time. */
  settledBy(): number {
    return this.#releasedAt + this.settleMs;
  }

  /** True within `settleMs` of the last release. */
  settling(now: number): boolean {
    return now < this.settledBy();
  }
}
