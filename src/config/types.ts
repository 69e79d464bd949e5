/**
 * The validated, normalised configuration every other module reads. Wire/TOML shapes live
 * in `schema.ts`; this is the internal form (camelCase, defaults applied, macros expanded,
 * `${PORT}` allocated). Built only by `loadConfigText` / `loadConfigFile`.
 */

export interface ServerConfig {
  /** `host:port` addresses, each served by its own listener sharing one scheduler. */
  listen: string[];
  /** `host:port` of the Prometheus listener; "" = off. */
  metricsListen: string;
  /**
   * `GET /metrics` is served on the API listeners too: `true` behind the API key, `"open"`
   * without one (that path only).
   */
  metricsOnApi: boolean | "open";
  apiKeys: string[];
  startPort: number;
  healthCheckTimeoutS: number;
  /** Largest request body accepted on API routes, in bytes (413 beyond). */
  maxBodyBytes: number;
  /** On SIGINT/SIGTERM, how long in-flight requests may finish before they are cut. */
  shutdownTimeoutS: number;
  logLevel: "debug" | "info" | "warn" | "error";
  /** `server.allowed_hosts` as written ([] = the per-listener default). */
  allowedHosts: string[];
  /** Browser origins allowed to call qm (lower-case, no trailing slash). */
  corsOrigins: string[];
  /** Directory for qm's state files (absolute). */
  stateDir: string;
  /** Most Responses kept in memory (`previous_response_id`, GET); 0 = none. */
  responsesStore: number;
  /** The kept Responses' bound in bytes. */
  responsesStoreBytes: number;
  /** Reload when the config file changes on disk (`server.watch_config`). */
  watchConfig: boolean;
  /**
   * Models loaded at startup, in order: `server.preload`, then models with `preload = true`
   * in file order, each once. Absent: none.
   */
  preload?: string[];
}

export interface SchedulerConfig {
  holdMs: number;
  patienceMs: number;
  holdOn: "tool_calls" | "request";
  /**
   * `"cost"`: a hold lasts the conversation's expected tool gap and yields to a waiter when
   * holding costs more than swapping there and back; `"fixed"`: `hold_ms`, until patience.
   */
  holdPolicy: "cost" | "fixed";
  /** Most requests waiting at once; beyond it 503. */
  maxQueue: number;
  /** Sharing the GPU between keys (`[scheduler.fair_share]`); absent: the defaults. */
  fairShare?: FairShareConfig;
}

/** `[scheduler.fair_share]`: whether keys share by priority, and each priority's weight. */
export interface FairShareConfig {
  /** Off: keys keep their `max_concurrency`, and the rest is first come, first served. */
  enabled: boolean;
  weights: { interactive: number; normal: number; batch: number };
}

export interface ResourcesConfig {
  /**
   * GPU memory to plan for; 0 = no budget. `vram_budget_gb = "auto"` is resolved when the file
   * is loaded: the GPU's share of unified memory on Apple Silicon (src/platform), else 0.
   */
  vramBudgetGb: number;
  /**
   * `vram_budget_gb = "auto"`. Where it resolved to 0 (no unified memory), the GPU probe's
   * total is the budget once there is a reading (src/runtime/gpu-watch.ts); absent otherwise.
   */
  vramBudgetAuto?: true;
  ramBudgetGb: number;
  oomGuardReserveGb: number;
  /** Command used to read GPU memory, or "off". */
  gpuProbe: string;
  /** Milliseconds between GPU memory samples. */
  gpuProbeIntervalMs: number;
  /** `resources.gpus`: one budget per card, by index order. Absent: not configured. */
  gpus?: GpuBudget[];
}

/** One card's budget (`resources.gpus`). */
export interface GpuBudget {
  index: number;
  vramBudgetGb: number;
}

export interface GroupConfig {
  id: string;
  members: string[];
  swap: boolean;
  exclusive: boolean;
  persistent: boolean;
  pool: "vram" | "ram";
}

export interface MatrixConfig {
  sets: string[][];
  evictCost: Record<string, number>;
}

