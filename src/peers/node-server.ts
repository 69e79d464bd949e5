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
import { MistralrsApi, type NodeAnswer, NodeApiError } from "./mistralrs.ts";

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
  /** The node loaded a model at qm's reload (after an unload qm made there: one cycle). */
  reloaded(node: string): void;
  /** The node answered `unloaded` to qm's unload of a loaded model. */
  unloaded(node: string): void;
  /** false once the node answered an unload with `no_loader_config`; null: not known yet. */
  canUnload(node: string): boolean | null;
  /**
   * An unload that did not answer `unloaded` (`answer` null: no answer came): the model may
   * still be loaded, or gone from the node; the node is read again.
   */
  unloadFailed(node: string, remote: string, answer: NodeAnswer | null, message: string): void;
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
  /** The start under way sent a reload (the node may load it whatever happens next). */
  private asked = false;
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

  /**
   * Looks at the node's list first: a model it has loaded already is adopted, one it does not
   * list fails, and only an unloaded one is reloaded (mistral.rs 0.8.1 answers `not_found` to a
   * reload of anything else and leaves the id `reloading` for good). Then the reload, and
   * `status` until loaded.
   */
  async start(): Promise<void> {
    const host = this.nodes;
    const ctl = new AbortController();
    this.starting = ctl;
    this.state = "starting";
    this.resident = false;
    this.asked = false;
    const began = host.timers.now();
    try {
      await this.nodes.gateOpen(this.node);
      if (ctl.signal.aborted) throw this.aborted();
      const deadline = began + host.loadTimeoutMs;
      const left = () => Math.max(1, deadline - host.timers.now());
      const listed = (await this.api.list(ctl.signal)).get(this.remote);
      if (listed === undefined) throw this.missing();
      let answer: NodeAnswer = { status: listed, error: null };
      if (listed === "loaded") {
        this.line("already loaded on the node: adopted");
      } else if (listed === "reloading") {
        this.line("being loaded on the node already: waiting for it");
      } else {
        answer = await this.reload(left(), ctl.signal);
      }
      for (;;) {
        if (answer.status === "loaded") break;
        if (answer.status === "not_found") {
          // Loaded by someone else since the look (the node then answers so), or gone.
          const now = (await this.api.list(ctl.signal)).get(this.remote);
          this.line(`listed as ${now ?? "absent"} after not_found`);
          if (now === "loaded") break;
          throw now === undefined ? this.missing() : this.loadFailed(answer);
        }
        if (answer.status === "no_loader_config" || answer.status === "internal_error") {
          throw this.loadFailed(answer);
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
        answer =
          answer.status === "unloaded"
            ? await this.reload(left(), ctl.signal)
            : await this.api.status(this.remote, ctl.signal);
      }
      this.resident = true;
      this.state = "ready";
      if (this.asked) host.reloaded(this.node);
      this.line(`loaded in ${Math.round(host.timers.now() - began)} ms`);
    } catch (err) {
      this.state = "stopped";
      const e = ctl.signal.aborted ? this.aborted() : asQmError(err);
      // An unreachable node is down for routing now, not only at its next poll.
      if (err instanceof NodeApiError && err.unreachable) host.unreachable(this.node, e.message);
      // A reload sent may have gone through on the node before the failure was seen.
      this.resident = this.asked && !ctl.signal.aborted;
      this.line(`load failed: ${e.message}`);
      throw e.code === "internal" ? new QmError("upstream_start_failed", e.message) : e;
    } finally {
      this.starting = null;
    }
  }

  /**
   * Unloads it. Any answer but `unloaded` (or none) is a failed stop: the model may still hold
   * the node's memory (or be gone from it), so a model that was loaded rejects — the swap that
   * needed its room does not load its target — and the keeper reads the node again.
   */
  async stop(): Promise<void> {
    this.starting?.abort();
    const wasLoaded = this.resident;
    const nodes = this.nodes;
    if (!wasLoaded && (this.state === "stopped" || !this.asked)) {
      this.state = "stopped";
      return;
    }
    this.state = "stopping";
    this.resident = false;
    // At shutdown the node keeps its models; in a defrag its restart frees them.
    if (nodes.closing || nodes.restarting(this.node)) {
      this.state = "stopped";
      return;
    }
    let answer: NodeAnswer | null = null;
    let why = "";
    try {
      // On a node that drops what it unloads, no unload is sent: the model stays.
      if (nodes.canUnload(this.node) === false) {
        throw new QmError(
          "cannot_fit",
          "the node cannot unload models (no_loader_config): not asked, the model stays loaded",
        );
      }
      answer = await this.api.unload(this.remote);
      this.line(`unload → ${answer.status}${answer.error ? ` (${answer.error})` : ""}`);
    } catch (err) {
      why = asQmError(err).message;
      this.line(`unload failed: ${why}`);
    }
    this.state = "stopped";
    if (answer?.status === "unloaded") {
      if (wasLoaded) nodes.unloaded(this.node);
      return;
    }
    const message = `node "${this.node}" could not unload model "${this.remote}" (${answer ? said(answer) : why})`;
    nodes.unloadFailed(this.node, this.remote, answer, message);
    if (wasLoaded) throw new QmError("cannot_fit", message);
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

  /** An unload of it is under way. */
  get unloading(): boolean {
    return this.state === "stopping";
  }

  logs(): string[] {
    return [...this.lines];
  }

  stderrTail(lines = 5): string[] {
    return this.lines.slice(-lines);
  }

  private async reload(timeoutMs: number, signal: AbortSignal): Promise<NodeAnswer> {
    this.asked = true;
    const answer = await this.api.reload(this.remote, timeoutMs, signal);
    this.line(`reload → ${answer.status}${answer.error ? ` (${answer.error})` : ""}`);
    return answer;
  }

  private missing(): QmError {
    return new QmError(
      "upstream_start_failed",
      `node "${this.node}" does not list model "${this.remote}" (GET /v1/models): model "${this.id}" cannot load there`,
    );
  }

  private loadFailed(answer: NodeAnswer): QmError {
    return new QmError(
      "upstream_start_failed",
      `node "${this.node}" could not load model "${this.remote}" (${said(answer)})`,
    );
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

/** A lifecycle answer as messages quote it: `internal_error: Failed to load model: …`. */
function said(answer: NodeAnswer): string {
  return answer.error ? `${answer.status}: ${answer.error}` : answer.status;
}
