/**
 * Typebox schemas of `quartermaster.toml` as written (snake_case). Defaults live here, as
 * `default` annotations, and nowhere else: docs/config.md's key tables and `qm config schema`
 * are generated from them (`bun scripts/gen-config-doc.ts`). Every table is closed
 * (`additionalProperties: false`): a typo such as `ttl = 10` must fail loudly rather than
 * silently leave the model without a TTL.
 */
import { type Static, type TLiteral, type TSchema, type TUnion, Type } from "@sinclair/typebox";

const closed = { additionalProperties: false, default: {} } as const;
const nonNegative = (value: number) => Type.Number({ minimum: 0, default: value });
/**
 * The longest delay a JS timer can hold is 2^31 − 1 ms (about 24.8 days); past it Node and Bun
 * fire at once and warn (TimeoutOverflowWarning). Durations are bounded so none can overflow.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;
const seconds = (value: number) =>
  Type.Number({ minimum: 0, maximum: Math.floor(MAX_TIMER_MS / 1000), default: value });
const millis = (value: number) =>
  Type.Integer({ minimum: 0, maximum: MAX_TIMER_MS, default: value });
/** A fair-share weight: a key's share of the GPU against the others', in whole numbers. */
const weight = (value: number, priority: string) =>
  Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: value,
    description: `The weight of keys with priority = "${priority}".`,
  });
const strings = (value: string[] = []) => Type.Array(Type.String(), { default: value });
/** A string enum; the cast keeps the literal union in `Static` (`.map` loses it). */
const oneOf = <const T extends readonly string[]>(values: T, value: T[number]) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    { default: value },
  ) as unknown as TUnion<TLiteral<T[number]>[]>;

// `${PORT}` is a qm macro; the backslash keeps JS from reading it as a placeholder.
/** The highest GPU index a config may name (CUDA numbers cards from 0). */
export const MAX_GPU_INDEX = 63;

const DEFAULT_PROXY = `http://127.0.0.1:\${PORT}`;

export const ServerSchema = Type.Object(
  {
    listen: strings(["127.0.0.1:8080"]),
    metrics_listen: Type.String({ default: "" }),
    /**
     * `GET /metrics` on the API listeners too: `true` behind the API key like every route,
     * `"open"` without one (an endpoint picker scrapes the inference port and sends no key).
     */
    metrics_on_api: Type.Union([Type.Boolean(), Type.Literal("open")], { default: false }),
    api_keys: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    start_port: Type.Integer({ minimum: 1, maximum: 65535, default: 10001 }),
    health_check_timeout_s: seconds(120),
    max_body_mb: nonNegative(64),
    shutdown_timeout_s: seconds(10),
    log_level: oneOf(["debug", "info", "warn", "error"], "info"),
    /** Host names a request may carry; [] = loopback names on loopback listeners, any elsewhere. */
    allowed_hosts: strings(),
    /** Browser origins that may call qm (CORS); [] = none but qm's own. */
    cors_origins: strings(),
    /** Where qm keeps its state (the record of running model processes); "" = the XDG default. */
    state_dir: Type.String({ default: "" }),
    /** Responses kept for `previous_response_id` and `GET /v1/responses/{id}`; 0 = none. */
    responses_store: Type.Integer({ minimum: 0, default: 200 }),
    /** The kept responses' size bound, in MB. */
    responses_store_mb: nonNegative(64),
    /** Reload the config when its file changes on disk (SIGHUP and the API reload regardless). */
    watch_config: Type.Boolean({ default: true }),
    /** Models loaded at startup, in this order (then models with `preload = true`). */
    preload: strings(),
  },
  closed,
);

