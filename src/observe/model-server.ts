/**
 * The model server protocol (Gateway API Inference Extension, proposal 003): the gauges an
 * endpoint picker reads from a model server's `/metrics` to choose a pod per request, under
 * the vLLM names its default engine config reads, so a qm pod needs no engine config of its
 * own. qm is a model-swapping server at a coarser grain than LoRA: its models stand for the
 * adapters. The picker's rules, read from its source, are in docs/cluster.md; in short it
 * takes the first series of each gauge and the highest-valued series of
 * `vllm:lora_requests_info`, so each name here has exactly one series and no `model` label.
 *
 * - `vllm:num_requests_waiting`: requests waiting in qm — queued for a busy model, for a swap
 *   or a load, for a concurrency slot — over this box's models;
 * - `vllm:num_requests_running`: requests in flight to them;
 * - `vllm:kv_cache_usage_perc` (0–1): the busiest engine's KV-cache use among those whose own
 *   metrics qm scrapes (`scrape_upstream_metrics`); 0 when none reports it;
 * - `vllm:lora_requests_info{max_lora, running_lora_adapters, waiting_lora_adapters}`, whose
 *   value is the Unix time (seconds) its labels last changed: running = the ready models,
 *   waiting = models loading or with requests waiting for them (each by its id and exact
 *   aliases), `max_lora` = those listed plus how many stopped models could be loaded now
 *   without evicting anything — the picker scores "room for one more" as
 *   `listed < max_lora` (lora-affinity-scorer), so `max_lora` is a capacity, as vLLM's is.
 *
 * The same figures under qm's own names: `qm_requests_waiting`, `qm_requests_running`,
 * `qm_kv_cache_usage_ratio`, `qm_models_loadable`, `qm_residency_info`.
 *
 * Only this box's own models count: a peer's, or a managed node's, are never reported here.
 */
import { Gauge, type Registry } from "prom-client";

/** The protocol's names, as its default engine config (vLLM's) reads them. */
export const PROTOCOL_NAMES = {
  waiting: "vllm:num_requests_waiting",
  running: "vllm:num_requests_running",
  kv: "vllm:kv_cache_usage_perc",
  info: "vllm:lora_requests_info",
} as const;

/** One model as the protocol sees it: this box's own (not a peer's, not a managed node's). */
export interface ProtocolModel {
  readonly ready: boolean;
  /** Starting (loading), or being woken. */
  readonly loading: boolean;
  readonly inflight: number;
  /** Requests waiting for it (queue, swap, load, concurrency slot). */
  readonly queued: number;
  /** The names a client may send for it (id, exact aliases); none for an unlisted model. */
  readonly names: readonly string[];
  /** Not resident, and loading it now would evict nothing. */
  readonly loadable: boolean;
}

/** The label values and figures of one scrape. */
export interface ProtocolFigures {
  waiting: number;
  running: number;
  kvUsage: number;
  /** Stopped listed models that could be loaded now without evicting anything. */
  loadable: number;
  /** Comma-joined, escaped, sorted by code point, no repeats. */
  runningAdapters: string;
  waitingAdapters: string;
  maxLora: number;
}

/**
 * A name as a list entry. The picker splits the list at commas and trims white space
 * (llm-d-router `extractor.go` `addAdapters`), so a `,` inside a name, a `%`, and white space
 * at either end are percent-escaped (`%2C`, `%25`, `%20`): the entry is never cut into two
 * wrong names, and decoding it gives the name back. A picker cannot match such an entry to a
 * request for the name as written; give the model an alias without a comma.
 */
export function adapterEntry(name: string): string {
  const inner = name.replace(/[%,]/g, (c) => (c === "%" ? "%25" : "%2C"));
  return inner.replace(/^\s+|\s+$/g, (ws) =>
    [...ws]
      .map((c) => `%${c.codePointAt(0)!.toString(16).toUpperCase().padStart(2, "0")}`)
      .join(""),
  );
}

/** Sorted by code point (UTF-8 byte order is code point order), no repeats, comma-joined. */
export function adapterList(names: Iterable<string>): string {
  const entries = [...new Set([...names].map(adapterEntry))].filter((e) => e !== "");
  entries.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return entries.join(",");
}

