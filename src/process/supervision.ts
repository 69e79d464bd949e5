/**
 * Process-wide duties of `qm serve` (one per qm, not per model): become the subreaper of
 * everything it starts, clean up after a previous qm that crashed, keep the run file
 * current, and kill everything synchronously when qm exits.
 */
import { type Platform, platform, selfIdentity } from "../platform/index.ts";
import type { ProcEntry } from "../platform/types.ts";
import type { Logger } from "../shared/log.ts";
import { deathWatch, killAllSync as killGroupsSync } from "./process-group.ts";
import { RunRecord, reapStale } from "./run-record.ts";
import { tree } from "./tree-watch.ts";

/** How long startup waits for reaped leftovers to let go of their ports and memory. */
const REAPED_GONE_MS = 2000;

export interface Supervision {
  /** Removes the run file: only after every model stopped (a clean shutdown). */
  close(): void;
}

export function startSupervision(opts: { stateDir: string; log: Logger }): Supervision {
  const { log } = opts;
  becomeSubreaper(log);
  deathWatch.setLogger(log);
  const self = selfIdentity();
  const reaped = reapStale(opts.stateDir, {
    fs: platform.procs,
    self,
    kill: (pid, signal) => process.kill(pid, signal),
    log,
  });
  if (reaped.length > 0) waitGoneSync(reaped.map((r) => r.pid));
  const record = new RunRecord(opts.stateDir, self, log);
  tree.onChange = () => record.write(tree.snapshot());
  record.write(tree.snapshot());
  return {
    close() {
      tree.onChange = null;
      record.close();
    },
  };
}

let subreaperTold = false;

/**
 * Makes qm its descendants' reaper of last resort where the platform can; says once why not
 * (a warning where it should have worked, a note where the platform has none).
 */
export function becomeSubreaper(log: Logger, on: Platform = platform): boolean {
  const r = on.becomeSubreaper();
  if (r.ok || subreaperTold) return r.ok;
  subreaperTold = true;
  const text =
    `cannot make qm a child subreaper (${r.why}): a model's descendants ` +
    "that leave its process group are found only while qm scans them";
  if (r.byDesign) log.info(text);
  else log.warn(text);
  return false;
}

/**
 * Startup has nothing else to do yet, and a model started next must find the ports free;
 * killed processes that are not ours stay zombies until init reaps them, which is fine.
 */
function waitGoneSync(pids: number[]): void {
  const until = performance.now() + REAPED_GONE_MS;
  const running = (e: ProcEntry | null) => e !== null && e.state !== "Z" && e.state !== "X";
  while (pids.some((pid) => running(platform.procs.entry(pid))) && performance.now() < until) {
    Bun.sleepSync(5);
  }
}

/**
 * SIGKILLs every model process group and every recorded descendant, synchronously: for
 * `process.on("exit")` and fatal paths. Returns how many it signalled.
 */
export function killAllSync(): number {
  tree.scan();
  return killGroupsSync() + tree.killAllSync();
}
