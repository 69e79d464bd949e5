import type { AcquireHooks, Gateway, Lease, LeaseInfo, LeaseKey, QmEvent } from "../api/gateway.ts";
import type { StatusJson } from "../api/status-json.ts";
import { modelIdFor } from "../config/aliases.ts";
import { parseVariantName } from "../config/index.ts";
import type { Config, ModelConfig } from "../config/types.ts";
import type { GpuWatch } from "../gpu/gpu-watch.ts";
import type { HistoryJson } from "../gpu/history.ts";
import { KeyTable } from "../keys/table.ts";
import type { ActivityLog } from "../observe/activity.ts";
import type { Capture, CaptureStore } from "../observe/capture.ts";
import type { Metrics } from "../observe/lazy-metrics.ts";
import type { RequestRecord } from "../observe/record.ts";
import type { UsageBook } from "../observe/usage.ts";
import type { PeerTable } from "../peers/table.ts";
import type { AnswerNames } from "../proxy/answer-names.ts";
import type { Deadline } from "../proxy/deadline.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";
import type { ModelState } from "../scheduler/types.ts";
import { QmError } from "../shared/errors.ts";
import type { Fetch } from "../shared/fetch.ts";
import { IdleMemory } from "../shared/idle-memory.ts";
import { Sweep } from "../shared/sweep.ts";
import type { StateDb } from "../store/database.ts";
import { assemble, type RuntimeOptions, type RuntimeParts } from "./assemble.ts";
import type { EventHub } from "./event-hub.ts";
import type { LeaseBook } from "./leases.ts";
import type { LiveBudget } from "./live-budget.ts";
import type { LoadProgress, LoadTimes } from "./load-times.ts";
import type { ManagedNodes } from "./nodes.ts";
import type { Preload } from "./preload.ts";
import type { ModelRegistry } from "./registry.ts";
import type { ConfigReloads, ReloadOutcome } from "./reload.ts";
import { StallStreaks } from "./stalls.ts";
import { buildStatus } from "./status.ts";
import type { ModelServer } from "./swap-runner.ts";
import { cancelled } from "./waiters.ts";

/**
 * The composition root: it builds the one scheduler, the effects that carry out its decisions
 * (effects.ts: callers through the waiters, processes through the swap runner), and what
 * watches it all (observing.ts), and serves the HTTP layer's `Gateway` by delegation. The
 * loaded config says what each model is; the registry (registry.ts) says where it runs now.
 * Invariants: ./design.md.
 */
export class Runtime implements Gateway {
  readonly scheduler: Scheduler;
  readonly events: EventHub;
  /** How long loads take: progress and estimates while a model loads. */
  readonly loadTimes: LoadTimes;
  /** Every upstream call still live: shutdown cuts them when its grace runs out. */
  readonly calls = new Sweep<Deadline>();
  /** Memory given back once the calls have gone quiet. */
  private readonly idleMemory = new IdleMemory(this.calls);
  /** The name each model's server answers with; forgotten at each start (assemble.ts). */
  get answerNames(): AnswerNames {
    return this.parts.answerNames;
  }
  /** How upstream calls are made (`RuntimeOptions.fetch`). */
  get fetch(): Fetch | undefined {
    return this.opts.fetch;
  }
  /** Where each model runs now (a start may move one to a free port). */
  readonly registry: ModelRegistry;
  /** Memory limits in force: the static budgets, tightened by the live GPU ceiling. */
  readonly budget: LiveBudget;
  readonly leases: LeaseBook;
  readonly gpu: GpuWatch;
  /** Live config reloads (./reload.md): pending restarts, removed models still running. */
  readonly reloads: ConfigReloads;
  /** Managed mistral.rs nodes (src/peers/mistralrs.md): their models' supervisors and polls. */
  readonly nodes: ManagedNodes;
  /** Models loaded at startup (./preload.ts). */
  readonly preload: Preload;
  /** The latest finished requests (`[activity]`). */
  readonly activity: ActivityLog;
  readonly metrics: Metrics;
  /** Where requests and answers are captured (`[activity] capture`), or null. */
  readonly captures: CaptureStore | null;
  /** Usage per key × model × hour (`GET /api/usage`), or undefined when no record is kept. */
  readonly usage: UsageBook | undefined;
  /** Something reads the records: the activity log, or metrics that a listener serves. */
  readonly recording: boolean;
  private readonly parts: RuntimeParts;
  private readonly startedAt = Date.now();
  private readonly stalls = new StallStreaks();
  private closing = false;

