/**
 * After a model's leader exited, for whatever reason: SIGKILL what it left running, in its
 * process group or outside it (no orphan keeps GPU memory or the port), wait until none of
 * it runs (bounded), and stop watching it.
 */
import { signalGroup, waitGroupGone } from "./process-group.ts";
import { tree } from "./tree-watch.ts";

/** How long an exit waits for the leader's leftovers to vanish after SIGKILL. */
export const LEFTOVERS_GONE_MS = 500;

export async function killLeftovers(leader: number): Promise<void> {
  signalGroup(leader, "SIGKILL");
  tree.scan();
  tree.signal(leader, "SIGKILL");
  await Promise.all([
    waitGroupGone(leader, LEFTOVERS_GONE_MS),
    tree.waitGone(leader, LEFTOVERS_GONE_MS),
  ]);
  // One that was still starting children while we killed: one more round.
  if (tree.signal(leader, "SIGKILL") > 0) await tree.waitGone(leader, LEFTOVERS_GONE_MS);
  tree.unregister(leader);
}

/**
 * Signals the model's process group, then its descendants that left the group, as a scan
 * right after the group's signal finds them (one started since the last scan gets it too).
 * The group is signalled first so that its shutdown runs while the table is read.
 */
export function signalTree(leader: number, signal: NodeJS.Signals): void {
  signalGroup(leader, signal);
  tree.scan();
  tree.signal(leader, signal, { outsideGroup: true });
}
