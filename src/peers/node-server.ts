/**
 * A managed node's model (src/peers/mistralrs.md): its supervisor over the node's HTTP API,
 * loaded and unloaded there, never spawned. The runtime's process table holds it like any
 * model's process; the keeper of the nodes (`runtime/nodes.ts`) polls them and restarts a
 * fragmented one.
 */
import type { ModelConfig } from "../config/types.ts";
import { asQmError, QmError } from "../shared/errors.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import { delay, type Timers } from "../shared/timer.ts";
import { MistralrsApi, NodeApiError } from "./mistralrs.ts";

/** How often a start asks the node whether its model has loaded. */
export const STATUS_POLL_MS = 250;
/** The lifecycle lines kept per node model (`/api/models/{id}/logs`). */
const LOG_LINES = 200;

/** What a node model's supervisor needs of the keeper of the nodes. */
export interface NodeKeeper {
  readonly timers: Timers;
  readonly log: Logger;
  /** Milliseconds a load may take: `server.health_check_timeout_s`. */
  readonly loadTimeoutMs: number;
  readonly fetch?: Fetch | undefined;
  /** Shutdown: models stay loaded on their node (it is not qm's process). */
  readonly closing: boolean;
  /** The node is restarting (a defrag), which frees everything: a stop needs no unload. */
  restarting(node: string): boolean;
  /** Waits while the node's defrag restart runs. */
  gateOpen(node: string): Promise<void>;
  /** A loaded model was unloaded: one more cycle on its node. */
  cycled(node: string): void;
  /** The node could not be reached: down for routing now, not only at its next poll. */
  unreachable(node: string, error: string): void;
  /** Each lifecycle line of a node model, for its live log followers. */
  onLine(id: string, line: string): void;
}

/**
 * A node model's supervisor: loaded and unloaded over the node's API, never spawned. `pid` is
 * always null (the node's process is not qm's), so nothing of the local GPU is attributed to it.
 */
export class NodeServer {
  state: "stopped" | "starting" | "ready" | "stopping" = "stopped";
  readonly pid = null;
  /** The node has the model loaded as far as qm knows (started or adopted). */
  private resident = false;
  private starting: AbortController | null = null;
  private readonly lines: string[] = [];
  private readonly id: string;
  private readonly node: string;
  private readonly remote: string;
  private readonly api: MistralrsApi;

  constructor(
    model: ModelConfig,
    private readonly nodes: NodeKeeper,
  ) {
    this.node = model.node!.node;
    this.remote = model.node!.remote;
    const host = nodes;
    // The model's own URL and key: a reload that changed them makes a new supervisor.
    this.api = new MistralrsApi(
      {
        id: this.node,
        url: model.proxy,
        apiKey: model.node!.apiKey,
        timeoutMs: model.firstByteTimeoutMs || 30_000,
      },
      host.timers,
      host.fetch,
    );
    this.id = model.id;
  }

  async start(): Promise<void> {
    const host = this.nodes;
    const ctl = new AbortController();
    this.starting = ctl;
    this.state = "starting";
    const began = host.timers.now();
    try {
      await this.nodes.gateOpen(this.node);
      if (ctl.signal.aborted) throw this.aborted();
      const deadline = began + host.loadTimeoutMs;
      const left = () => Math.max(1, deadline - host.timers.now());
      let status = await this.api.reload(this.remote, left(), ctl.signal);
      this.line(`reload → ${status}`);
      for (;;) {
        if (status === "loaded") break;
        if (status === "not_found") {
          throw new QmError(
            "model_not_found",
            `node "${this.node}" does not know model "${this.remote}" (not_found)`,
          );
        }
        if (status === "no_loader_config" || status === "internal_error") {
          throw new QmError(
            "upstream_start_failed",
            `node "${this.node}" could not load model "${this.remote}" (${status})`,
          );
        }
        if (host.timers.now() >= deadline) {
          throw new QmError(
            "upstream_start_timeout",
            `node "${this.node}" did not load model "${this.remote}" within ${Math.round(host.loadTimeoutMs / 1000)} s (server.health_check_timeout_s)`,
          );
        }
        await delay(STATUS_POLL_MS, ctl.signal, host.timers);
        if (ctl.signal.aborted) throw this.aborted();
        // Unloaded again (or never started loading): ask once more; otherwise ask how it goes.
        status =
          status === "unloaded"
            ? await this.api.reload(this.remote, left(), ctl.signal)
            : await this.api.status(this.remote, ctl.signal);
      }
      this.resident = true;
      this.state = "ready";
      this.line(`loaded in ${Math.round(host.timers.now() - began)} ms`);
    } catch (err) {
      this.state = "stopped";
      const e = ctl.signal.aborted ? this.aborted() : asQmError(err);
      // An unreachable node is down for routing now, not only at its next poll.
      if (err instanceof NodeApiError && err.unreachable) host.unreachable(this.node, e.message);
      // The load may have gone through on the node before the failure was seen.
      this.resident = !ctl.signal.aborted;
      this.line(`load failed: ${e.message}`);
      throw e.code === "internal" ? new QmError("upstream_start_failed", e.message) : e;
    } finally {
      this.starting = null;
    }
  }

  async stop(): Promise<void> {
    this.starting?.abort();
    const wasLoaded = this.resident;
    const nodes = this.nodes;
    if (!wasLoaded && this.state === "stopped") return;
    this.state = "stopping";
    this.resident = false;
    // At shutdown the node keeps its models; in a defrag its restart frees them.
    if (!nodes.closing && !nodes.restarting(this.node)) {
      try {
        const status = await this.api.unload(this.remote);
        this.line(`unload → ${status}`);
      } catch (err) {
        this.line(`unload failed: ${asQmError(err).message}`);
        nodes.log.warn(asQmError(err).message);
      }
      if (wasLoaded) nodes.cycled(this.node);
    }
    this.state = "stopped";
  }

  /** The node had it loaded without qm's asking. */
  adopted(): void {
    this.resident = true;
    this.state = "ready";
  }

  /** The node unloaded it without qm's asking. */
  vanished(): void {
    this.resident = false;
    this.state = "stopped";
  }

  logs(): string[] {
    return [...this.lines];
  }

  stderrTail(lines = 5): string[] {
    return this.lines.slice(-lines);
  }

  private aborted(): QmError {
    return new QmError("model_unloaded", `model "${this.id}" was unloaded while it was loading`);
  }

  private line(text: string): void {
    const line = `node ${this.node}: ${this.remote}: ${text}`;
    this.lines.push(line);
    if (this.lines.length > LOG_LINES) this.lines.shift();
    this.nodes.onLine(this.id, line);
  }
}
