/**
 * What the HTTP layer needs from the runtime, split by who uses it: the routes that serve a
 * model (`InferenceGateway`), the control routes (`ControlGateway`) and the activity and
 * metrics routes (`ObserveGateway`). The runtime implements all three (`Gateway`); api never
 * imports it, and a test fakes only the part its routes use.
 */
import type { Config, KeyPriority, ModelConfig } from "../config/types.ts";
import type { HistoryJson } from "../gpu/history.ts";
import type { ActivityLog } from "../observe/activity.ts";
import type { Capture, CaptureStore } from "../observe/capture.ts";
import type { Metrics } from "../observe/lazy-metrics.ts";
import type { RequestRecord } from "../observe/record.ts";
import type { UsageBook } from "../observe/usage.ts";
import type { PeerTable } from "../peers/table.ts";
import type { AnswerNames } from "../proxy/answer-names.ts";
import type { Deadline } from "../proxy/deadline.ts";
import type { LoadProgress } from "../proxy/wait-status.ts";
import type { ModelState, ServeOutcome } from "../scheduler/types.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Sweep } from "../shared/sweep.ts";
import type { StateDb } from "../store/database.ts";
import type { StatusJson } from "./status-json.ts";

export interface Lease {
  readonly model: ModelConfig;
  readonly waitedMs: number;
  release(outcome?: ServeOutcome): void;
}

/**
 * The key a request came with, as the waiters and the scheduler weigh it (`[keys.NAME]`): its
 * name (never the secret), its priority, and the most of its requests in flight at once on
 * the box (0: no cap of its own; over it, requests wait). The waiters also read the most of its
 * requests that may wait (`maxQueued`, 0: no cap of its own; over it, 503 `queue_full`) and
 * whether a reload revoked it (its waiting requests then get 401).
 */
export interface RequestKey {
  readonly name: string;
  readonly priority: KeyPriority;
  readonly maxConcurrency: number;
  readonly maxQueued?: number;
  readonly revoked?: boolean;
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
  /** The request carries a tool result (`exchange/tool-result.ts`): its conversation loops. */
  toolResult?: boolean | undefined;
  /** The key the request came with; absent: `anonymous`, with no cap of its own. */
  key?: RequestKey | undefined;
}

/** Who takes, renews or releases a lease: a request's key. */
export interface LeaseKey extends RequestKey {
  readonly admin: boolean;
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

/** The models by name: every part of the gateway starts here. */
export interface ModelLookup {
  readonly config: Config;
  /** The model a name a client sent (id, alias, or a name an alias pattern matches) names. */
  resolve(name: string): ModelConfig | undefined;
}

/** What the routes that serve a model need: the exchange, the APIs' own routes. */
export interface InferenceGateway extends ModelLookup {
  readonly shuttingDown: boolean;
  /**
   * Where the deadlines of live upstream calls are swept; shutdown cuts them all when its grace
   * is over (clients get an error). The process's real-time sweep when absent.
   */
  readonly calls?: Sweep<Deadline>;
  /** How upstream calls (models, peers) are made; the global `fetch` when absent. */
  readonly fetch?: Fetch | undefined;
  /** The name each model's server answers with, learnt (the model-name rewrite skips those that match). */
  readonly answerNames?: AnswerNames | undefined;
  /** `resolve`, plus `model?ctx=N` variants minted on first use (throws QmError if malformed). */
  resolveModel(name: string): Promise<ModelConfig | undefined>;
  acquire(model: ModelConfig, signal: AbortSignal, hooks?: AcquireHooks): Promise<Lease>;
  modelState(id: string): ModelState;
  stderrTail(id: string, lines?: number): string[];
  /** The model's load in progress (time so far, time expected), or null when not loading. */
  loadProgress(id: string): LoadProgress | null;
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
   * none is built and no answer's usage is read.
   */
  readonly recording: boolean;
  /** Where requests and answers are captured (`[activity] capture`), or null when off. */
  readonly captures: CaptureStore | null;
  /** Other boxes' models (`[peers.NAME]`); absent or null when there are none. */
  readonly peers?: PeerTable | null | undefined;
  /** The database (`[store]`), where stored Responses outlast a restart; absent or null: none. */
  readonly db?: StateDb | null | undefined;
}

/** What the control routes (`/api/…`: status, load, unload, leases, events, logs) need. */
export interface ControlGateway extends ModelLookup {
  readonly shuttingDown: boolean;
  /**
   * Reloads the config and applies what changed (`POST /api/config/reload`): the change
   * summary, or the loader's error (FILE:LINE:COL: …) with nothing changed. Absent: no reload.
   */
  reloadConfig?(): { ok: true; changes: unknown; message: string } | { ok: false; error: string };
  resolveModel(name: string): Promise<ModelConfig | undefined>;
  modelState(id: string): ModelState;
  /** Recent stdout and stderr lines of a model's process (bounded ring buffer). */
  logs(id: string): string[];
  /** Each new output line of model `id`, as it comes, until the returned function is called. */
  followLogs(id: string, fn: (line: string) => void): () => void;
  status(): StatusJson;
  /** Unloads one model (or all); throws QmError `conflict` for leased ones unless forced. */
  unload(id: string | null, opts?: { force?: boolean }): void;
  /**
   * Holds `model` busy until released or `ttlMs` passes without a renewal; the lease is `key`'s
   * (absent: `anonymous`).
   */
  lease(model: ModelConfig, signal: AbortSignal, ttlMs: number, key?: LeaseKey): Promise<LeaseInfo>;
  /** Renews a lease; throws QmError `forbidden` when `by` is no admin and the lease not its own. */
  renewLease(model: string, lease: string, ttlMs?: number, by?: LeaseKey): LeaseInfo;
  releaseLease(model: string, lease: string, by?: LeaseKey): void;
  /** Each event as it is published, with its id (1, 2, …), until the returned function runs. */
  subscribe(fn: (e: QmEvent, id: number) => void): () => void;
  /** The kept events after `id` (a `Last-Event-ID`), or null when some are no longer kept. */
  eventsSince(id: number): { id: number; event: QmEvent }[] | null;
  /** The id of the last event published (0: none yet). */
  readonly lastEventId: number;
  /**
   * `GET /api/history`: the last `minutes` (at most 30) of GPU memory, residency and swaps.
   * Absent: no history kept (the route answers empty lists).
   */
  history?(minutes: number): HistoryJson;
}

/** What the activity and metrics routes need (`/api/requests`, `/metrics`). */
export interface ObserveGateway extends ModelLookup {
  /** The latest finished requests (`GET /api/requests`). */
  readonly activity: ActivityLog;
  /** qm's Prometheus metrics (`GET /metrics`). */
  readonly metrics: Metrics;
  /** Usage per key × model × hour (`GET /api/usage`); absent: not kept. */
  readonly usage?: UsageBook | undefined;
}

/** All of it: what the runtime implements and a listener's routes are built on. */
export type Gateway = InferenceGateway & ControlGateway & ObserveGateway;
