/**
 * Managed mistral.rs nodes (src/peers/mistralrs.md): the keeper of each node model's
 * supervisor (`NodeServer`, src/peers/node-server.ts), and the background poll that follows
 * each node — its health, models discovered, models loaded or unloaded outside qm — and
 * restarts it once its unload/reload cycles reach `defrag_after_cycles`. Time is the injected
 * timers'.
 */
import type { NodePeerStatusJson } from "../api/status-json.ts";
import type { Config, ModelConfig } from "../config/types.ts";
import { MistralrsApi, type NodeAnswer, type NodeModelStatus } from "../peers/mistralrs.ts";
import { type NodeKeeper, NodeServer, STATUS_POLL_MS } from "../peers/node-server.ts";
import type { PeerStatusJson, PeerTable } from "../peers/table.ts";
import type { NodeView } from "../policy/node.ts";
import type { ModelState } from "../scheduler/types.ts";
import { asQmError } from "../shared/errors.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import type { Timers } from "../shared/timer.ts";
import { type DefragHost, type RestartedNode, restartNode } from "./node-defrag.ts";
import {
  type FollowedNode,
  type FollowHost,
  keepToLimits,
  type NodeModels,
  reconcile,
} from "./node-follow.ts";

/** What the nodes need of the scheduler and the rest of the runtime. */
export interface NodeHost extends FollowHost, DefragHost {
  /** Milliseconds a load (and a node's restart) may take: `server.health_check_timeout_s`. */
  loadTimeoutMs: number;
  /** Loads a model as `POST /api/models/{id}/load` does (no request waits on it). */
  load(id: string): void;
  table(): PeerTable | null;
  /** Each lifecycle line of a node model, for its live log followers. */
  onLine(id: string, line: string): void;
  fetch?: Fetch;
}

interface Node extends FollowedNode, RestartedNode {
  /** Unload/reload cycles since the last restart: a reload that followed an unload qm made. */
  cycles: number;
  /** Unloads qm made that no reload has followed yet. */
  freed: number;
  /** The last good list, one status per model; null before the first (or after a restart). */
  listed: Map<string, NodeModelStatus> | null;
  /** A failed unload asks for a look at the node once its models are out of transition. */
  reread: boolean;
  /** A defrag is due and waits for the node to drain: this looks again shortly. */
  drainTimer: unknown;
  /** Set while a defrag restart runs: starts wait for it. */
  gate: Promise<void> | null;
  timer: unknown;
  polling: boolean;
}

export class ManagedNodes implements NodeKeeper {
  private readonly nodes = new Map<string, Node>();
  private readonly servers = new Map<string, NodeServer>();
  private closed = false;
  /** Models a defrag waits to see stopped, by node. */
  private readonly draining = new Map<string, { ids: Set<string>; done: () => void }>();

  /** Each node's models and their supervisors, for following a node. */
  private readonly models: NodeModels = {
    of: (node) => Object.values(this.host.config.models).filter((m) => m.node?.node === node),
    server: (id) => this.servers.get(id),
  };

  constructor(private readonly host: NodeHost) {
    this.replace(host.config.peers);
  }

  /**
   * A reload changed `[peers]`: a node still configured keeps its state (its cycle count, a
   * defrag under way) with its new settings; the others go.
   */
  replace(peers: Config["peers"]): void {
    const next = new Map<string, Node>();
    for (const c of Object.values(peers)) {
      if (!c.node) continue;
      const api = new MistralrsApi(c, this.host.timers, this.host.fetch);
      const old = this.nodes.get(c.id);
      if (old) {
        old.config = c;
        old.api = api;
        next.set(c.id, old);
      } else {
        next.set(c.id, {
          config: c,
          api,
          cycles: 0,
          freed: 0,
          listed: null,
          down: null,
          canUnload: null,
          reread: false,
          excessNote: "",
          drainTimer: null,
          gate: null,
          restarting: false,
          timer: null,
          polling: false,
        });
      }
    }
    // Every poll is rescheduled by the `start()` that follows a replace.
    for (const n of this.nodes.values()) this.clearTimers(n);
    this.nodes.clear();
    for (const [id, n] of next) this.nodes.set(id, n);
  }

  get size(): number {
    return this.nodes.size;
  }

  /** The supervisor of a node model (the runner's factory asks). */
  server(model: ModelConfig): NodeServer {
    const s = new NodeServer(model, this);
    this.servers.set(model.id, s);
    return s;
  }

