/**
 * Managed mistral.rs nodes (src/peers/mistralrs.md): the keeper of each node model's
 * supervisor (`NodeServer`, src/peers/node-server.ts), and the background poll that follows
 * each node — its health, models discovered, models loaded or unloaded outside qm — and
 * restarts it once its unload/reload cycles reach `defrag_after_cycles`. Time is the injected
 * timers'.
 */
import { nodeModel, nodeModelId } from "../config/node-models.ts";
import type { Config, ModelConfig, PeerConfig } from "../config/types.ts";
import { MistralrsApi, type NodeModelStatus } from "../peers/mistralrs.ts";
import { type NodeKeeper, NodeServer, STATUS_POLL_MS } from "../peers/node-server.ts";
import type { PeerTable } from "../peers/table.ts";
import type { ModelState } from "../scheduler/types.ts";
import { asQmError } from "../shared/errors.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import { delay, type Timers } from "../shared/timer.ts";

/** At most this many models are taken from one node's list; longer ids are passed over. */
const MAX_DISCOVERED = 1000;
const MAX_ID_LENGTH = 256;

/** What the nodes need of the scheduler and the rest of the runtime. */
export interface NodeHost {
  config: Config;
  timers: Timers;
  log: Logger;
  /** Milliseconds a load (and a node's restart) may take: `server.health_check_timeout_s`. */
  loadTimeoutMs: number;
  state(id: string): ModelState;
  /** The model is in a transition (starting, stopping, a swap or a stop in progress). */
  inTransition(id: string): boolean;
  inflight(id: string): number;
  adopt(id: string): void;
  gone(id: string, detail: string): void;
  unload(id: string): void;
  /** Loads a model as `POST /api/models/{id}/load` does (no request waits on it). */
  load(id: string): void;
  /** A model found on a node joins the scheduler (like a `?ctx=` variant). */
  addModel(model: ModelConfig): void;
  table(): PeerTable | null;
  /** Each lifecycle line of a node model, for its live log followers. */
  onLine(id: string, line: string): void;
  fetch?: Fetch;
  /** Runs `restart_cmd`; resolves with its exit code. Default: spawned, no shell. */
  runRestart?: (argv: string[]) => Promise<number>;
}

interface Node {
  /** Replaced by a reload that changes the node's settings. */
  config: PeerConfig;
  api: MistralrsApi;
  /** Unloads of a loaded model since the last restart. */
  cycles: number;
  /** Set while a defrag restart runs: starts wait for it. */
  gate: Promise<void> | null;
  /** A defrag restart is under way: stops need no unload (the restart frees everything). */
  restarting: boolean;
  timer: unknown;
  polling: boolean;
}

