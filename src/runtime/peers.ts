/**
 * Other boxes (`[peers.NAME]`, src/peers): the routing table, whose health changes go out as
 * `event: peer`, and the background watch that follows qm peers and probes the ones down. A
 * reload that changes `[peers]` builds both afresh (`replace`).
 */
import type { QmEvent } from "../api/gateway.ts";
import { nodeModelId } from "../config/node-models.ts";
import type { Config, ModelConfig } from "../config/types.ts";
import { type ManagedLookup, PeerTable } from "../peers/table.ts";
import { PeerWatch } from "../peers/watch.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import type { Timers } from "../shared/timer.ts";

export interface PeerLinksDeps {
  timers: Timers;
  log: Logger;
  publish(e: QmEvent): void;
  /** What the table routes to on a managed node: the scheduler's own models there. */
  managed: ManagedLookup;
  /** How peers are called; default the global `fetch`. */
  fetch?: Fetch | undefined;
}

export class PeerLinks {
  /** The routing table; null with no peers. */
  table: PeerTable | null = null;
  private watch: PeerWatch | null = null;

  constructor(
    peers: Config["peers"],
    private readonly deps: PeerLinksDeps,
  ) {
    this.replace(peers);
  }

  /**
   * The old watch stops and the new peers start afresh (their health unknown, as at startup);
   * calls already on their way finish on the peer they went to. `running`: the watch starts now.
   */
  replace(peers: Config["peers"], running = false): void {
    this.watch?.stop();
    const { timers, log } = this.deps;
    const table =
      Object.keys(peers).length === 0
        ? null
        : new PeerTable(
            peers,
            () => timers.now(),
            (s) => {
              this.deps.publish({ type: "peer", ...s });
              if (this.table === table) this.watch?.changed(s);
            },
          );
    if (table) table.managed = this.deps.managed;
    this.table = table;
    this.watch = table ? new PeerWatch(table, { timers, log, fetch: this.deps.fetch }) : null;
    if (running) this.watch?.start();
  }

  start(): void {
    this.watch?.start();
  }

  stop(): void {
    this.watch?.stop();
  }

  health(): { name: string; up: boolean }[] {
    return peerHealth(this.table);
  }
}

/** Each peer and whether it is up (its breaker closed): the metrics' `qm_peer_up`. */
export function peerHealth(table: PeerTable | null): { name: string; up: boolean }[] {
  if (!table) return [];
  return table.configs().map((c) => ({ name: c.id, up: table.health(c.id) === "up" }));
}

/** What the peer table routes to on a managed node: the scheduler's own models there. */
export function managedLookup(config: Config, scheduler: () => Scheduler): ManagedLookup {
  const onNode = (node: string): ModelConfig[] =>
    Object.values(config.models).filter((m) => m.node?.node === node);
  return {
    model: (node, remote) => {
      const m = config.models[nodeModelId(node, remote)];
      return m?.node?.node === node ? m : undefined;
    },
    inflight: (node) => onNode(node).reduce((n, m) => n + scheduler().inflightOf(m.id), 0),
    cost: (node, remote) => {
      const id = nodeModelId(node, remote);
      if (!config.models[id]) return Number.MAX_SAFE_INTEGER;
      const answer = scheduler().evictionFor(id);
      return answer.ok ? answer.evict.length : Number.MAX_SAFE_INTEGER;
    },
  };
}
