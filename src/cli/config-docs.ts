// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${PORT} and friends are qm's macros, literal text here
/**
 * What every key of `quartermaster.toml` means, for people: the `description`s of
 * `qm config schema` and the key tables of docs/config.md (`bun scripts/gen-config-doc.ts`)
 * both come from here. Types, bounds and defaults come from the typebox schema
 * (src/config/schema.ts) alone; tests/config/docs.test.ts fails when a key is in one and not
 * the other. Meanings are Markdown with code spans only (editors render them in hovers).
 */
import type { ConfigFile } from "../config/schema.ts";

export interface KeyDoc {
  meaning: string;
  /** A value worth showing beside the default, as it would be written in the file. */
  example?: unknown;
}

export interface SectionDoc {
  /** The section as it is written in the file: `[server]`, `[models.ID]`. */
  heading: string;
  /** One sentence on what the section is for. */
  about: string;
  keys: Record<string, KeyDoc>;
}

/** The sections whose keys are fixed (`[macros]` names are the user's own). */
export type DocumentedSection = Exclude<keyof ConfigFile, "macros">;

export const CONFIG_TITLE = "quartermaster.toml";

export const CONFIG_ABOUT =
  "Configuration of quartermaster (`qm`): its listeners, scheduler, memory budgets and the " +
  "model servers it runs. Every key is optional but a model's `cmd`; unknown keys are " +
  "errors. Reference: docs/config.md.";

export const MACROS_ABOUT =
  "`NAME = value` makes `${NAME}` expand to the value in any model string (numbers and " +
  "booleans as written). Built in: `${PORT}`, `${MODEL_ID}`, `${QM_BIN}`, `${env.NAME}`, " +
  "`${GPU_IDS}` (the cards a start was placed on) and `${PID}` in `cmd_stop`.";