export class ManagedNodes implements NodeKeeper {
  private readonly nodes = new Map<string, Node>();
  private readonly servers = new Map<string, NodeServer>();
  private closed = false;
  /** Models a defrag waits to see stopped, by node. */
  private readonly draining = new Map<string, { ids: Set<string>; done: () => void }>();

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
          gate: null,
          restarting: false,
          timer: null,
          polling: false,
        });
      }
    }
    // Every poll is rescheduled by the `start()` that follows a replace.
    for (const n of this.nodes.values()) {
      if (n.timer !== null) this.host.timers.clear(n.timer);
      n.timer = null;
    }
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
    for (const n of this.nodes.values()) {
      if (n.timer !== null) this.host.timers.clear(n.timer);
      n.timer = null;
    }
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
    this.host.table()?.report(node, { ok: false, error });
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
    // A stop may have been the cycle that makes a restart due, a load the transition it
    // waited out (the poll looks again for work that drains).
    const n = this.nodes.get(target.node);
    if (n && !n.restarting) queueMicrotask(() => this.maybeDefrag(n));
  }

  /** A loaded model was unloaded: one more cycle on its node. */
  cycled(node: string): void {
    const n = this.nodes.get(node);
    if (!n || n.restarting) return;
    n.cycles++;
  }

  /** Waits while the node's defrag restart runs. */
  async gateOpen(node: string): Promise<void> {
    const n = this.nodes.get(node);
    while (n?.gate) await n.gate;
  }

  private modelsOf(n: Node): ModelConfig[] {
    return Object.values(this.host.config.models).filter((m) => m.node?.node === n.config.id);
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
        this.host.table()?.report(n.config.id, { ok: false, error: asQmError(err).message });
        return;
      }
      this.host.table()?.report(n.config.id, { ok: true });
      if (this.closed || n.restarting) return;
      this.reconcile(n, listed);
      this.maybeDefrag(n);
    } finally {
      n.polling = false;
    }
  }

  private reconcile(n: Node, listed: ReadonlyMap<string, NodeModelStatus>): void {
    const { host } = this;
    const discover = n.config.models.length === 0;
    let found = this.modelsOf(n).filter((m) => m.node!.discovered).length;
    for (const [remote, status] of listed) {
      const id = nodeModelId(n.config.id, remote);
      let model = host.config.models[id];
      // A model of this box that happens to be named NODE/MODEL is not the node's.
      if (model && model.node?.node !== n.config.id) continue;
      if (!model) {
        if (!discover || !usableId(remote) || found >= MAX_DISCOVERED) continue;
        found++;
        model = nodeModel(n.config, remote, true);
        host.log.info(`node ${n.config.id}: found model ${remote} (${status})`);
        host.addModel(model);
      }
      if (host.inTransition(id)) continue;
      const state = host.state(id);
      if (status === "loaded" && (state === "stopped" || state === "failed")) {
        host.log.info(`node ${n.config.id}: ${remote} was loaded outside qm; it is counted now`);
        this.servers.get(id)?.adopted();
        host.adopt(id);
      } else if (status === "unloaded" && state === "ready") {
        host.log.info(`node ${n.config.id}: ${remote} was unloaded outside qm`);
        this.servers.get(id)?.vanished();
        host.gone(id, `unloaded on node "${n.config.id}" outside qm`);
      }
    }
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
    if (this.nodes.get(n.config.id) !== n || !this.idle(n)) return;
    let open = () => {};
    n.gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const pinned = this.modelsOf(n)
      .filter((m) => m.node!.pinned && this.host.state(m.id) === "ready")
      .map((m) => m.id);
    void this.defrag(n).finally(() => {
      n.gate = null;
      n.restarting = false;
      open();
      // Pinned models are the node's to keep: the restart took them, so they load again.
      if (!this.closed) for (const id of pinned) this.host.load(id);
      if (!this.closed && n.timer !== null) {
        // Look at once: what the node loaded at its start is adopted.
        this.pollThenSchedule(n);
      }
    });
  }

  /** Unload everything through the scheduler, run `restart_cmd`, wait for the node to answer. */
  private async defrag(n: Node): Promise<void> {
    const { host } = this;
    const name = n.config.id;
    host.log.info(`node ${name}: ${n.cycles} unload/reload cycles: restarting it (defrag)`);
    n.restarting = true;
    const resident = this.modelsOf(n)
      .map((m) => m.id)
      .filter((id) => host.state(id) !== "stopped" && host.state(id) !== "failed");
    if (resident.length > 0) {
      await new Promise<void>((done) => {
        this.draining.set(name, { ids: new Set(resident), done });
        for (const id of resident) host.unload(id);
      });
      this.draining.delete(name);
    }
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
        host.table()?.report(name, { ok: true });
        break;
      } catch (err) {
        if (this.closed || host.timers.now() >= deadline) {
          host.log.warn(`node ${name} did not answer after its restart: ${asQmError(err).message}`);
          host.table()?.report(name, { ok: false, error: "did not come back after a restart" });
          break;
        }
        await delay(STATUS_POLL_MS * 2, undefined, host.timers);
      }
    }
    n.cycles = 0;
    host.log.info(`node ${name}: restarted`);
  }
}

/** A node's id for a model that qm can list and route: bounded, printable, no control bytes. */
function usableId(id: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control bytes are what is refused
  return id.length <= MAX_ID_LENGTH && !/[\u0000-\u001f\u007f]/.test(id);
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