/** The protocol's figures for `models` now (pure). */
export function protocolFigures(models: Iterable<ProtocolModel>, kvUsage: number): ProtocolFigures {
  let waiting = 0;
  let running = 0;
  let loadable = 0;
  const ready: string[] = [];
  const coming: string[] = [];
  for (const m of models) {
    waiting += m.queued;
    running += m.inflight;
    if (m.names.length === 0) continue;
    if (m.ready) ready.push(...m.names);
    // A ready model with requests queued (a concurrency limit) is running, never waiting too.
    else if (m.loading || m.queued > 0) coming.push(...m.names);
    else if (m.loadable) loadable++;
  }
  const runningAdapters = adapterList(ready);
  const waitingAdapters = adapterList(coming);
  const listed = count(runningAdapters) + count(waitingAdapters);
  return {
    waiting,
    running,
    kvUsage: Number.isFinite(kvUsage) ? Math.min(1, Math.max(0, kvUsage)) : 0,
    loadable,
    runningAdapters,
    waitingAdapters,
    maxLora: listed + loadable,
  };
}

const count = (list: string) => (list === "" ? 0 : list.split(",").length);

type Family =
  | "waiting"
  | "running"
  | "kv"
  | "info"
  | "qmWaiting"
  | "qmRunning"
  | "qmKv"
  | "qmLoadable"
  | "qmInfo";

/** The protocol's gauges on one registry, set at each scrape. */
export class ModelServerGauges {
  private readonly g: Record<Family, Gauge<string>>;
  /** The label values last shown, and when (Unix seconds) they last changed. */
  private shown: string | null = null;
  private changedAt = 0;

  constructor(
    registry: Registry,
    /** Wall-clock milliseconds. */
    private readonly now: () => number = Date.now,
  ) {
    const registers = [registry];
    const gauge = (name: string, help: string, labelNames: string[] = []) =>
      new Gauge({ name, help, labelNames, registers });
    const info = ["max_lora", "running_lora_adapters", "waiting_lora_adapters"];
    this.g = {
      waiting: gauge(
        PROTOCOL_NAMES.waiting,
        "Model server protocol: requests waiting in qm (queued, waiting for a load or a slot), this box's models together.",
      ),
      running: gauge(
        PROTOCOL_NAMES.running,
        "Model server protocol: requests in flight to this box's models.",
      ),
      kv: gauge(
        PROTOCOL_NAMES.kv,
        "Model server protocol: the busiest engine's KV-cache use (0-1) among those whose metrics qm scrapes; 0 when none reports it.",
      ),
      info: gauge(
        PROTOCOL_NAMES.info,
        "Model server protocol: models ready (running_lora_adapters) and loading or waited for (waiting_lora_adapters), by the names a client may send; max_lora = those plus the models that could load now without evicting. Value: Unix time of the last change.",
        info,
      ),
      qmWaiting: gauge(
        "qm_requests_waiting",
        "Requests waiting in qm, this box's models together.",
      ),
      qmRunning: gauge("qm_requests_running", "Requests in flight to this box's models."),
      qmKv: gauge(
        "qm_kv_cache_usage_ratio",
        "The busiest engine's KV-cache use (0-1) among those whose metrics qm scrapes; 0 when none reports it.",
      ),
      qmLoadable: gauge(
        "qm_models_loadable",
        "Stopped models that could be loaded now without evicting another.",
      ),
      qmInfo: gauge(
        "qm_residency_info",
        "Models ready (running_models) and loading or waited for (waiting_models); max_models = those plus qm_models_loadable. Value: Unix time of the last change.",
        ["max_models", "running_models", "waiting_models"],
      ),
    };
  }

  /** Sets every protocol gauge from `f`. */
  set(f: ProtocolFigures): void {
    const g = this.g;
    g.waiting.set(f.waiting);
    g.qmWaiting.set(f.waiting);
    g.running.set(f.running);
    g.qmRunning.set(f.running);
    g.kv.set(f.kvUsage);
    g.qmKv.set(f.kvUsage);
    g.qmLoadable.set(f.loadable);
    const key = `${f.maxLora}\u0000${f.runningAdapters}\u0000${f.waitingAdapters}`;
    if (key !== this.shown) {
      this.shown = key;
      this.changedAt = this.now() / 1000;
    }
    g.info.reset();
    g.info.set(
      {
        max_lora: String(f.maxLora),
        running_lora_adapters: f.runningAdapters,
        waiting_lora_adapters: f.waitingAdapters,
      },
      this.changedAt,
    );
    g.qmInfo.reset();
    g.qmInfo.set(
      {
        max_models: String(f.maxLora),
        running_models: f.runningAdapters,
        waiting_models: f.waitingAdapters,
      },
      this.changedAt,
    );
  }
}