  constructor(
    readonly config: Config,
    private readonly opts: RuntimeOptions,
  ) {
    const p = assemble(config, opts, {
      status: () => this.status(),
      closing: () => this.closing,
      startedAt: this.startedAt,
    });
    this.parts = p;
    this.scheduler = p.scheduler;
    this.events = p.events;
    this.loadTimes = p.loadTimes;
    this.registry = p.registry;
    this.budget = p.budget;
    this.leases = p.leases;
    this.gpu = p.gpu;
    this.reloads = p.reloads;
    this.nodes = p.nodes;
    this.preload = p.preload;
    this.activity = p.observation.activity;
    this.metrics = p.observation.metrics;
    this.captures = p.observation.captures;
    this.usage = p.observation.usage ?? undefined;
    this.recording = p.observation.recording;
  }

  /** The database (`[store]`), or null: memory only. */
  get db(): StateDb | null {
    return this.opts.db ?? null;
  }

  /** Other boxes' models and their health (`[peers.NAME]`); null with none. */
  get peers(): PeerTable | null {
    return this.parts.peerLinks.table;
  }

  record(r: RequestRecord, capture: Capture | null = null): void {
    this.parts.observation.record(r, capture);
  }

  /** Reloads the config file and applies what changed (./reload.md); a bad one changes nothing. */
  reloadConfig(): ReloadOutcome {
    if (this.closing)
      return { ok: false, error: "qm is shutting down: the config was not reloaded" };
    const outcome = this.reloads.reload();
    if (outcome.ok && KeyTable.of(this.config).sync() > 0) {
      // A key removed (or given another secret): what it still waits for ends with 401; what
      // it is being answered finishes.
      const dropped = this.parts.waiters.dropRevoked();
      if (dropped > 0)
        this.opts.log.info(`config reload: ${dropped} waiting request(s) of revoked keys refused`);
    }
    return outcome;
  }

  /**
   * Like `resolve`, and also mints `model?ctx=N` variants on first use. Throws a QmError for
   * a malformed variant request.
   */
  async resolveModel(name: string): Promise<ModelConfig | undefined> {
    const direct = this.resolve(name);
    if (direct) return direct;
    const v = parseVariantName(name);
    if (!v) return undefined;
    const base = this.resolve(v.base);
    return base
      ? this.parts.variants.get(base, v.ctx).then((m) => this.registry.live(m))
      : undefined;
  }

  /** The model a name names (id, alias, or an alias pattern's match), where it runs now. */
  resolve(name: string): ModelConfig | undefined {
    const id = modelIdFor(this.config, name);
    const model = id === undefined ? undefined : this.config.models[id];
    return model && this.registry.live(model);
  }

  process(id: string): ModelServer | undefined {
    return this.parts.runner.get(id);
  }

  get shuttingDown(): boolean {
    return this.closing;
  }

  /**
   * Waits until the scheduler grants `model` to this caller. Rejects with the request's fate
   * (start failure, shutdown, …) or `cancelled` when `signal` aborts first.
   */
  acquire(model: ModelConfig, signal: AbortSignal, hooks: AcquireHooks = {}): Promise<Lease> {
    return this.parts.waiters.acquire(model, signal, hooks);
  }

  modelState(id: string): ModelState {
    return this.scheduler.state(id) ?? "stopped";
  }

  /** The scheduler's clock is monotonic; status shows its times as wall-clock ones. */
  private toEpoch(t: number): number {
    return Math.round(Date.now() + (t - this.opts.clock.now()));
  }

  /** A model's config (one a reload removed, still running, included) where it runs now. */
  private liveModel(id: string): ModelConfig | undefined {
    const m = this.reloads.model(id);
    return m && this.registry.live(m);
  }

  status(): StatusJson {
    const status = buildStatus({
      config: this.config,
      snap: this.scheduler.snapshot(),
      processes: this.parts.runner.all(),
      startedAt: this.startedAt,
      toEpoch: (t) => this.toEpoch(t),
      budget: this.budget,
      leasesOf: (id) => this.leases.count(id),
      positionsOf: (id) => this.parts.waiters.positionsOf(id),
      gpu: this.gpu.last,
      gpuKind: this.gpu.kind,
      attribution: this.gpu.attribution,
      foreignBaselineGb: this.gpu.foreignBaselineGb,
      loadTimes: this.loadTimes,
      prefetched: (id) => this.parts.prefetch.progress(id),
      modelOf: (id) => this.liveModel(id),
      restartPending: (id) => this.reloads.restartPending(id),
    });
    status.waiting = this.parts.waiters.waiting();
    if (this.peers) status.peers = this.nodes.annotate(this.peers.status());
    if (this.preload.configured) status.preload = this.preload.status();
    return status;
  }

