import type { Config, ModelConfig } from "../config/types.ts";
import type { HistoryJson } from "../gpu/history.ts";
import type { PeerStatusJson, PeerTable } from "../peers/table.ts";
import type { Deadline } from "../proxy/deadline.ts";
import type { LoadProgress } from "../proxy/wait-status.ts";
import type { ModelState, ServeOutcome } from "../scheduler/types.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Sweep } from "../shared/sweep.ts";
import type { Capture, CaptureStore } from "./exchange/capture.ts";
import type { RequestRecord } from "./exchange/record.ts";
import type { ActivityLog } from "./metrics/activity.ts";
import type { QmMetrics } from "./metrics/prometheus.ts";

/** What the HTTP layer needs from the runtime (the runtime implements it; api never imports it). */
export interface Lease {
  readonly model: ModelConfig;
  readonly waitedMs: number;
  release(outcome?: ServeOutcome): void;
}

export interface AcquireHooks {
  onPosition?(position: number): void;
  onLoading?(): void;
  /** Idle-grace hold this request asks for (`X-QM-Hold-Ms`); default `scheduler.hold_ms`. */
  holdMs?: number | undefined;
  /** How long it honours other models' holds (`X-QM-Patience-Ms`); default `scheduler.patience_ms`. */
  patienceMs?: number | undefined;
  /**
   * How long the model stays loaded once idle after this request (Ollama's `keep_alive`), in
   * place of its `ttl_s` until another request asks otherwise: `0` unloads it once idle, `-1`
   * keeps it resident. Absent: no change.
   */
  keepAliveMs?: number | undefined;
  /**
   * The conversation the request belongs to (`exchange/conversation.ts`: a client's session
   * id, or its opening messages' hash), whose tool gaps the scheduler learns.
   */
  conversation?: string | undefined;
}

export interface LeaseInfo {
  lease: string;
  model: string;
  expires_in_s: number;
}

export interface QmEvent {
  type: string;
  [key: string]: unknown;
}

export interface Gateway {
  readonly config: Config;
  readonly shuttingDown: boolean;
  /**
   * Reloads the config and applies what changed (`POST /api/config/reload`): the change
   * summary, or the loader's error (FILE:LINE:COL: …) with nothing changed. Absent: no reload.
   */
  reloadConfig?(): { ok: true; changes: unknown; message: string } | { ok: false; error: string };
  /**
   * Where the deadlines of live upstream calls are swept; shutdown cuts them all when its grace
   * is over (clients get an error). The process's real-time sweep when absent.
   */
  readonly calls?: Sweep<Deadline>;
  /** How upstream calls (models, peers) are made; the global `fetch` when absent. */
  readonly fetch?: Fetch | undefined;
  resolve(name: string): ModelConfig | undefined;
  /** `resolve`, plus `model?ctx=N` variants minted on first use (throws QmError if malformed). */
  resolveModel(name: string): Promise<ModelConfig | undefined>;
  acquire(model: ModelConfig, signal: AbortSignal, hooks?: AcquireHooks): Promise<Lease>;
  modelState(id: string): ModelState;
  stderrTail(id: string, lines?: number): string[];
  /** The model's load in progress (time so far, time expected), or null when not loading. */
  loadProgress(id: string): LoadProgress | null;
  /** Recent stdout and stderr lines of a model's process (bounded ring buffer). */
  logs(id: string): string[];
  /** Each new output line of model `id`, as it comes, until the returned function is called. */
  followLogs(id: string, fn: (line: string) => void): () => void;
  status(): StatusJson;
  /** Unloads one model (or all); throws QmError `conflict` for leased ones unless forced. */
  unload(id: string | null, opts?: { force?: boolean }): void;
  /** Holds `model` busy until released or `ttlMs` passes without a renewal. */
  lease(model: ModelConfig, signal: AbortSignal, ttlMs: number): Promise<LeaseInfo>;
  renewLease(model: string, lease: string, ttlMs?: number): LeaseInfo;
  releaseLease(model: string, lease: string): void;
  /** Each event as it is published, with its id (1, 2, …), until the returned function runs. */
  subscribe(fn: (e: QmEvent, id: number) => void): () => void;
  /** The kept events after `id` (a `Last-Event-ID`), or null when some are no longer kept. */
  eventsSince(id: number): { id: number; event: QmEvent }[] | null;
  /** The id of the last event published (0: none yet). */
  readonly lastEventId: number;
  /**
   * A proxied call of `modelId` timed out (`first_byte_timeout_s` / `stall_timeout_s`); a
   * model that keeps timing out, with no answer in between, is restarted.
   */
  reportStall(modelId: string): void;
  /** A proxied call of `modelId` ended normally: whatever stall streak it had is over. */
  reportAnswered(modelId: string): void;
  /**
   * A request for a model is over (the exchange's one record of it): the activity log, the
   * metrics and `/api/events` all read it, and the log keeps its `capture`, if any. Must be
   * cheap and must not throw.
   */
  record(r: RequestRecord, capture?: Capture | null): void;
  /**
   * Something reads the records (the activity log, or the metrics on a listener): when false,
   * none is built and no answer's figures are read.
   */
  readonly recording: boolean;
  /** Where requests and answers are captured (`[activity] capture`), or null when off. */
  readonly captures: CaptureStore | null;
  /** The latest finished requests (`GET /api/requests`). */
  readonly activity: ActivityLog;
  /** qm's Prometheus metrics (`GET /metrics`). */
  readonly metrics: QmMetrics;
  /** Other boxes' models (`[peers.NAME]`); absent or null when there are none. */
  readonly peers?: PeerTable | null | undefined;
  /**
   * `GET /api/history`: the last `minutes` (at most 30) of GPU memory, residency and swaps.
   * Absent: no history kept (the route answers empty lists).
   */
  history?(minutes: number): HistoryJson;
}