export interface ModelConfig {
  id: string;
  /** `cmd` after macro expansion (for display). */
  cmd: string;
  /** `cmd` split like a shell would (quotes honoured, no shell run). */
  argv: string[];
  /** Base URL of the upstream, macros expanded (no trailing slash). */
  proxy: string;
  /** Port allocated for `${PORT}`, or null when the model's config never uses it. */
  port: number | null;
  /** Path polled for readiness, or null for "none". */
  checkEndpoint: string | null;
  /** `cmd_stop` with every macro but `${PID}` expanded; "" = signal the process group. */
  cmdStop: string;
  aliases: string[];
  env: Record<string, string>;
  ttlS: number;
  concurrencyLimit: number;
  estVramGb: number;
  estRamGb: number;
  sendLoadingState: boolean;
  unlisted: boolean;
  useModelName: string;
  /** `strip_params` / `set_params`, applied to every upstream request body; null: none. */
  params: BodyParams | null;
  anthropicNative: boolean;
  /**
   * What evicting it does: `"stop"` ends the process; `"sleep"` puts it to sleep over the
   * server's sleep API (vLLM `POST /sleep?level=N`), and the next request wakes it.
   */
  evict: "stop" | "sleep";
  /** vLLM sleep level: 1 moves the weights to host RAM, 2 discards them. */
  sleepLevel: 1 | 2;
  /** `responses_api = "native"`: `/v1/responses` is passed through, not translated. */
  responsesNative: boolean;
  stopTimeoutS: number;
  /** Milliseconds to wait for the upstream's first byte; 0 = no limit. */
  firstByteTimeoutMs: number;
  /** Milliseconds of silence allowed between body chunks; 0 = no limit. */
  stallTimeoutMs: number;
  /**
   * `gpus`: how many cards it needs, or the fixed cards (indices, ascending) it runs on.
   * Absent: one card when there are several.
   */
  gpus?: number | number[];
  /** The server's own `/metrics` is merged into qm's (`scrape_upstream_metrics`, "auto" resolved). */
  scrapeUpstreamMetrics: boolean;
  /** The group it belongs to; ungrouped models belong to the implicit default group. */
  group: string;
  /** `keep_kv = true` (llama-server): where and how its slots are saved across a stop; else null. */
  keepKv: KeepKv | null;
  /**
   * `capabilities` as written (Ollama's `/api/show`), in the order given; absent: found from
   * the running server, else the model file, else a default (src/api/ollama/capabilities.ts).
   */
  capabilities?: Capability[];
  /** `ctx_step`: a `?ctx=N` request is rounded up to a multiple of this (src/runtime/design.md). */
  ctxStep: number;
  /**
   * `prefetch`: while it waits to load, its GGUF files (`-m` in `cmd`, every part of a split
   * model) are read into the OS page cache (src/runtime/design.md, "Prefetch").
   */
  prefetch: boolean;
  /**
   * The model's strings with every macro resolved except `${PORT}`, `${MODEL_ID}` (and
   * `${PID}`): what a `model?ctx=N` variant is minted from, with a port of its own.
   */
  template: {
    cmd: string;
    proxy: string;
    checkEndpoint: string;
    cmdStop: string;
    useModelName: string;
    env: Record<string, string>;
  };
  /** Set on a `model?ctx=N` variant: the model it was minted from and its context size. */
  variantOf?: { base: string; ctx: number };
  /**
   * Set on a model another box serves (`src/peers`): it is never started or leased here, its
   * requests go to the peer's URL (`proxy`) with the peer's key.
   */
  peer?: PeerTarget;
  /**
   * Set on a model of a managed mistral.rs node (`[peers.NAME] kind = "mistralrs"`): scheduled
   * here like a local model, loaded and unloaded over the node's HTTP API (src/peers/mistralrs.md).
   */
  node?: NodeTarget;
}

/** A model's saved KV cache (`keep_kv`, src/process/design.md). */
export interface KeepKv {
  /** `<state_dir>/kv/<model id made safe>` (passed with a trailing "/" as `--slot-save-path`). */
  dir: string;
  /** `keep_kv_max_mb` in bytes. */
  maxBytes: number;
  /** `keep_kv_timeout_s` in milliseconds: one deadline for a whole save (or restore). */
  timeoutMs: number;
  /**
   * Hash of the command and env as written (before `${PORT}` is filled in; without the save
   * path) and the context size: files saved under another are removed.
   */
  hash: string;
  /** The model file (`-m`), stamped (size, mtime) with the saved files: another stamp drops them. */
  modelFile: string | null;
}

/** A managed node's model: the node, its key, the node's id for the model. */
export interface NodeTarget {
  node: string;
  apiKey: string;
  /** The model's id on the node (sent upstream as `model`, and as `model_id` to load it). */
  remote: string;
  /** Listed in `pinned`: never unloaded by qm. */
  pinned: boolean;
  /** Found in the node's `GET /v1/models`, not named in the config. */
  discovered: boolean;
}

/** A managed mistral.rs node's residency settings (`kind = "mistralrs"`). */
export interface NodeSettings {
  vramBudgetGb: number;
  /** `est_vram_gb`: each model's footprint by the node's id for it. */
  estVramGb: Record<string, number>;
  maxLoaded: number;
  pinned: string[];
  defragAfterCycles: number;
  /** `restart_cmd` split into argv; empty when none. */
  restartArgv: string[];
}