  /** `GET /api/history`: the last `minutes` (at most 30) of memory, residency and swaps. */
  history(minutes: number): HistoryJson {
    return this.parts.gpuHistory.since(Date.now(), minutes);
  }

  /** Each output line of model `id`: to its live followers, and to its load's stages. */
  modelLine(id: string, line: string): void {
    this.parts.modelLine(id, line);
  }

  loadProgress(id: string): LoadProgress | null {
    return this.loadTimes.progress(id);
  }

  /** Unloads one model (or all); a leased one only when forced (LeaseBook.clearForUnload). */
  unload(id: string | null, opts: { force?: boolean } = {}): void {
    this.leases.clearForUnload(id, opts.force ?? false);
    this.scheduler.unload(id);
  }

  async lease(
    model: ModelConfig,
    signal: AbortSignal,
    ttlMs: number,
    key?: LeaseKey,
  ): Promise<LeaseInfo> {
    const lease = await this.acquire(model, signal, { holdMs: 0, key });
    if (signal.aborted) {
      lease.release();
      throw cancelled(model.id);
    }
    return this.leases.add(lease, ttlMs, key?.name);
  }

  renewLease(model: string, lease: string, ttlMs?: number, by?: LeaseKey): LeaseInfo {
    return this.leases.renew(model, lease, ttlMs, by);
  }

  releaseLease(model: string, lease: string, by?: LeaseKey): void {
    this.leases.release(model, lease, by);
  }

  subscribe(fn: (e: QmEvent, id: number) => void): () => void {
    return this.events.subscribe(fn);
  }

  eventsSince(id: number): { id: number; event: QmEvent }[] | null {
    return this.events.since(id);
  }

  get lastEventId(): number {
    return this.events.lastId;
  }

  logs(id: string): string[] {
    return this.parts.runner.get(id)?.logs() ?? [];
  }

  followLogs(id: string, fn: (line: string) => void): () => void {
    return this.parts.logHub.follow(id, fn);
  }

  /** Last lines of a model's stderr, for error messages. */
  stderrTail(id: string, lines = 5): string[] {
    return this.parts.runner.get(id)?.stderrTail(lines) ?? [];
  }

  /** An upstream call timed out. A model stuck that way is stopped; the next request starts it. */
  reportStall(id: string): void {
    const { count, restart } = this.stalls.stall(id, this.opts.clock.now());
    const limit = this.stalls.limit;
    if (!restart) {
      this.opts.log.warn(`model "${id}" timed out (${count} of ${limit} before a restart)`);
      return;
    }
    this.opts.log.warn(`model "${id}" timed out ${count} times without an answer: restarting it`);
    this.scheduler.unload(id);
  }

  reportAnswered(id: string): void {
    this.stalls.answered(id);
  }

  // ── lifecycle ─────────────────────────────────────────────────────────────────────────────

  /** Starts background work (the GPU probe, the peers' watch, the nodes' polls). */
  start(): void {
    this.gpu.start();
    this.parts.peerLinks.start();
    this.nodes.start();
    this.idleMemory.start();
  }

  /**
   * Loads `server.preload` (and `preload = true` models) in order; call once the listeners are
   * up. Resolves when every one was tried (none ever rejects).
   */
  startPreload(): Promise<void> {
    return this.preload.run();
  }

  /** Refuse new work; in-flight requests keep running until `stopAll`. */
  beginShutdown(): void {
    if (this.closing) return;
    this.closing = true;
    this.gpu.stop();
    this.parts.peerLinks.stop();
    this.nodes.stop();
    this.idleMemory.stop();
    this.scheduler.shutdown();
    this.parts.wake.disarm();
    this.parts.prefetch.stop();
  }

  /** Ends every request still running (shutdown past its deadline); clients get an error. */
  cutInflight(): void {
    const reason = new QmError(
      "shutting_down",
      `qm is shutting down: the request was cut after server.shutdown_timeout_s (${this.config.server.shutdownTimeoutS} s)`,
    );
    this.calls.forEach((call) => {
      call.interrupt(reason);
    });
  }

  inflight(): number {
    return this.scheduler.snapshot().inflight;
  }

  /** Stops every model process; resolves when all are gone. */
  async stopAll(): Promise<void> {
    this.parts.loadEvents.close();
    this.leases.releaseAll();
    await this.parts.runner.stopAll();
  }
}
