/**
 * Model servers run in their own process group (Bun's `detached: true` calls setsid(2)),
 * so one signal to `-pid` reaches the whole tree — llama-server's children, vLLM's worker
 * processes — and nothing a model spawned survives it (kill(2): a negative pid signals
 * the process group). Every live group is recorded so `killAllSync` can clean up from
 * `process.on("exit")`, where nothing asynchronous runs any more, and told to the death
 * watch, which ends them if qm dies where nothing runs at all (death-watch.ts).
 */
import { platform } from "../platform/index.ts";
import { delay } from "../shared/timer.ts";
import { DeathWatch, spawnWatcher } from "./death-watch.ts";

const live = new Set<number>();

/** This process's death watch (none where the platform has no shell for it). */
export const deathWatch = new DeathWatch(platform.deathWatch ? () => spawnWatcher() : null);

export function trackGroup(pgid: number): void {
  live.add(pgid);
  deathWatch.add(pgid);
}

export function untrackGroup(pgid: number): void {
  live.delete(pgid);
  deathWatch.remove(pgid);
}

/** Process groups started by this process that have not been seen to exit. */
export function liveGroups(): number[] {
  return [...live];
}

/**
 * Signals every process in group `pgid`; false when none is left (ESRCH) or it is not
 * ours to signal. Safe after the leader exited: a group id is not reused while any member
 * lives, so the signal reaches only the leader's leftover children.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** SIGKILLs every tracked group, synchronously. For `process.on("exit")` and fatal paths. */
export function killAllSync(): number {
  let n = 0;
  for (const pgid of live) {
    if (signalGroup(pgid, "SIGKILL")) n++;
    deathWatch.remove(pgid);
  }
  live.clear();
  return n;
}

/**
 * Resolves once no process of group `pgid` is left running, or after `maxMs`. kill(2)
 * returns before the target is gone, so "stopped" would otherwise race the kernel. This waits
 * on the kernel, not on qm, so it polls on real time whatever clock the caller runs on.
 */
export async function waitGroupGone(pgid: number, maxMs: number): Promise<boolean> {
  const until = performance.now() + maxMs;
  // A group kill(2) still finds may hold only zombies (src/platform: `groupRunning`).
  while (signalGroup(pgid, 0) && platform.groupRunning(pgid)) {
    if (performance.now() >= until) return false;
    await delay(2);
  }
  return true;
}