/** Where a peer's model is sent: the peer, its key, the name it knows the model by. */
export interface PeerTarget {
  peer: string;
  apiKey: string;
  /** The model's name on the peer (sent upstream as `model`). */
  remote: string;
}

export interface PeerConfig {
  id: string;
  url: string;
  kind: "openai" | "qm" | "mistralrs";
  apiKey: string;
  models: string[];
  /** Milliseconds to wait for the peer's connection and first byte (`timeout_s`). */
  timeoutMs: number;
  /** Tie-break between equally good peers: higher wins. */
  weight: number;
  /** Milliseconds between status polls of a qm / llama-swap peer without events. */
  pollMs: number;
  /** Set for `kind = "mistralrs"`: the node's residency settings. */
  node: NodeSettings | null;
}

/** How a key's requests are weighed against other keys' (`[keys.NAME] priority`). */
export type KeyPriority = "interactive" | "normal" | "batch";

/**
 * A named API key (`[keys.NAME]`; the keys of `server.api_keys` are not here: they are the
 * admin keys, named `admin`). Only the key's SHA-256 is kept.
 */
export interface KeyConfig {
  name: string;
  /** SHA-256 of the key, lower-case hex (`key_sha256`, or of the literal `key`). */
  sha256: string;
  /** Patterns of the model ids and aliases it may use (`*` matches any run of characters). */
  models: string[];
  /** It may use the admin routes and see every key's data. */
  admin: boolean;
  priority: KeyPriority;
  /** Its requests in flight at once on the box; more wait. 0: no cap of its own. */
  maxConcurrency: number;
  /** Its requests waiting at once; more get 503 `queue_full`. 0: no cap of its own. */
  maxQueued: number;
  /** Requests per minute; more get 429. 0: no limit. */
  rpm: number;
  /** Prompt plus completion tokens per minute; more get 429. 0: no limit. */
  tokensPerMin: number;
}

/** What outlasts a restart (`[store]`): the SQLite database in `server.state_dir`. */
export interface StoreConfig {
  enabled: boolean;
  /** Rows older than this many milliseconds are deleted. */
  maxAgeMs: number;
  /** The database's bound in bytes; past it the oldest rows go first. */
  maxBytes: number;
}

/** What a model can do, in Ollama's words (`/api/show` `capabilities`). */
export type Capability = "completion" | "tools" | "embedding" | "thinking" | "vision" | "insert";

/** `[ollama]`: how qm presents itself on Ollama's API. */
export interface OllamaConfig {
  /** What `GET /api/version` answers. */
  version: string;
}

export interface ActivityConfig {
  /** Off: no log and no `request` events. */
  enabled: boolean;
  /** How many finished requests the log keeps. */
  size: number;
  /** Each record keeps its request and answer (`GET /api/requests/{id}`). */
  capture: boolean;
  /** Bytes kept of each request body and of each answer. */
  captureBytes: number;
  /** Bytes kept by all captures together; the oldest go first. */
  captureTotalBytes: number;
  /** Captures are written to the database with their records (`[store]`). */
  capturePersist: boolean;
}

export interface Config {
  /** Path the config was read from ("" for inline text). */
  file: string;
  server: ServerConfig;
  /** `[keys.NAME]` by name (the admin keys of `server.api_keys` are `server.apiKeys`). */
  keys: Record<string, KeyConfig>;
  scheduler: SchedulerConfig;
  /** The activity log (`GET /api/requests`). */
  activity: ActivityConfig;
  store: StoreConfig;
  resources: ResourcesConfig;
  router: { policy: "group" | "matrix" };
  ollama: OllamaConfig;
  /** Every group, the implicit default group (`DEFAULT_GROUP`) included when it has members. */
  groups: Record<string, GroupConfig>;
  matrix: MatrixConfig;
  models: Record<string, ModelConfig>;
  peers: Record<string, PeerConfig>;
  macros: Record<string, string>;
  /** alias → model id (every alias is unique and never shadows a model id). */
  aliases: Record<string, string>;
  /** Aliases with a `*`, in file order (`aliases.ts`). */
  aliasPatterns: AliasPattern[];
}

/** Top-level fields removed from (`strip`), then set in (`set`), every upstream body. */
export interface BodyParams {
  strip: string[];
  set: Record<string, unknown>;
}

/** An alias with a `*`: names matching it resolve to `id`. */
export interface AliasPattern {
  pattern: string;
  id: string;
}

/**
 * Ungrouped models form this group: swap = true (one at a time), exclusive = true,
 * persistent = false, pool "vram" — the behaviour a single-GPU user expects by default.
 */
export const DEFAULT_GROUP = "(default)";