  /** Starts each node's poll (the first at once). */
  start(): void {
    for (const n of this.nodes.values()) this.pollThenSchedule(n);
  }

  private pollThenSchedule(n: Node): void {
    void this.poll(n).finally(() => {
      if (this.nodes.get(n.config.id) === n) this.schedule(n, n.config.pollMs);
    });
  }

  /** Shutdown: polls stop; node models stay as they are on their node (it is not qm's process). */
  stop(): void {
    this.closed = true;
    for (const n of this.nodes.values()) this.clearTimers(n);
  }

  private clearTimers(n: Node): void {
    if (n.timer !== null) this.host.timers.clear(n.timer);
    if (n.drainTimer !== null) this.host.timers.clear(n.drainTimer);
    n.timer = null;
    n.drainTimer = null;
  }

  /** What admission reads of the nodes (`NodeAwarePolicy`). */
  readonly view: NodeView = {
    refusal: (model) => this.refusal(model),
    canUnload: (node) => this.canUnload(node),
  };

  /** Why `model` cannot load on its node now, or null (then its start finds out). */
  private refusal(model: ModelConfig): string | null {
    const n = model.node ? this.nodes.get(model.node.node) : undefined;
    if (!n) return null;
    const name = n.config.id;
    if (n.down !== null) {
      return `node "${name}" is down (${n.down}): model "${model.id}" cannot load there now`;
    }
    if (n.listed !== null && !n.listed.has(model.node!.remote)) {
      return `node "${name}" does not list model "${model.node!.remote}" (GET /v1/models): model "${model.id}" cannot load there`;
    }
    return null;
  }

  /** Status's peers, each managed node's entry with `can_unload` (null: not known yet). */
  annotate(peers: PeerStatusJson[]): NodePeerStatusJson[] {
    return peers.map((p) => {
      const n = this.nodes.get(p.name);
      return n ? { ...p, can_unload: n.canUnload } : p;
    });
  }

  get closing(): boolean {
    return this.closed;
  }

  // What a node model's supervisor reads (`NodeKeeper`).
  get timers(): Timers {
    return this.host.timers;
  }

  get log(): Logger {
    return this.host.log;
  }

  get loadTimeoutMs(): number {
    return this.host.loadTimeoutMs;
  }

  get fetch(): Fetch | undefined {
    return this.host.fetch;
  }

  restarting(node: string): boolean {
    return this.nodes.get(node)?.restarting ?? false;
  }

  unreachable(node: string, error: string): void {
    const n = this.nodes.get(node);
    if (n) n.down = error;
    this.host.table()?.report(node, { ok: false, error });
  }

  reloaded(node: string): void {
    const n = this.nodes.get(node);
    if (!n || n.restarting || n.freed === 0) return;
    n.freed--;
    n.cycles++;
  }

  canUnload(node: string): boolean | null {
    return this.nodes.get(node)?.canUnload ?? null;
  }

  unloaded(node: string): void {
    const n = this.nodes.get(node);
    if (!n) return;
    n.canUnload = true;
    if (!n.restarting) n.freed++;
  }

  unloadFailed(node: string, remote: string, answer: NodeAnswer | null, message: string): void {
    const n = this.nodes.get(node);
    this.host.log.warn(message);
    if (!n) return;
    if (answer?.status === "no_loader_config" && n.canUnload !== false) {
      n.canUnload = false;
      this.host.log.warn(
        `node ${node} cannot unload models: it answered no_loader_config for ${remote} and dropped it (stock \`mistralrs from-config\` multi-model serving keeps no loader config); qm unloads nothing there from now on, and a load that needs room is refused`,
      );
    }
    // The model may still be loaded there, or gone: read the node once the stop has settled.
    n.reread = true;
    this.maybeReread(n);
  }

  /** A look at the node a failed unload asked for, once none of its models is in transition. */
  private maybeReread(n: Node): void {
    if (!n.reread || this.closed || n.polling || n.restarting) return;
    const unsettled = (m: ModelConfig) =>
      this.host.inTransition(m.id) || this.servers.get(m.id)?.unloading === true;
    if (this.modelsOf(n).some(unsettled)) return;
    n.reread = false;
    void this.poll(n);
  }

  onLine(id: string, line: string): void {
    this.host.onLine(id, line);
  }