export const SchedulerSchema = Type.Object(
  {
    hold_ms: millis(10000),
    patience_ms: millis(300000),
    /** Requests waiting at once, across all models; more get 503 with Retry-After. */
    max_queue: Type.Integer({ minimum: 1, default: 512 }),
    hold_on: oneOf(["tool_calls", "request"], "tool_calls"),
    /** `"cost"`: hold or yield by what each costs (src/scheduler/design.md); `"fixed"`: `hold_ms`. */
    hold_policy: oneOf(["cost", "fixed"], "cost"),
    /** Sharing the GPU between keys by priority (src/scheduler/design.md, "Fair share"). */
    fair_share: Type.Object(
      {
        enabled: Type.Boolean({
          default: true,
          description: "Share by priority; false: first come, first served.",
        }),
        interactive: weight(4, "interactive"),
        normal: weight(2, "normal"),
        batch: weight(1, "batch"),
      },
      {
        additionalProperties: false,
        default: { enabled: true, interactive: 4, normal: 2, batch: 1 },
      },
    ),
  },
  closed,
);

export const ActivitySchema = Type.Object(
  {
    /** Off: no activity log and no `request` events. */
    enabled: Type.Boolean({ default: true }),
    /** Finished requests kept for `GET /api/requests`; 0 = none. */
    size: Type.Integer({ minimum: 0, default: 1000 }),
    /** Keep each request and its answer (redacted, truncated) for `GET /api/requests/{id}`. */
    capture: Type.Boolean({ default: false }),
    /** Bytes kept of each request body and each answer. */
    capture_bytes: Type.Integer({ minimum: 0, default: 65536 }),
    /** Bytes kept by all captures together, in MB. */
    capture_total_mb: nonNegative(64),
    /** Captures are written to the database with their records (`[store]`), not only kept in memory. */
    capture_persist: Type.Boolean({ default: false }),
  },
  closed,
);

/** `[keys.NAME]`: a named API key, its models and its limits. */
export const KeySchema = Type.Object(
  {
    /** The key itself; or `key_sha256`, so that the file holds no secret. */
    key: Type.String({ default: "" }),
    key_sha256: Type.String({ default: "" }),
    /** Model ids and aliases this key may use (`*` patterns); ["*"] = all. */
    models: strings(["*"]),
    admin: Type.Boolean({ default: false }),
    priority: oneOf(["interactive", "normal", "batch"], "normal"),
    /** Requests in flight at once on the box; more wait. 0 = no cap of its own. */
    max_concurrency: Type.Integer({ minimum: 0, maximum: 1000000, default: 0 }),
    /** Requests waiting at once; more get 503. 0 = no cap of its own. */
    max_queued: Type.Integer({ minimum: 0, maximum: 1000000, default: 0 }),
    /** Requests per minute; more get 429. 0 = no limit. */
    rpm: Type.Integer({ minimum: 0, maximum: 1000000000, default: 0 }),
    /** Prompt and completion tokens per minute; more get 429. 0 = no limit. */
    tokens_per_min: Type.Integer({ minimum: 0, maximum: 1000000000000, default: 0 }),
  },
  closed,
);

/** `[store]`: what outlasts a restart (the SQLite database in `server.state_dir`). */
export const StoreSchema = Type.Object(
  {
    enabled: Type.Boolean({ default: true }),
    /** Rows older than this are deleted. */
    max_age_days: Type.Number({ minimum: 0.01, maximum: 36500, default: 30 }),
    /** The database's size bound, in MB; past it the oldest rows go first. */
    max_mb: Type.Number({ minimum: 1, maximum: 1048576, default: 256 }),
  },
  closed,
);

export const ResourcesSchema = Type.Object(
  {
    /** `"auto"`: Apple Silicon's unified memory share, else the GPUs' total once read. */
    vram_budget_gb: Type.Union([Type.Literal("auto"), Type.Number({ minimum: 0 })], {
      default: 0,
    }),
    ram_budget_gb: nonNegative(0),
    oom_guard_reserve_gb: nonNegative(1.0),
    gpu_probe: Type.String({ default: "auto" }),
    /** How often the GPU probe samples memory (the watchdog's reaction time). */
    gpu_probe_interval_ms: Type.Integer({ minimum: 100, maximum: MAX_TIMER_MS, default: 2000 }),
    /** Per-card budgets (several GPUs); [] = one budget for the box, or cards as detected. */
    gpus: Type.Array(
      Type.Object(
        {
          index: Type.Integer({ minimum: 0, maximum: MAX_GPU_INDEX }),
          vram_budget_gb: Type.Number({ minimum: 0 }),
        },
        { additionalProperties: false },
      ),
      { default: [] },
    ),
  },
  closed,
);

