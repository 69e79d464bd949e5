/**
 * A managed node's defrag restart (src/peers/mistralrs.md, "Defrag restart"): its models are
 * stopped through the scheduler (no unload calls: the restart frees them), `restart_cmd` runs,
 * and the node is waited for. The caller holds the node's gate meanwhile and reads the node
 * once it is back, before it loads anything.
 */
import type { PeerConfig } from "../config/types.ts";
import type { MistralrsApi } from "../peers/mistralrs.ts";
import { STATUS_POLL_MS } from "../peers/node-server.ts";
import type { PeerTable } from "../peers/table.ts";
import { asQmError } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";
import { delay, type Timers } from "../shared/timer.ts";

export interface DefragHost {
  log: Logger;
  timers: Timers;
  /** Milliseconds the node may take to come back: `server.health_check_timeout_s`. */
  loadTimeoutMs: number;
  table(): PeerTable | null;
  /** Runs `restart_cmd`; resolves with its exit code. Default: spawned, no shell. */
  runRestart?: (argv: string[]) => Promise<number>;
}

/** The node as its restart changes it. */
export interface RestartedNode {
  config: PeerConfig;
  api: MistralrsApi;
  cycles: number;
  freed: number;
  /** Why it is down, or null. */
  down: string | null;
  /** Set for the whole restart: stops need no unload. */
  restarting: boolean;
}

/**
 * Stops `resident` (the node's models holding memory) through `stopAll`, which resolves once
 * they are stopped; runs `restart_cmd`; waits for `GET /v1/models` to answer. A command that
 * fails or a node that does not come back is logged (and the node is down).
 */
export async function restartNode(
  host: DefragHost,
  n: RestartedNode,
  resident: readonly string[],
  stopAll: (ids: readonly string[]) => Promise<void>,
  closed: () => boolean,
): Promise<void> {
  const name = n.config.id;
  host.log.info(`node ${name}: ${n.cycles} unload/reload cycles: restarting it (defrag)`);
  n.restarting = true;
  if (resident.length > 0) await stopAll(resident);
  const run = host.runRestart ?? ((argv) => spawnRestart(argv, host.loadTimeoutMs, host.timers));
  try {
    const code = await run(n.config.node!.restartArgv);
    if (code !== 0) host.log.warn(`node ${name}: restart_cmd exited ${code}`);
  } catch (err) {
    host.log.warn(`node ${name}: restart_cmd could not run: ${asQmError(err).message}`);
  }
  const deadline = host.timers.now() + host.loadTimeoutMs;
  for (;;) {
    try {
      await n.api.list();
      n.down = null;
      host.table()?.report(name, { ok: true });
      break;
    } catch (err) {
      if (closed() || host.timers.now() >= deadline) {
        host.log.warn(`node ${name} did not answer after its restart: ${asQmError(err).message}`);
        n.down = "did not come back after a restart";
        host.table()?.report(name, { ok: false, error: n.down });
        break;
      }
      await delay(STATUS_POLL_MS * 2, undefined, host.timers);
    }
  }
  n.cycles = 0;
  n.freed = 0;
  host.log.info(`node ${name}: restarted`);
}

/** Runs `restart_cmd`; one that outlives `timeoutMs` is killed (its exit code then says so). */
async function spawnRestart(argv: string[], timeoutMs: number, timers: Timers): Promise<number> {
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  const kill = timers.set(() => proc.kill("SIGKILL"), timeoutMs);
  try {
    return await proc.exited;
  } finally {
    timers.clear(kill);
  }
}
