/**
 * A managed mistral.rs node's model-lifecycle API (v0.8+), over an injected fetch and timers:
 * `GET /v1/models` (each model with its `status`), `POST /v1/models/{status,reload,unload}` with
 * `{"model_id"}`. Answers are read defensively: a node is another program, and a malformed answer
 * is an error naming the node, never a throw of the parser's. src/peers/mistralrs.md.
 */
import type { PeerConfig } from "../config/types.ts";
import type { Fetch } from "../shared/fetch.ts";
import { readAtMost } from "../shared/read-at-most.ts";
import { setTimeoutSignal, type Timers } from "../shared/timer.ts";
import { peerCredentials } from "./target.ts";
import { describe } from "./watch.ts";

/** The statuses a node reports for a model (and what qm makes of an unreadable one). */
export type NodeModelStatus =
  | "loaded"
  | "unloaded"
  | "reloading"
  | "not_found"
  | "no_loader_config"
  | "internal_error";

const STATUSES: ReadonlySet<string> = new Set([
  "loaded",
  "unloaded",
  "reloading",
  "not_found",
  "no_loader_config",
  "internal_error",
]);

/** The most of a node's answer qm reads (a model list is small). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** The most of a node's `error` text that qm passes on. */
const MAX_ERROR_CHARS = 500;

/** A lifecycle call's answer: the status, and the node's `error` text when it gave one. */
export interface NodeAnswer {
  status: NodeModelStatus;
  error: string | null;
}

/**
 * Which of a model's entries counts when the node lists it more than once. mistral.rs 0.8.1
 * lists its `reloading` ids, then the loaded ones, then the unloaded ones not reloading: a
 * loaded model whose id a failed reload left `reloading` comes twice, and it serves. Loaded
 * wins, then reloading, then unloaded — whatever the order of the entries.
 */
const RANK: Record<NodeModelStatus, number> = {
  loaded: 3,
  reloading: 2,
  unloaded: 1,
  not_found: 0,
  no_loader_config: 0,
  internal_error: 0,
};

/** A node's list entries (`{id, status}`), one status per id (`RANK`). */
export function mergeListed(entries: readonly unknown[]): Map<string, NodeModelStatus> {
  const out = new Map<string, NodeModelStatus>();
  for (const entry of entries) {
    if (typeof entry !== "object" || entry === null) continue;
    const { id, status } = entry as { id?: unknown; status?: unknown };
    if (typeof id !== "string" || id === "" || typeof status !== "string") continue;
    if (!STATUSES.has(status)) continue;
    const s = status as NodeModelStatus;
    const had = out.get(id);
    if (RANK[s] > 0 && (had === undefined || RANK[s] > RANK[had])) out.set(id, s);
  }
  return out;
}

export class NodeApiError extends Error {
  /** The node could not be reached, or gave no answer in time (not: it answered badly). */
  unreachable = false;
}

export class MistralrsApi {
  private readonly fetch: Fetch;

  constructor(
    private readonly peer: Pick<PeerConfig, "id" | "url" | "apiKey" | "timeoutMs">,
    private readonly timers: Timers,
    fetcher?: Fetch,
  ) {
    this.fetch = fetcher ?? fetch;
  }

  /**
   * Every model the node has, with its status (`mergeListed`: entries without one, like
   * `default`, skipped; an id listed twice counted once).
   */
  async list(signal?: AbortSignal): Promise<Map<string, NodeModelStatus>> {
    const body = await this.call("GET", "/v1/models", undefined, this.peer.timeoutMs, signal);
    const data = (body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) throw this.error("GET /v1/models", "answered without a data list");
    return mergeListed(data);
  }

  status(model: string, signal?: AbortSignal): Promise<NodeAnswer> {
    return this.lifecycle("status", model, this.peer.timeoutMs, signal);
  }

  /**
   * Asks the node to load `model`; the answer may come once it is loaded, or at once. Only for
   * a model the node lists as unloaded: mistral.rs 0.8.1 answers `not_found` for a loaded model
   * or an id it does not have, and leaves that id `reloading` for good.
   */
  reload(model: string, timeoutMs: number, signal?: AbortSignal): Promise<NodeAnswer> {
    return this.lifecycle("reload", model, timeoutMs, signal);
  }

  unload(model: string, signal?: AbortSignal): Promise<NodeAnswer> {
    return this.lifecycle("unload", model, this.peer.timeoutMs, signal);
  }

  private async lifecycle(
    verb: "status" | "reload" | "unload",
    model: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<NodeAnswer> {
    const path = `/v1/models/${verb}`;
    const body = await this.call(
      "POST",
      path,
      JSON.stringify({ model_id: model }),
      timeoutMs,
      signal,
    );
    const { status, error } = body as { status?: unknown; error?: unknown };
    if (typeof status === "string" && STATUSES.has(status)) {
      return { status: status as NodeModelStatus, error: errorText(error) };
    }
    throw this.error(`POST ${path}`, `answered without a known status for "${model}"`);
  }

  private error(what: string, message: string): NodeApiError {
    return new NodeApiError(`node "${this.peer.id}": ${what} ${message}`);
  }

  /** One call, limited to `timeoutMs` on the injected timers; the JSON answer, any status. */
  private async call(
    method: "GET" | "POST",
    path: string,
    body: string | undefined,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const limit = setTimeoutSignal(this.timers, timeoutMs);
    const signals = signal ? AbortSignal.any([limit.signal, signal]) : limit.signal;
    const what = `${method} ${path}`;
    try {
      const headers = new Headers(peerCredentials(this.peer.apiKey));
      if (body !== undefined) headers.set("content-type", "application/json");
      let res: Response;
      try {
        res = await this.fetch(this.peer.url + path, {
          method,
          headers,
          body,
          signal: signals,
          proxy: false,
        } as RequestInit);
      } catch (err) {
        const e = limit.signal.aborted
          ? this.error(what, `gave no answer within ${timeoutMs} ms`)
          : this.error(what, `failed: ${describe(err)}`);
        e.unreachable = signal?.aborted !== true;
        throw e;
      }
      const bytes = await readAtMost(res, MAX_ANSWER_BYTES).catch((err: unknown) => {
        throw this.error(what, `failed: ${describe(err)}`);
      });
      if (bytes === null) throw this.error(what, `answered more than ${MAX_ANSWER_BYTES} bytes`);
      let json: unknown = null;
      try {
        json = JSON.parse(new TextDecoder().decode(bytes));
      } catch {
        // A non-JSON answer says nothing qm can read.
      }
      // A lifecycle call may answer 4xx/5xx with its status in the body (not_found): read it.
      if (json === null || typeof json !== "object") {
        throw this.error(what, `answered ${res.status} without JSON`);
      }
      if (res.status >= 500 && (json as { status?: unknown }).status === undefined) {
        throw this.error(what, `answered ${res.status}`);
      }
      return json;
    } finally {
      limit.cancel();
    }
  }
}

/** The node's `error` text, bounded and on one line; null when it gave none. */
function errorText(error: unknown): string | null {
  if (typeof error !== "string") return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control bytes are what is replaced
  const line = error.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  if (line === "") return null;
  return line.length > MAX_ERROR_CHARS ? `${line.slice(0, MAX_ERROR_CHARS)}…` : line;
}