/** What a model can do, as Ollama's `/api/show` `capabilities` names it. */
export const CAPABILITIES = [
  "completion",
  "tools",
  "embedding",
  "thinking",
  "vision",
  "insert",
] as const;

/**
 * The Ollama version `GET /api/version` answers. Clients gate on it (Codex CLI refuses below
 * 0.13.4); docs/api.md says why the default is what it is.
 */
export const DEFAULT_OLLAMA_VERSION = "0.13.5";
/** `MAJOR.MINOR.PATCH`, with an optional pre-release (`0.14.0-rc1`), as Ollama numbers releases. */
export const OLLAMA_VERSION_FORMAT = /^\d{1,6}\.\d{1,6}\.\d{1,6}(-[0-9A-Za-z.-]{1,32})?$/;

export const OllamaSchema = Type.Object(
  {
    /** Checked against `OLLAMA_VERSION_FORMAT` by the loader (Draft 4 editors know no pattern). */
    version: Type.String({ default: DEFAULT_OLLAMA_VERSION }),
  },
  closed,
);

export const RouterSchema = Type.Object({ policy: oneOf(["group", "matrix"], "group") }, closed);

export const GroupSchema = Type.Object(
  {
    members: strings(),
    swap: Type.Boolean({ default: true }),
    exclusive: Type.Boolean({ default: true }),
    persistent: Type.Boolean({ default: false }),
    pool: oneOf(["vram", "ram"], "vram"),
  },
  closed,
);

export const MatrixSchema = Type.Object(
  {
    sets: Type.Array(Type.Array(Type.String()), { default: [] }),
    evict_cost: Type.Record(Type.String(), Type.Number({ minimum: 0 }), { default: {} }),
  },
  closed,
);

export const ModelSchema = Type.Object(
  {
    cmd: Type.String(),
    proxy: Type.String({ default: DEFAULT_PROXY }),
    check_endpoint: Type.String({ default: "/health" }),
    cmd_stop: Type.String({ default: "" }),
    aliases: strings(),
    env: Type.Record(Type.String(), Type.String(), { default: {} }),
    ttl_s: seconds(0),
    concurrency_limit: Type.Integer({ minimum: 0, default: 0 }),
    est_vram_gb: nonNegative(0),
    est_ram_gb: nonNegative(0),
    send_loading_state: Type.Boolean({ default: true }),
    unlisted: Type.Boolean({ default: false }),
    use_model_name: Type.String({ default: "" }),
    strip_params: strings(),
    set_params: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
    anthropic_native: Type.Boolean({ default: false }),
    /** What evicting it does: stop the process, or put it to sleep (vLLM `--enable-sleep-mode`). */
    evict: oneOf(["stop", "sleep"], "stop"),
    sleep_level: Type.Union([Type.Literal(1), Type.Literal(2)], { default: 1 }),
    responses_api: oneOf(["translate", "native"], "translate"),
    stop_timeout_s: seconds(10),
    /** Longest wait for the upstream's first byte (headers or body); 0 = none. */
    first_byte_timeout_s: seconds(600),
    /** Longest silence between two body chunks once the upstream has started; 0 = none. */
    stall_timeout_s: seconds(120),
    /** Merge the server's own `/metrics` into qm's; "auto": llama-server with --metrics, vLLM. */
    scrape_upstream_metrics: Type.Union([Type.Literal("auto"), Type.Boolean()], {
      default: "auto",
    }),
    /** llama-server only: save its slots' KV cache before a stop, restore them after a start. */
    keep_kv: Type.Boolean({ default: false }),
    /** The model's KV folder is kept under this size; the oldest files go first. */
    keep_kv_max_mb: Type.Integer({ minimum: 1, maximum: 16777216, default: 4096 }),
    /** One deadline for all saves before a stop (and all restores after a start). */
    keep_kv_timeout_s: Type.Number({ minimum: 0.1, maximum: 3600, default: 20 }),
    /** A `?ctx=N` request (Ollama's `num_ctx`) is rounded up to a multiple of this. */
    ctx_step: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 4096 }),
    /** Loaded at startup (after `server.preload`, in file order). */
    preload: Type.Boolean({ default: false }),
    /** What the model can do (Ollama's `/api/show`); []: asked of its server, or its file. */
    capabilities: Type.Array(Type.Union(CAPABILITIES.map((c) => Type.Literal(c))), {
      default: [],
    }),
    /** Read its GGUF files into the page cache while it waits to load (src/runtime/design.md). */
    prefetch: Type.Boolean({ default: true }),
    /** How many GPUs it needs (default 1 with several cards), or the fixed cards it runs on. */
    gpus: Type.Union(
      [
        Type.Integer({ minimum: 1, maximum: MAX_GPU_INDEX + 1 }),
        Type.Array(Type.Integer({ minimum: 0, maximum: MAX_GPU_INDEX })),
      ],
      { default: 1 },
    ),
  },
  closed,
);