export const CONFIG_DOCS: Record<DocumentedSection, SectionDoc> = {
  server: {
    heading: "[server]",
    about: "Listeners, limits and the access rules every request passes.",
    keys: {
      listen: {
        meaning:
          "Addresses the API listens on, as `host:port` (IPv6 as `[::1]:8080`; port `0` lets the system pick). Every listener serves the same API, on one shared scheduler.",
        example: ["127.0.0.1:8080", "0.0.0.0:8081"],
      },
      metrics_listen: {
        meaning:
          '`host:port` of a listener that serves only `GET /metrics` (Prometheus text format), or `""` for none. It needs no API key: bind it where only the scraper can reach it. It answers only the Host names `allowed_hosts` admits, as the API listeners do. Its port is kept out of `${PORT}` allocation. Requests are counted in the metrics only when this or `metrics_on_api` is set.',
      },
      metrics_on_api: {
        meaning:
          '`true`: also serve `GET /metrics` on the API listeners, behind the API key like every other route. `"open"`: serve it there without a key (that path only; the Host check still applies), as an endpoint picker needs: it scrapes the inference port and sends no key (docs/cluster.md).',
        example: "open",
      },
      api_keys: {
        meaning:
          "Admin keys (named `admin`; `[keys.NAME]` adds named ones). When any key is configured, every route but `GET /health`, `GET /ready` and the dashboard's static files (`/ui/`, which asks for the key) needs one, as `Authorization: Bearer KEY` or `x-api-key: KEY`; otherwise 401. Keys are never sent on to a model.",
        example: ["sk-local"],
      },
      start_port: {
        meaning:
          "First port handed out for `${PORT}`, in the order the models are written. Ports of the listeners and ports other programs hold are skipped.",
      },
      health_check_timeout_s: {
        meaning:
          "How long a starting model may take until its `check_endpoint` answers 200. Past it the model is stopped and the requests waiting for it get 504.",
      },
      max_body_mb: {
        meaning:
          "Largest request body, in MB (MiB; fractions allowed). A larger one gets 413 in the API's envelope.",
        example: 16,
      },
      shutdown_timeout_s: {
        meaning:
          "On SIGINT or SIGTERM, how long running requests may finish before they are cut (a stream gets an error event). Then every model stops and qm exits.",
      },
      log_level: {
        meaning:
          '`"debug"`, `"info"`, `"warn"` or `"error"`: the least severe line qm writes to stderr.',
      },
      allowed_hosts: {
        meaning:
          'Host names a request may carry (DNS rebinding; see docs/security.md): exact names, `*.suffix` wildcards, or `"*"` for any. `[]`: loopback names only on a loopback listener, any name elsewhere. Loopback names always pass on a loopback listener; any other Host gets 403.',
        example: ["gpu-box.lan", "*.tailnet.example"],
      },
      cors_origins: {
        meaning:
          'Browser origins allowed to call qm; they get CORS headers and their preflights answered. `["*"]` allows any. qm\'s own origin always passes; other origins get 403.',
        example: ["http://localhost:3000"],
      },
      state_dir: {
        meaning:
          'Where qm keeps its state: the record of the model processes it runs (so that the next `qm serve` can end what a crashed qm left behind), the models\' load times and the database `qm.db` (`[store]`). `""`: `$XDG_STATE_HOME/quartermaster`, else `~/.local/state/quartermaster`.',
      },
      responses_store: {
        meaning:
          "How many Responses API answers qm keeps in memory, most recently used first, for `previous_response_id` and `GET`/`DELETE /v1/responses/{id}` (answers sent with `store: false` are never kept). Each keeps its final Response object, the conversation it continued and the key that made it (only that key, or an admin, finds it). `0`: none kept. With `[store]` they are also kept in the database and outlast a restart; this bounds the memory only.",
        example: 1000,
      },
      responses_store_mb: {
        meaning:
          "The kept Responses' size bound, in MB (MiB; fractions allowed): past it the least recently used are dropped, whatever `responses_store` allows.",
      },
      preload: {
        meaning:
          "Models loaded at startup, in this order, then every model with `preload = true` in file order. They load one at a time once the listeners are up, within the budget: one that does not fit beside what is already resident (or could only by evicting something, another preload included) is skipped with a log line. Requests that arrive meanwhile are scheduled as usual. `GET /api/status` shows `preload` (pending, loading, done, skipped with the reason). Read at startup only.",
        example: ["qwen-7b", "embed"],
      },
      watch_config: {
        meaning:
          'Reload the config when its file changes on disk (debounced; a write that leaves the content as it was is ignored). `SIGHUP` and `POST /api/config/reload` reload regardless. A reload restarts no model whose process settings are unchanged; see README, "Changing the config while it runs".',
      },
    },
  },
  keys: {
    heading: "[keys.NAME]",
    about:
      "Named API keys, each with the models it may use, whether it is an admin, its priority and its limits (docs/security.md). The keys of `server.api_keys` are admin keys named `admin`.",
    keys: {
      key: {
        meaning:
          "The key itself, as clients send it (`Authorization: Bearer KEY` or `x-api-key: KEY`). Give this or `key_sha256`, not both.",
      },
      key_sha256: {
        meaning:
          "The key's SHA-256 in hex, so the file holds no secret: `qm keys hash` prints it for a key, `qm keys new NAME` makes a new key with its table.",
      },
      models: {
        meaning:
          'Model ids and aliases this key may use, `*` matching any run of characters (`"qwen-*"`, `"box2/*"`). Any other model does not exist for it: 404 `model_not_found`, and model lists leave it out.',
        example: ["qwen-7b", "embed-*"],
      },
      admin: {
        meaning:
          "`true`: it may load and unload models, reload the config, read logs and metrics, and see every key's requests, captures, stored responses and usage. `false`: those routes answer 403 `forbidden`, and it sees only its own.",
      },
      priority: {
        meaning:
          '`"interactive"`, `"normal"` or `"batch"`: how its waiting requests are weighed against other keys\' by the scheduler.',
      },
      max_concurrency: {
        meaning:
          "The most requests of this key in flight at once on the box; further ones wait (they are not refused). `0`: no cap of its own.",
      },
      max_queued: {
        meaning:
          "The most requests of this key waiting at once; further ones get 503 `queue_full` with `Retry-After`. `0`: only `scheduler.max_queue` applies.",
      },
      rpm: {
        meaning:
          "Requests for a model per minute (a sliding minute); past it 429 with `Retry-After`, in the API's envelope. `0`: no limit.",
      },
      tokens_per_min: {
        meaning:
          "Prompt plus completion tokens per minute, as the answers stated them; once the last minute's reach it, 429 with `Retry-After` until enough of them are a minute old. `0`: no limit.",
      },
    },
  },
  scheduler: {
    heading: "[scheduler]",
    about: "Agent-loop holds, patience and the bound on waiting requests.",
    keys: {
      hold_ms: {
        meaning:
          'After an answer that ended in tool calls (see `hold_on`), the model is held so the agent loop\'s next round finds it loaded. With `hold_policy = "fixed"`, nothing evicts it for this long. With `"cost"`, before any gap was measured the hold lasts at most 1.25 × it, and a waiting request takes the GPU once the gap so far, taken as half the whole, outweighs the swap. Per request: `X-QM-Hold-Ms`. `0`: no holds.',
      },
      patience_ms: {
        meaning:
          "How long a queued request honours other models' holds before it preempts them; past it, new work also stops reaching the models it needs evicted. Per request: `X-QM-Patience-Ms`.",
      },
      max_queue: {
        meaning:
          "Most requests waiting at once, for all models together (queued or waiting for a load). Past it, a request that cannot be served at once gets 503 with `Retry-After`.",
      },
      hold_on: {
        meaning:
          '`"tool_calls"`: hold a model after answers that end in tool calls; `"request"`: after every answer.',
      },
      hold_policy: {
        meaning:
          '`"cost"`: a hold lasts the tool gap its conversation is expected to take (learned from its earlier gaps), ends when the gap is spent or the loop answers without tool calls, and is dropped for a waiting request when the idle it would cost exceeds swapping the waiter\'s model in and the held one back (measured load or wake times); a request waits behind idle holds for at most three such round trips. With `hold_on = "tool_calls"`, a tool-call answer is held only with evidence that a tool result will follow: its conversation has sent one, or its model\'s recent tool-call answers were mostly followed by one (so clients that offer tools on every call but never run them stop holding the GPU). `"fixed"`: a hold lasts `hold_ms` and gives way only to a request past its `patience_ms`.',
      },
      fair_share: {
        meaning:
          "How keys (`[keys.NAME]`) share the GPU, by their `priority`. `enabled`: within one model's queue, keys take turns in proportion to their weights (`interactive`, `normal`, `batch`), first come first served within a key; when a swap is needed, a key that has had less than its share drains a busy model of keys of no higher priority; a waiter of a lower priority never breaks a higher one's hold, nor takes the model of a higher one's agent loop in a tool gap, but by its patience, counted since its key was last served on that model. Keys of equal weight share as peers. `false`: first come, first served (keys keep their `max_concurrency`). Requests without a key are the key `anonymous` at `normal`. See src/scheduler/design.md, \"Fair share\".",
        example: { enabled: true, interactive: 8, normal: 2, batch: 1 },
      },
    },
  },
  activity: {
    heading: "[activity]",
    about: "The activity log: the latest finished requests, for `GET /api/requests`.",
    keys: {
      enabled: {
        meaning:
          "`false`: no activity log and no `request` events on `/api/events`; with neither `server.metrics_listen` nor `server.metrics_on_api` set either, no request's record is built at all.",
      },
      size: {
        meaning:
          "How many finished requests are kept (time, model, API, status, wait, duration, time to first token, token counts, finish reason; prompt and answer text only with `capture`). The oldest is dropped first; `0` keeps none.",
      },
      capture: {
        meaning:
          "`true`: each kept record also keeps its request (method, path, headers and body) and the answer as the client got it, each cut at `capture_bytes`; served only by `GET /api/requests/{id}`, to the key that made the request and to admin keys. Redacted: every header whose name contains `key`, `token`, `secret`, `auth`, `cookie`, `session` or `password` (any case), and the values of such query parameters. Prompts and answers are then held in qm's memory: leave it off where that matters.",
      },
      capture_bytes: {
        meaning:
          "With `capture`: the most bytes kept of each request body and of each answer (the rest is counted, not kept; cut at a UTF-8 character boundary).",
        example: 65536,
      },
      capture_total_mb: {
        meaning:
          "With `capture`: the most all captures together may hold, in MB (MiB; fractions allowed); past it the oldest captures are dropped first, their records kept.",
      },
      capture_persist: {
        meaning:
          "With `capture` and `[store]`: each capture is also written to the database with its record, so `GET /api/requests/{id}` shows it after a restart (within `[store]` bounds). `false`: captures live in memory only; the records are kept regardless.",
      },
    },
  },
  store: {
    heading: "[store]",
    about:
      "What outlasts a restart: an SQLite database (`qm.db`) in `server.state_dir` with the stored Responses, the usage per key, model and hour, and the activity records.",
    keys: {
      enabled: {
        meaning:
          "`false`: nothing is written; everything lives in memory and is lost when qm stops. A database that cannot be opened (read-only disk, a corrupt file) is reported at start and by `qm doctor`, and qm runs on with memory only.",
      },
      max_age_days: {
        meaning: "Rows older than this many days are deleted (fractions allowed).",
        example: 7,
      },
      max_mb: {
        meaning:
          "The database's size bound, in MB (MiB): past it the oldest rows are deleted first.",
      },
    },
  },
  resources: {
    heading: "[resources]",
    about: "Memory budgets and the GPU probe.",
    keys: {
      vram_budget_gb: {
        meaning:
          "GPU memory qm may plan for, in GB (GiB). A model is admitted when its `est_vram_gb` fits beside the residents; otherwise the least-recently-used residents are evicted until it fits. `0`: no budget, the group rules alone decide. `\"auto\"`: on an Apple Silicon Mac, the share of its unified memory the GPU may use — `iogpu.wired_limit_mb` when set above 0, else Metal's default working-set limit, 2/3 of RAM up to 36 GiB and 3/4 above (read with `sysctl` when the config is loaded); on any other box, the GPUs' total memory as the GPU probe reads it, and no budget while there is no reading.",
        example: 24,
      },
      ram_budget_gb: {
        meaning:
          'Host memory qm may plan for, in GB: the `est_ram_gb` of CPU models (groups with `pool = "ram"`) and of GPU models\' offload. `0`: no RAM budget.',
        example: 64,
      },
      oom_guard_reserve_gb: {
        meaning:
          "GPU memory kept free at all times: taken off the live ceiling, and needed free beside a model's `est_vram_gb` before it may start.",
      },
      gpu_probe: {
        meaning:
          'How GPU memory is read, for the live ceiling and the spawn guard. `"auto"`: nvidia-smi if it finds a GPU (a GPU whose memory it reports `[N/A]` is unified memory: /proc/meminfo and the RSS of the models\' processes, the budget `MemTotal` when `vram_budget_gb` is 0), else AMD cards in /sys/class/drm (processes from `amd-smi` or `rocm-smi` when installed), else none. `"amd"` and `"unified"` pick one; any other value is an nvidia-smi command (a path, with arguments if needed). `"off"`: no probe; the static budget applies. Where the probe\'s process ids are not qm\'s (a container with its own PID namespace), qm attributes memory by change. docs/gpu.md has the details.',
      },
      gpu_probe_interval_ms: {
        meaning:
          "How often the probe samples GPU memory, in ms (at least 100): how quickly qm notices another program taking memory.",
      },
      gpus: {
        meaning:
          "Several GPUs: one budget per card, `{index = N, vram_budget_gb = GB}`. Each card is admitted against its own ceiling (its budget, tightened by the live reading of that card as `vram_budget_gb` is for the box); `vram_budget_gb` is then not used for admission. Without this list, a probe that lists two or more cards gives each card its memory as its budget (scaled down to `vram_budget_gb` when one is set). A model runs on the card(s) with room — least loaded first, then the least-recently-used models on that card only are evicted — and sees them as `CUDA_VISIBLE_DEVICES` and `${GPU_IDS}`. `[]`: one budget for the box.",
        example: [
          { index: 0, vram_budget_gb: 24 },
          { index: 1, vram_budget_gb: 24 },
        ],
      },
    },
  },
  router: {
    heading: "[router]",
    about: "Which eviction policy decides what may be resident together.",
    keys: {
      policy: {
        meaning:
          '`"group"`: the `[groups.*]` rules and the memory budgets; `"matrix"`: the sets of `[matrix]`.',
      },
    },
  },
  ollama: {
    heading: "[ollama]",
    about: "How qm presents itself on Ollama's API (`/api/…`).",
    keys: {
      version: {
        meaning:
          'What `GET /api/version` answers. Ollama clients check it before they use a server (Codex CLI\'s `--oss` refuses anything below `0.13.4`); the default is the Ollama release whose API qm implements. A version such as `"0.13.5"`.',
        example: "0.13.5",
      },
    },
  },
  groups: {
    heading: "[groups.NAME]",
    about:
      "Groups of models and how they share the machine. Models in no group form the implicit default group (`swap` and `exclusive`).",
    keys: {
      members: {
        meaning: "Model ids in the group; a model belongs to at most one group.",
        example: ["qwen-7b", "llama-8b"],
      },
      swap: { meaning: "Only one member resident at a time: loading one stops the others." },
      exclusive: {
        meaning: "Loading a member stops the models of every other group, except persistent ones.",
      },
      persistent: { meaning: "Loads in other groups never evict this group's models." },
      pool: {
        meaning:
          '`"vram"`: GPU models. `"ram"`: CPU models, charged to `ram_budget_gb`; they evict only other `"ram"` models.',
      },
    },
  },
  matrix: {
    heading: "[matrix]",
    about: 'The sets of models allowed to be resident together, for `router.policy = "matrix"`.',
    keys: {
      sets: {
        meaning:
          "Lists of model ids that may be resident together. To load a model, qm picks the set containing it whose evictions cost least (ties: the earlier set); a model in no set runs alone.",
        example: [["qwen-7b", "embed"], ["llama-70b"]],
      },
      evict_cost: {
        meaning:
          'Cost of evicting a model, by id (when not listed: 1, or 0.1 for an `evict = "sleep"` model — putting it to sleep is cheap).',
        example: { "llama-70b": 10 },
      },
    },
  },
  models: {
    heading: "[models.ID]",
    about:
      "The model servers qm runs, by the id clients send as `model` (`?ctx=N` after it asks for another context size). qm sends the id back in the `X-QM-Model` header, so it must be Latin-1 without control characters (a name such as `模型` goes in `aliases`).",
    keys: {
      cmd: {
        meaning:
          'The command that starts the model server. It is split like a shell would split it (quotes, backslashes, `"""` strings, `#` comments), but no shell runs. Macros: `${PORT}`, `${MODEL_ID}`, `${GPU_IDS}`, `${QM_BIN}`, `${env.NAME}` and your own.',
        example: "llama-server --port ${PORT} -m /models/qwen-7b.gguf --ctx-size 16384",
      },
      proxy: { meaning: "Base URL (`http` or `https`) the model answers on; requests go there." },
      check_endpoint: {
        meaning:
          'Path polled after a start until it answers 200; then the model is ready. Every 10 ms, closer early in a load (a fiftieth of its time so far, 2 ms at least) and every 2 ms near its expected end (its last loads), so a model is found ready within milliseconds. `"none"`: ready as soon as it is started.',
      },
      cmd_stop: {
        meaning:
          'Command that stops the model instead of SIGTERM (`${PID}` is its pid); SIGTERM follows if it fails. A stop ends when the model and this command have both exited; both are SIGKILLed at `stop_timeout_s`. `""`: SIGTERM.',
        example: "docker stop qm-${MODEL_ID}",
      },
      aliases: {
        meaning:
          "Other names clients may send as `model`; each names one model only. A `*` makes an alias a pattern (any run of characters): a name that is no model id or exact alias goes to the first pattern it matches, in file order — e.g. `claude-*` for Claude Code's built-in model names.",
        example: ["gpt-4o-mini", "claude-*"],
      },
      env: {
        meaning: "Extra environment variables for the model's process; values may use macros.",
        example: { CUDA_VISIBLE_DEVICES: "0" },
      },
      ttl_s: {
        meaning:
          "Stop the model after this many seconds without a request; `0`: never. A request's Ollama `keep_alive` replaces it until another sets one or the model stops.",
        example: 900,
      },
      concurrency_limit: {
        meaning: "Most requests served at once; more wait in line (never 429). `0`: no limit.",
        example: 4,
      },
      est_vram_gb: {
        meaning:
          "GPU memory the model needs, in GB (`qm scan` estimates it from GGUF headers); used by `vram_budget_gb` and the spawn guard. `0`: unknown (the group rules decide; with a budget such a resident is evicted first).",
        example: 6.5,
      },
      est_ram_gb: {
        meaning: "Host memory the model needs, in GB, charged to `ram_budget_gb`. `0`: none.",
      },
      send_loading_state: {
        meaning:
          "Streaming requests for a model that is not ready get `200 text/event-stream` at once and SSE comments (`: qm-status: …`) while they wait. `false`: the answer starts when the model's does.",
      },
      unlisted: { meaning: "Hidden from `GET /v1/models`; still served by name." },
      use_model_name: {
        meaning:
          'The `model` sent upstream when the server expects another name (vLLM serves the repository name). `""`: the request\'s own.',
        example: "meta-llama/Llama-3.1-8B-Instruct",
      },
      strip_params: {
        meaning:
          "Top-level fields removed from every request body sent to this model, whichever API it came in on (OpenAI, Anthropic, Responses, Ollama). `model` and `stream` cannot be stripped.",
        example: ["top_k", "repeat_penalty"],
      },
      set_params: {
        meaning:
          "Top-level fields set in every request body sent to this model (after `strip_params`), replacing what the client sent; any TOML value. `model` and `stream` cannot be set.",
        example: { temperature: 0.6, chat_template_kwargs: { enable_thinking: false } },
      },
      anthropic_native: {
        meaning:
          "The server speaks the Anthropic Messages API itself: `/v1/messages` is passed through instead of translated.",
      },
      evict: {
        meaning:
          '`"stop"`: evicting the model (a swap, `ttl_s`, `keep_alive`, GPU memory pressure) ends its process. `"sleep"`: it is put to sleep over the server\'s sleep API instead (vLLM with `--enable-sleep-mode` and `VLLM_SERVER_DEV_MODE=1`: `POST /sleep?level=N`, `POST /wake_up`, `GET /is_sleeping`); the process stays, its state is `sleeping`, it counts as stopped for the VRAM budget, and the next request wakes it (seconds, not a cold start). A model that fails to sleep is stopped; one that fails to wake is restarted cold. An explicit unload, a reload that removes it, and shutdown still stop the process.',
        example: "sleep",
      },
      sleep_level: {
        meaning:
          'vLLM sleep level for `evict = "sleep"`: `1` moves the weights to host RAM (the model\'s `est_ram_gb` stays charged to the RAM budget while it sleeps), `2` discards them (nothing is charged; waking reloads the weights from disk).',
        example: 2,
      },
      responses_api: {
        meaning:
          '`"translate"`: `/v1/responses` is translated to the server\'s `/v1/chat/completions` (streaming, `store` and `previous_response_id` kept by qm). `"native"`: the server speaks the Responses API itself and requests are passed through unchanged (only `model` is rewritten when `use_model_name` is set).',
        example: "native",
      },
      stop_timeout_s: { meaning: "Grace between SIGTERM (or `cmd_stop`) and SIGKILL." },
      first_byte_timeout_s: {
        meaning:
          "Longest wait for the upstream's response headers, prompt prefill included (a slow CPU prefill of a long prompt needs minutes). `0`: no limit.",
      },
      stall_timeout_s: {
        meaning:
          "Longest silence between two chunks of an answer once it has started. `0`: no limit. A GET through `/upstream/{model}/…` (a model's web UI, its event streams) has none.",
      },
      scrape_upstream_metrics: {
        meaning:
          'Merge the server\'s own Prometheus metrics (`GET {proxy}/metrics`) into qm\'s `/metrics` while the model is ready, each series labelled `model="ID"` (a `model` label of its own becomes `upstream_model`). `"auto"`: on for `llama-server` started with `--metrics` and for vLLM, off otherwise; `true` or `false` decides.',
        example: true,
      },
      ctx_step: {
        meaning:
          "A request for the model at a context size (`ID?ctx=N`, or Ollama's `options.num_ctx`, which clients such as aider set from the prompt's size) is rounded up to a multiple of this, and served by the base model or a `?ctx=` variant already running whose context is at least that large; only when none runs is a variant started, and the model's other live variants are then unloaded (unless a swapping group or a VRAM budget decides who stays). `1`: sizes kept exact.",
        example: 8192,
      },
      keep_kv: {
        meaning:
          "llama-server only: keep the model's KV cache across a stop. qm adds `--slot-save-path <state_dir>/kv/<model>/`; before any stop of a ready model but a crash or shutdown (a swap, the TTL, an unload, a restart) it saves each slot with a cached prompt (`POST /slots/{id}?action=save`), and after the next start, before the first request is let in, restores them (`action=restore`), so an agent's long prompt is not processed again. Failures are logged and the model carries on cold. The files go when the model's command, env or context size changes (a new `${PORT}` is no change), or its model file does (path, size, mtime); the folder goes when a reload removes the model or turns its `keep_kv` off, once its process has stopped. Refused for a command that does not run `llama-server`.",
        example: true,
      },
      keep_kv_max_mb: {
        meaning:
          "Most the model's `keep_kv` folder may hold, in MiB; past it the oldest saved slots are removed.",
        example: 8192,
      },
      keep_kv_timeout_s: {
        meaning:
          "One deadline for all of a stop's slot saves (and for a start's restores); a save still running past it is abandoned and the stop goes on.",
        example: 30,
      },
      preload: {
        meaning:
          "Load this model at startup (after `server.preload`, in file order), if it fits; see `server.preload`.",
      },
      capabilities: {
        meaning:
          'What the model can do, as Ollama\'s `POST /api/show` reports it (clients such as Open WebUI and llm-ollama decide from it whether to chat, embed or think with a model): any of `completion`, `tools`, `embedding`, `thinking`, `vision`, `insert`; an embedding model cannot also claim `completion`. `[]`: read from the running server (llama-server `GET /props`; for vLLM, its command\'s flags), else from the model\'s GGUF file named in `cmd`, else from the command (`["completion", "tools"]`, less `tools` for llama-server `--no-jinja`; docs/api.md, "Capabilities").',
        example: ["completion", "tools", "thinking"],
      },
      prefetch: {
        meaning:
          "While the model waits to load (its request queued behind a busy or held model, its swap stopping others, the next preload), read its GGUF files into the OS page cache, so that the load reads from memory rather than disk. The files are the one after `-m`/`--model` in `cmd` (every part of a split model); a `cmd` without a `.gguf` file prefetches nothing. Bounded by the memory the system has available (`MemAvailable` less a reserve, Linux only); stopped when the model starts loading or is no longer next. `GET /api/status` shows `prefetched` (0 to 1). See docs/prefetch.md.",
        example: false,
      },
      gpus: {
        meaning:
          'Several GPUs: how many cards the model needs (its `est_vram_gb` is split evenly over them), or the fixed list of cards it runs on. Default: one card. The chosen cards are its `CUDA_VISIBLE_DEVICES`, and `${GPU_IDS}` in its `cmd` or `env` (e.g. `--tensor-parallel-size`, `--tensor-split`) reads them as a comma list (`"0"` without cards). Chosen when it starts, kept while it runs. Ignored on a box with one budget.',
        example: 2,
      },
    },
  },
  peers: {
    heading: "[peers.NAME]",
    about:
      'Other boxes that serve models. A request for a model this box does not have is sent to a peer that offers it (`PEER/MODEL` picks one); translation happens here, so a peer is always sent OpenAI requests. A peer that refuses, times out or fails before answering is marked down and retried later (1 s … 60 s). A `kind = "mistralrs"` peer is a managed node: its models are scheduled here as `NODE/MODEL`, loaded and unloaded over its HTTP API within its `vram_budget_gb` or `max_loaded`.',
    keys: {
      url: {
        meaning:
          "Base URL of the node. Credentials in it (`http://user:PASS@host`) are sent as Basic auth (unless `api_key` is set) and shown as `user:***@host` in status, events and the log. A redirect from the node is never followed.",
        example: "http://gpu-box.lan:8080",
      },
      kind: {
        meaning:
          '`"openai"`: any OpenAI-compatible endpoint, serving the `models` listed; `"qm"`: another qm, whose models and their state are read from its `/api/events` (or `/api/status`, polled; a llama-swap\'s `/running`); `"mistralrs"`: a mistral.rs server (v0.8+, multi-model) that qm manages — it decides which of the node\'s models are loaded (`POST /v1/models/reload` / `unload`), least recently used first, never a busy or pinned one.',
      },
      api_key: {
        meaning:
          'Key for the node, sent as both `Authorization: Bearer` and `x-api-key`; `""`: none. The client\'s own key is never forwarded.',
      },
      models: {
        meaning:
          'Ids of the models it serves, as the node names them (Latin-1 without control characters, as model ids). Required for `kind = "openai"`; for `"qm"` and `"mistralrs"`, empty means discover them (a node\'s `GET /v1/models`, every `poll_s`; a qm peer\'s first 1 000 valid models).',
        example: ["llama-70b"],
      },
      timeout_s: {
        meaning:
          "Seconds to wait for the connection and the first byte of the answer; past it the peer is marked down and the request tried elsewhere.",
      },
      weight: {
        meaning:
          "Tie-break between peers that serve a model equally well (same state, same requests in flight): higher wins.",
      },
      poll_s: {
        meaning:
          'Seconds between `GET /api/status` polls of a `"qm"` peer whose `/api/events` is not available (and of a llama-swap); for `"mistralrs"`, between reads of the node\'s `GET /v1/models` (its health, models found, models loaded or unloaded outside qm).',
      },
      vram_budget_gb: {
        meaning:
          '`"mistralrs"` only. GB of the node\'s GPU memory its models may use, by their `est_vram_gb`; a load that does not fit unloads the least recently used idle models first. 0: not limited by memory.',
        example: 48,
      },
      est_vram_gb: {
        meaning:
          "`\"mistralrs\"` only. Each model's footprint on the node in GB, by the node's id for it. Under a budget, a model with no estimate loads with no other unpinned model beside it.",
        example: { "llama-8b": 10, "qwen-14b": 18 },
      },
      max_loaded: {
        meaning:
          '`"mistralrs"` only. At most this many of the node\'s models loaded at once (with `vram_budget_gb`, both apply); 0: no count limit.',
        example: 2,
      },
      pinned: {
        meaning:
          '`"mistralrs"` only. Models qm never unloads from the node; they count against its budget.',
        example: ["llama-8b"],
      },
      defrag_after_cycles: {
        meaning:
          '`"mistralrs"` only. After this many unload/reload cycles, once nothing on the node is in flight or loading, qm restarts it with `restart_cmd` (requests for its models wait meanwhile) to give back fragmented GPU memory. 0: never.',
        example: 20,
      },
      restart_cmd: {
        meaning:
          '`"mistralrs"` only. The command that restarts the node (argv, no shell), run on this box; qm then waits for the node to answer `GET /v1/models` (within `server.health_check_timeout_s`). Required with `defrag_after_cycles`.',
        example: "systemctl restart mistralrs",
      },
    },
  },
};