  /** The scheduler's news of a model: a node's routing entry follows it; a defrag waits on it. */
  stateChanged(id: string, state: ModelState): void {
    const model = this.host.config.models[id];
    const target = model?.node;
    if (!target) return;
    this.host
      .table()
      ?.modelChanged(target.node, target.remote, state === "ready" ? "ready" : "offered");
    const d = this.draining.get(target.node);
    if (d && (state === "stopped" || state === "failed")) {
      d.ids.delete(id);
      if (d.ids.size === 0) d.done();
    }
    // A load may have been the cycle that makes a restart due, a stop the transition it
    // waited out; a failed unload's look at the node waits for its models to settle.
    const n = this.nodes.get(target.node);
    if (n && !n.restarting) {
      queueMicrotask(() => {
        this.maybeReread(n);
        this.maybeDefrag(n);
      });
    }
  }

  /** Waits while the node's defrag restart runs. */
  async gateOpen(node: string): Promise<void> {
    const n = this.nodes.get(node);
    while (n?.gate) await n.gate;
  }

  private modelsOf(n: Node): ModelConfig[] {
    return this.models.of(n.config.id);
  }

  private schedule(n: Node, ms: number): void {
    if (this.closed) return;
    if (n.timer !== null) this.host.timers.clear(n.timer);
    n.timer = this.host.timers.set(() => {
      n.timer = null;
      this.pollThenSchedule(n);
    }, ms);
  }

  /** One look at the node: health, discovery, what changed outside qm, a defrag due. */
  async poll(n: Node): Promise<void> {
    if (n.polling || this.closed) return;
    n.polling = true;
    try {
      let listed: Map<string, NodeModelStatus>;
      try {
        listed = await n.api.list();
      } catch (err) {
        n.down = asQmError(err).message;
        this.host.table()?.report(n.config.id, { ok: false, error: n.down });
        return;
      }
      n.down = null;
      this.host.table()?.report(n.config.id, { ok: true });
      if (this.closed || n.restarting) return;
      n.listed = listed;
      // Only a model unloaded with its loader config kept is listed `unloaded`.
      if (n.canUnload === null && [...listed.values()].includes("unloaded")) n.canUnload = true;
      reconcile(this.host, this.models, n, listed);
      keepToLimits(this.host, this.models, n);
      this.maybeDefrag(n);
    } finally {
      n.polling = false;
    }
    this.maybeReread(n);
  }

  /** Nothing of the node's is in flight or in transition. */
  private idle(n: Node): boolean {
    return this.modelsOf(n).every(
      (m) => this.host.inflight(m.id) === 0 && !this.host.inTransition(m.id),
    );
  }

  private maybeDefrag(n: Node): void {
    const every = n.config.node!.defragAfterCycles;
    if (this.closed || every <= 0 || n.cycles < every || n.gate !== null) return;
    if (this.nodes.get(n.config.id) !== n) return;
    if (!this.idle(n)) {
      // Due, but busy: look again shortly (no state changes when a request drains), not only
      // at the next poll. An in-memory look, no call to the node.
      if (n.drainTimer === null) {
        n.drainTimer = this.host.timers.set(() => {
          n.drainTimer = null;
          this.maybeDefrag(n);
        }, STATUS_POLL_MS);
      }
      return;
    }
    let open = () => {};
    n.gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const pinned = this.modelsOf(n)
      .filter((m) => m.node!.pinned && this.host.state(m.id) === "ready")
      .map((m) => m.id);
    const resident = this.modelsOf(n)
      .map((m) => m.id)
      .filter((id) => this.host.state(id) !== "stopped" && this.host.state(id) !== "failed");
    const stopAll = (ids: readonly string[]) =>
      new Promise<void>((done) => {
        this.draining.set(n.config.id, { ids: new Set(ids), done });
        for (const id of ids) this.host.unload(id);
      }).finally(() => this.draining.delete(n.config.id));
    void restartNode(this.host, n, resident, stopAll, () => this.closed).finally(async () => {
      n.listed = null;
      n.gate = null;
      n.restarting = false;
      open();
      if (this.closed) return;
      // Read the node before loading anything: what it loaded at its start is adopted (a
      // reload of it would answer not_found and leave it stuck `reloading`).
      await this.poll(n);
      // Pinned models are the node's to keep: those the restart took load again.
      for (const id of pinned) {
        if (!this.closed && this.host.state(id) !== "ready") this.host.load(id);
      }
    });
  }
}