export interface ModelStatusJson {
  id: string;
  state: ModelState;
  inflight: number;
  leases: number;
  queued: number;
  /**
   * The places in qm's waiting line (1 = next) of the model's queued requests, front first;
   * requests waiting for its load in progress are counted in `queued` but have no place.
   */
  queue_positions: number[];
  /** Wall-clock epoch ms until which the model is held, or null. */
  held_until_ms: number | null;
  /**
   * Why it is held (`hold_policy = "cost"`), e.g. `gap 2.1 s expected, swap 6.3 s`: the tool gap
   * its conversation is expected to take, and what swapping it back would cost. Null when it
   * is not held, or held for `hold_ms` (`"fixed"`).
   */
  held_reason?: string | null;
  /** The same figures, in ms: the typical gap, the hold's window, the swap back. */
  hold?: { gap_ms: number; window_ms: number; swap_ms: number } | null;
  /**
   * How its last hold ended, until its next one: `expired` (`gap spent`, `loop ended`),
   * `preempted` (`patience`) or `dropped` (`cost`, `fairness`); `at_ms` wall-clock epoch ms.
   */
  hold_ended?: { how: string; reason: string; at_ms: number } | null;
  est_vram_gb: number;
  est_ram_gb: number;
  pid: number | null;
  port: number | null;
  aliases: string[];
  group: string;
  ttl_s: number;
  /** The idle time-to-live a request set in place of `ttl_s` (`keep_alive`; -1 = for ever), or null. */
  keep_alive_ms: number | null;
  /** Wall-clock epoch ms at which the idle model will be stopped (its TTL), or null. */
  unload_at_ms: number | null;
  concurrency_limit: number;
  unlisted: boolean;
  last_error: string | null;
  /**
   * The load in progress (null when not loading): ms so far, ms it is expected to take (the
   * median of the model's last loads; null before its first), the fraction done (the larger of
   * the time's and the log stage's; null when neither is known) and the stage.
   */
  load: {
    elapsed_ms: number;
    expected_ms: number | null;
    progress: number | null;
    /** The stage the model's log shows (llama-server: `"loading tensors"`, …), or null. */
    stage: string | null;
  } | null;
  /** How long the model's last load took, in ms; null if it never loaded. */
  last_load_ms: number | null;
  /** A config reload changed its process settings: they apply on its next start. */
  restart_pending?: boolean;
  /** The cards it runs on (several GPUs), while it holds memory; absent otherwise. */
  gpus?: number[];
  /** A managed node's model (`kind = "mistralrs"`): the node it runs on; absent otherwise. */
  node?: string;
}

/** One card, with several GPUs (`resources.gpus` or detected). */
export interface CardStatusJson {
  index: number;
  /** Its budget: `resources.gpus`, or the card's memory as nvidia-smi reports it. */
  budget_gb: number;
  /** What admission uses on it now (the budget, tightened by the live reading). */
  ceiling_gb: number;
  /** Estimated use by the models placed on it (a model on n cards: est_vram_gb / n each). */
  used_gb: number;
  /** The models placed on it, holding memory now. */
  models: string[];
  /** The latest trusted nvidia-smi reading of this card, or null. */
  reading: GpuReadingJson | null;
}

/** An nvidia-smi reading, of the box or of one card. */
export interface GpuReadingJson {
  total_gb: number;
  used_gb: number;
  free_gb: number;
  ours_gb: number;
  foreign_gb: number;
}

export interface StatusJson {
  version: string;
  /** The other boxes (`[peers.NAME]`) and what this qm knows of them; absent with none. */
  peers?: PeerStatusJson[];
  uptime_s: number;
  models: ModelStatusJson[];
  queue: { depth: number };
  swaps: { target: string; evict: string[]; waiters: number }[];
  /** Models loaded at startup (`server.preload`, `preload = true`); absent with none. */
  preload?: {
    pending: string[];
    loading: string | null;
    done: string[];
    skipped: { model: string; reason: string }[];
  };
  resources: {
    vram_budget_gb: number;
    vram_ceiling_gb: number;
    vram_used_gb: number;
    ram_budget_gb: number;
    ram_used_gb: number;
    /** Why the ceiling is what it is, or why the static budget applies. */
    probe: string;
    /** The GPU the probe found: `nvidia`, `nvidia-unified`, `amd`, `apple` or `none` (always set by qm). */
    gpu_kind?: "nvidia" | "nvidia-unified" | "amd" | "apple" | "none";
    /** How qm's share is told: by process (`pids`), `by_change`, or null without a reading. */
    attribution?: "pids" | "by_change" | null;
    /** The latest trusted nvidia-smi reading, or null. */
    gpu: (GpuReadingJson & { foreign_baseline_gb: number | null }) | null;
    /** Each card, with several GPUs; absent on a box admitted against one budget. */
    gpus?: CardStatusJson[];
  };
}