export const PeerSchema = Type.Object(
  {
    url: Type.String(),
    kind: oneOf(["openai", "qm", "mistralrs"], "openai"),
    api_key: Type.String({ default: "" }),
    models: strings(),
    /** Connect + first byte; past it the peer counts as down for this request. */
    timeout_s: seconds(30),
    /** A tie-break between peers that serve the same model equally well: higher wins. */
    weight: Type.Number({ minimum: 0, default: 1 }),
    /** A qm / llama-swap peer's status is polled this often when its events are not available. */
    poll_s: Type.Number({ minimum: 0.1, maximum: 3600, default: 5 }),
    // Managed mistral.rs nodes only (src/peers/mistralrs.md).
    /** The node's memory for its models; 0 = not limited by memory. */
    vram_budget_gb: nonNegative(0),
    /** Each model's footprint on the node, by the node's model id. */
    est_vram_gb: Type.Record(Type.String(), Type.Number({ minimum: 0 }), { default: {} }),
    /** At most this many models resident on the node at once; 0 = no count limit. */
    max_loaded: Type.Integer({ minimum: 0, maximum: 100000, default: 0 }),
    /** Models never unloaded by qm. */
    pinned: strings(),
    /** Restart the node (`restart_cmd`) after this many unload/reload cycles, once idle; 0 = never. */
    defrag_after_cycles: Type.Integer({ minimum: 0, maximum: 1000000, default: 0 }),
    /** How the node is restarted (argv, no shell), e.g. "systemctl restart mistralrs". */
    restart_cmd: Type.String({ default: "" }),
  },
  closed,
);

const tableOf = <T extends TSchema>(schema: T) =>
  Type.Record(Type.String(), schema, { default: {} });

export const ConfigFileSchema = Type.Object(
  {
    server: ServerSchema,
    keys: tableOf(KeySchema),
    scheduler: SchedulerSchema,
    activity: ActivitySchema,
    store: StoreSchema,
    resources: ResourcesSchema,
    router: RouterSchema,
    ollama: OllamaSchema,
    groups: tableOf(GroupSchema),
    matrix: MatrixSchema,
    models: tableOf(ModelSchema),
    peers: tableOf(PeerSchema),
    // Numbers and booleans are accepted because `ctx = 8192` reads more naturally than
    // `ctx = "8192"`; they are inserted as their TOML text.
    macros: tableOf(Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  },
  closed,
);

export type ConfigFile = Static<typeof ConfigFileSchema>;
export type ModelFile = Static<typeof ModelSchema>;
export type PeerFile = Static<typeof PeerSchema>;
export type GroupFile = Static<typeof GroupSchema>;
export type KeyFile = Static<typeof KeySchema>;

/** The sections whose scalar keys `QM_<SECTION>__<KEY>` may override. */
export const OVERRIDABLE_SECTIONS = {
  server: ServerSchema,
  scheduler: SchedulerSchema,
  resources: ResourcesSchema,
  router: RouterSchema,
} as const;
