import { type Capture, CaptureStore } from "../api/exchange/capture.ts";
import type { RequestRecord } from "../api/exchange/record.ts";
import type {
  AcquireHooks,
  Gateway,
  Lease,
  LeaseInfo,
  QmEvent,
  StatusJson,
} from "../api/gateway.ts";
import { ActivityLog } from "../api/metrics/activity.ts";
import { QmMetrics } from "../api/metrics/prometheus.ts";
import { modelIdFor } from "../config/aliases.ts";
import { isPortFreeOnLoopback, loadConfigFile, parseVariantName } from "../config/index.ts";
import { nodeModelId } from "../config/node-models.ts";
import type { Config, ModelConfig } from "../config/types.ts";
import { GpuHistory, type HistoryJson, stopCause, swapCause } from "../gpu/history.ts";
import { probeGpu } from "../gpu/index.ts";
import { PeerTable } from "../peers/table.ts";
import { PeerWatch } from "../peers/watch.ts";
import { GroupPolicy } from "../policy/group.ts";
import { MatrixPolicy } from "../policy/matrix.ts";
import { NodeAwarePolicy } from "../policy/node.ts";
import type { BudgetView, EvictionPolicy } from "../policy/types.ts";
import type { Deadline } from "../proxy/deadline.ts";
import { Scheduler } from "../scheduler/scheduler.ts";
import type { Effects, HoldChange, HoldWhy, ModelState, Swap } from "../scheduler/types.ts";
import type { Clock } from "../shared/clock.ts";
import { QmError } from "../shared/errors.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import { Sweep } from "../shared/sweep.ts";
import { realTimers, type Timers } from "../shared/timer.ts";
import { EventHub } from "./event-hub.ts";
import { GpuWatch } from "./gpu-watch.ts";
import { LeaseBook } from "./leases.ts";
import { LiveBudget } from "./live-budget.ts";
import { LoadEvents } from "./load-events.ts";
import { type LoadProgress, LoadTimes } from "./load-times.ts";
import { LogHub } from "./log-hub.ts";
import { ManagedNodes } from "./nodes.ts";
import { Preload } from "./preload.ts";
import { type ConfigLoader, ConfigReloads, type ReloadOutcome } from "./reload.ts";
import { StallStreaks } from "./stalls.ts";
import { buildStatus } from "./status.ts";
import {
  type ModelServer,
  modelProcesses,
  type ProcessFactory,
  SwapRunner,
} from "./swap-runner.ts";
import { Variants } from "./variants.ts";
import { cancelled, Waiters } from "./waiters.ts";
import { WakeTimer } from "./wake-timer.ts";

export interface RuntimeOptions {
  clock: Clock;
  log: Logger;
  /** Timers on `clock`'s time, for the wake timer, lease TTLs and the GPU watch; default real ones. */
  timers?: Timers;
  /** Makes each model's supervisor; default a real `ModelProcess`. */
  makeProcess?: ProcessFactory;
  /** Where the models' load durations are kept across restarts; default memory only. */
  loadTimesFile?: string;
  /** How a reload reads the config; default the loader on `config.file`. */
  loadConfig?: ConfigLoader;
  /** How managed nodes are called; default `fetch`. */
  nodeFetch?: Fetch;
  /** How model upstreams and peers are called; default the global `fetch`. */
  fetch?: Fetch;
  /** Runs a node's `restart_cmd`; default spawned. */
  runRestart?: (argv: string[]) => Promise<number>;
}

/**
 * The composition root's heart: it owns the one scheduler and wires its effects to the waiters
 * (callers: waiters.ts) and the swap runner (processes: swap-runner.ts), and serves the HTTP
 * layer's `Gateway` by delegation. Invariants: ./design.md.
 */
export class Runtime implements Effects, Gateway {
  readonly scheduler: Scheduler;
  readonly events = new EventHub();
  private readonly logHub = new LogHub();
  /** How long loads take: progress and estimates while a model loads. */
  readonly loadTimes: LoadTimes;
  /** `event: load` while models load (stage changes, and every 2 s). */
  private readonly loadEvents: LoadEvents;
  /** Every upstream call still live: shutdown cuts them when its grace runs out. */
  readonly calls = new Sweep<Deadline>();
  /** How upstream calls are made (`RuntimeOptions.fetch`). */
  get fetch(): Fetch | undefined {
    return this.opts.fetch;
  }
  readonly activity: ActivityLog;
  readonly metrics: QmMetrics;
  readonly captures: CaptureStore | null;
  /** Something reads the records: the activity log, or metrics that a listener serves. */
  readonly recording: boolean;
  /** A listener serves `/metrics`: only then are requests counted. */
  private readonly metricsServed: boolean;
  private closing = false;
  /** Memory limits in force: the static budgets, tightened by the live GPU ceiling. */
  readonly budget: LiveBudget;
  readonly leases: LeaseBook;
  readonly gpu: GpuWatch;
  /** What the GPU held, which models were resident, and the swaps: the last 30 minutes. */
  private readonly gpuHistory = new GpuHistory();
  private readonly waiters: Waiters;
  private readonly runner: SwapRunner;
  private readonly wake: WakeTimer;
  private readonly variants: Variants;
  private readonly startedAt = Date.now();
  private readonly stalls = new StallStreaks();
  /** Live config reloads (./reload.md): pending restarts, removed models still running. */
  readonly reloads: ConfigReloads;
  /**
   * Other boxes' models and their health (`[peers.NAME]`, src/peers); null with none. A
   * reload that changes `[peers]` builds both afresh (`replacePeers`).
   */
  peers: PeerTable | null = null;
  private peerWatch: PeerWatch | null = null;
  /** Managed mistral.rs nodes (src/peers/mistralrs.md): their models' supervisors and polls. */
  readonly nodes: ManagedNodes;
  private readonly timers: Timers;
  /** Models loaded at startup (./preload.ts). */
  readonly preload: Preload;

  constructor(
    readonly config: Config,
    private readonly opts: RuntimeOptions,
  ) {
    const timers = opts.timers ?? { ...realTimers, now: () => opts.clock.now() };
    this.loadTimes = new LoadTimes(
      () => opts.clock.now(),
      opts.loadTimesFile ?? null,
      (err) => opts.log.warn(`cannot keep load times: ${err instanceof Error ? err.message : err}`),
    );
    this.loadEvents = new LoadEvents({
      timers,
      progress: (id) => this.loadTimes.progress(id),
      publish: (e) => this.events.publish(e),
      listening: () => this.events.listening,
    });
    this.budget = new LiveBudget(config.resources);
    const act = config.activity;
    this.captures =
      act.enabled && act.capture && act.size > 0
        ? new CaptureStore(act.captureBytes, act.captureTotalBytes)
        : null;
    this.activity = new ActivityLog(act.enabled ? act.size : 0, this.captures);
    this.metricsServed = config.server.metricsListen !== "" || config.server.metricsOnApi;
    this.recording = act.enabled || this.metricsServed;
    this.metrics = new QmMetrics({
      status: () => this.status(),
      gpuReadingAgeS: () => (this.gpu.last ? (timers.now() - this.gpu.lastAt) / 1000 : null),
      upstreams: () => this.metricsUpstreams(),
      upstream: { warn: (line) => opts.log.warn(line) },
    });
    this.leases = new LeaseBook(opts.log, timers);
    this.nodes = new ManagedNodes({
      config,
      timers,
      log: opts.log,
      loadTimeoutMs: config.server.healthCheckTimeoutS * 1000,
      state: (id) => this.modelState(id),
      inTransition: (id) => this.scheduler.inTransition(id),
      inflight: (id) => this.scheduler.inflightOf(id),
      adopt: (id) => this.scheduler.adopt(id),
      gone: (id, detail) => this.scheduler.gone(id, detail),
      unload: (id) => this.scheduler.unload(id),
      load: (id) => {
        const model = this.config.models[id];
        if (!model) return;
        this.acquire(model, new AbortController().signal, { holdMs: 0 }).then(
          (lease) => lease.release(),
          (err: unknown) =>
            opts.log.warn(`model ${id}: ${err instanceof Error ? err.message : String(err)}`),
        );
      },
      addModel: (model) => {
        this.config.models[model.id] = model;
        this.runner.add(model);
        this.scheduler.addModel(model);
        this.peers?.modelChanged(model.node!.node, model.node!.remote, "offered");
      },
      table: () => this.peers,
      onLine: (id, line) => this.modelLine(id, line),
      ...(opts.nodeFetch ? { fetch: opts.nodeFetch } : {}),
      ...(opts.runRestart ? { runRestart: opts.runRestart } : {}),
    });
    this.scheduler = new Scheduler(config, makePolicy(config, this.budget), this, opts.clock, {
      loadMs: (id) => this.loadTimes.expected(id),
      wakeMs: (id) => this.loadTimes.expectedWake(id),
    });
    this.gpu = new GpuWatch({
      resources: config.resources,
      budget: this.budget,
      log: opts.log,
      timers,
      probe: probeGpu,
      processes: () => this.runner.all().values(),
      inTransition: () => this.scheduler.snapshot().swaps.length > 0,
      shed: (gb, cards) => this.scheduler.shed(gb, cards),
      // The VRAM picture as status shows it (only when it changed: a status costs little then).
      vramChanged: () => this.events.publish({ type: "vram", ...this.status().resources }),
      onSample: (cards) => this.gpuHistory.memory(Date.now(), cards),
    });
    this.budget.refusalOf = (model) => this.gpu.refusal(model);
    this.budget.placementOf = (model) => this.scheduler.placementOf(model);
    const scheduler = this.scheduler;
    this.runner = new SwapRunner({
      log: opts.log,
      models: () => this.config.models,
      // The scheduler's, with each swap's end counted on the way.
      events: {
        swapDone: (id, result) => {
          const how = result.ok
            ? "ok"
            : result.error.code === "model_unloaded"
              ? "aborted"
              : "failed";
          this.metrics.swapEnded(id, how, opts.clock.now());
          scheduler.swapDone(id, result);
        },
        stopped: (model) => scheduler.stopped(model),
        slept: (model, asleep) => scheduler.slept(model, asleep),
        exited: (model, error) => scheduler.exited(model, error),
      },
      gpu: this.gpu,
      counts: this.metrics,
      makeProcess: withNodes(
        this.nodes,
        opts.makeProcess ??
          modelProcesses(config, opts.log, (id, line) => this.modelLine(id, line)),
      ),
    });
    for (const model of Object.values(config.models)) this.runner.add(model);
    this.waiters = new Waiters({
      events: this.scheduler,
      clock: opts.clock,
      current: (model) => this.config.models[model.id] ?? model,
    });
    this.wake = new WakeTimer(timers, () => this.scheduler.wake());
    this.timers = timers;
    this.replacePeers(config.peers);
    this.variants = new Variants(config, opts.log, (variant) => {
      this.config.models[variant.id] = variant;
      this.runner.add(variant);
      this.scheduler.addModel(variant);
    });
    this.reloads = new ConfigReloads({
      config,
      log: opts.log,
      load: opts.loadConfig ?? defaultLoader(config),
      state: (id) => this.modelState(id),
      addProcess: (model) => this.runner.add(model),
      removeProcess: (id) => this.runner.remove(id),
      reconfigure: (change) => this.scheduler.reconfigure(change),
      unload: (id) => this.scheduler.unload(id),
      makePolicy: (cfg) => makePolicy(cfg, this.budget),
      budget: this.budget,
      gpuReading: () => this.gpu.last !== null,
      publish: (event) => this.events.publish(event),
    });
    this.preload = new Preload(config.server.preload ?? [], {
      log: opts.log,
      evictionFor: (id) => this.scheduler.evictionFor(id),
      active: (id) => {
        const state = this.scheduler.state(id);
        return state === "ready" || state === "starting";
      },
      load: async (id) => {
        const model = this.config.models[id];
        if (!model) throw new Error("it is no longer configured");
        const lease = await this.acquire(model, new AbortController().signal, { holdMs: 0 });
        lease.release();
      },
      closing: () => this.closing,
    });
    this.reloads.subscribe((changes, cfg) => {
      if (!changes.peers || this.closing) return;
      this.nodes.replace(cfg.peers);
      this.replacePeers(cfg.peers, true);
      this.nodes.start();
    });
  }

  /**
   * Peers: the routing table (a change of a peer's health is an `event: peer`) and the
   * background watch that follows qm peers and probes the ones down. On a reload that changes
   * `[peers]`, the old watch stops and the new peers start afresh (their health unknown, as at
   * startup); calls already on their way finish on the peer they went to.
   */
  private replacePeers(peers: Config["peers"], running = false): void {
    this.peerWatch?.stop();
    const timers = this.timers;
    const table =
      Object.keys(peers).length === 0
        ? null
        : new PeerTable(
            peers,
            () => timers.now(),
            (s) => {
              this.events.publish({ type: "peer", ...s });
              if (this.peers === table) this.peerWatch?.changed(s);
            },
          );
    if (table) table.managed = this.managedLookup();
    this.peers = table;
    this.peerWatch = table
      ? new PeerWatch(table, { timers, log: this.opts.log, fetch: this.opts.fetch })
      : null;
    if (running) this.peerWatch?.start();
  }

  /** What the peer table routes to on a managed node: the scheduler's own models there. */
  private managedLookup() {
    const onNode = (node: string) =>
      Object.values(this.config.models).filter((m) => m.node?.node === node);
    return {
      model: (node: string, remote: string) => {
        const m = this.config.models[nodeModelId(node, remote)];
        return m?.node?.node === node ? m : undefined;
      },
      inflight: (node: string) =>
        onNode(node).reduce((n, m) => n + this.scheduler.inflightOf(m.id), 0),
      cost: (node: string, remote: string) => {
        const id = nodeModelId(node, remote);
        if (!this.config.models[id]) return Number.MAX_SAFE_INTEGER;
        const answer = this.scheduler.evictionFor(id);
        return answer.ok ? answer.evict.length : Number.MAX_SAFE_INTEGER;
      },
    };
  }

  /** Reloads the config file and applies what changed (./reload.md); a bad one changes nothing. */
  reloadConfig(): ReloadOutcome {
    if (this.closing)
      return { ok: false, error: "qm is shutting down: the config was not reloaded" };
    return this.reloads.reload();
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
    return base ? this.variants.get(base, v.ctx) : undefined;
  }

  /** The model a name a client sent (id, alias, or a name an alias pattern matches) names. */
  resolve(name: string): ModelConfig | undefined {
    const id = modelIdFor(this.config, name);
    return id === undefined ? undefined : this.config.models[id];
  }

  process(id: string): ModelServer | undefined {
    return this.runner.get(id);
  }

  get shuttingDown(): boolean {
    return this.closing;
  }

  /**
   * Waits until the scheduler grants `model` to this caller. Rejects with the request's fate
   * (start failure, shutdown, …) or `cancelled` when `signal` aborts first.
   */
  acquire(model: ModelConfig, signal: AbortSignal, hooks: AcquireHooks = {}): Promise<Lease> {
    return this.waiters.acquire(model, signal, hooks);
  }

  modelState(id: string): ModelState {
    return this.scheduler.state(id) ?? "stopped";
  }

  /** The scheduler's clock is monotonic; status and events show its times as wall-clock ones. */
  private toEpoch(t: number): number {
    return Math.round(Date.now() + (t - this.opts.clock.now()));
  }

  status(): StatusJson {
    const toEpoch = (t: number) => this.toEpoch(t);
    const status = buildStatus({
      config: this.config,
      snap: this.scheduler.snapshot(),
      processes: this.runner.all(),
      startedAt: this.startedAt,
      toEpoch,
      budget: this.budget,
      leasesOf: (id) => this.leases.count(id),
      positionsOf: (id) => this.waiters.positionsOf(id),
      gpu: this.gpu.last,
      gpuKind: this.gpu.kind,
      attribution: this.gpu.attribution,
      foreignBaselineGb: this.gpu.foreignBaselineGb,
      loadTimes: this.loadTimes,
      modelOf: (id) => this.reloads.model(id),
      restartPending: (id) => this.reloads.restartPending(id),
    });
    if (this.peers) status.peers = this.peers.status();
    if (this.preload.configured) status.preload = this.preload.status();
    return status;
  }

  /** `GET /api/history`: the last `minutes` (at most 30) of memory, residency and swaps. */
  history(minutes: number): HistoryJson {
    return this.gpuHistory.since(Date.now(), minutes);
  }

  /** Ready models whose server's own metrics are merged into qm's (`scrape_upstream_metrics`). */
  private metricsUpstreams(): { model: string; url: string }[] {
    return Object.values(this.config.models)
      .filter((m) => m.scrapeUpstreamMetrics && this.scheduler.state(m.id) === "ready")
      .map((m) => ({ model: m.id, url: `${m.proxy}/metrics` }));
  }

  /** Each output line of model `id`: to its live followers, and to its load's stages. */
  modelLine(id: string, line: string): void {
    this.logHub.publish(id, line);
    this.loadTimes.line(id, line);
    this.loadEvents.line(id);
  }

  loadProgress(id: string): LoadProgress | null {
    return this.loadTimes.progress(id);
  }

  /** Unloads one model (or all); a leased one only when forced (LeaseBook.clearForUnload). */
  unload(id: string | null, opts: { force?: boolean } = {}): void {
    this.leases.clearForUnload(id, opts.force ?? false);
    this.scheduler.unload(id);
  }

  async lease(model: ModelConfig, signal: AbortSignal, ttlMs: number): Promise<LeaseInfo> {
    const lease = await this.acquire(model, signal, { holdMs: 0 });
    if (signal.aborted) {
      lease.release();
      throw cancelled(model.id);
    }
    return this.leases.add(lease, ttlMs);
  }

  renewLease(model: string, lease: string, ttlMs?: number): LeaseInfo {
    return this.leases.renew(model, lease, ttlMs);
  }

  releaseLease(model: string, lease: string): void {
    this.leases.release(model, lease);
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
    return this.runner.get(id)?.logs() ?? [];
  }

  followLogs(id: string, fn: (line: string) => void): () => void {
    return this.logHub.follow(id, fn);
  }

  /** Last lines of a model's stderr, for error messages. */
  stderrTail(id: string, lines = 5): string[] {
    return this.runner.get(id)?.stderrTail(lines) ?? [];
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

  record(r: RequestRecord, capture: Capture | null = null): void {
    if (this.metricsServed) this.metrics.request(r);
    if (!this.config.activity.enabled) return;
    r.id = this.activity.push(r, capture);
    if (this.events.listening) this.events.publish({ type: "request", ...r });
  }

  // ── Effects ───────────────────────────────────────────────────────────────────────────────

  grant(requestId: number, _model: string): boolean {
    return this.waiters.grant(requestId);
  }

  fail(requestId: number, error: QmError): void {
    this.waiters.fail(requestId, error);
  }

  position(requestId: number, position: number): void {
    this.waiters.position(requestId, position);
  }

  loading(requestId: number, _model: string): void {
    this.waiters.loading(requestId);
  }

  startSwap(swap: Swap): void {
    const cause = swapCause(swap.evict, swap.budget ?? []);
    this.gpuHistory.swap(Date.now(), swap.target, swap.evict, cause);
    this.metrics.swapStarted(
      swap.id,
      swap.target,
      swap.evict,
      swap.budget ?? [],
      this.opts.clock.now(),
    );
    this.runner.startSwap(swap);
  }

  abortSwap(swapId: number, reason: string): void {
    this.runner.abortSwap(swapId, reason);
  }

  stopModels(models: string[], reason: string): void {
    this.gpuHistory.swap(Date.now(), null, models, stopCause(reason));
    this.metrics.stopped(models, reason);
    this.runner.stopModels(models, reason);
  }

  sleepModels(models: string[], reason: string): void {
    this.gpuHistory.swap(Date.now(), null, models, stopCause(reason));
    this.metrics.stopped(models, reason);
    this.runner.sleepModels(models, reason);
  }

  wakeAt(atMs: number | null): void {
    this.wake.at(atMs);
  }

  holdChanged(model: string, change: HoldChange, untilMs: number, why?: HoldWhy): void {
    this.metrics.hold(model, change, why?.reason);
    this.events.publish({
      type: "hold",
      model,
      hold: change,
      until_ms: this.toEpoch(untilMs),
      ...(why ? { gap_ms: Math.round(why.gapMs), swap_ms: Math.round(why.swapMs) } : {}),
      ...(why?.reason ? { reason: why.reason } : {}),
    });
  }

  stateChanged(model: string, state: ModelState, detail?: string): void {
    const line = `model ${model}: ${state}${detail ? ` — ${detail}` : ""}`;
    if (state === "failed") this.opts.log.warn(line);
    else this.opts.log.info(line);
    // A level-1 sleeper keeps its weights in host RAM: charged to the RAM budget while asleep.
    const m = this.config.models[model];
    this.budget.sleeping(
      model,
      state === "sleeping" && m && m.sleepLevel === 1 ? m.estRamGb : null,
    );
    // A wake is not a load: its seconds would skew the load-time estimates.
    const waking = state === "starting" && detail === "waking";
    if (!waking) this.loadTimes.state(model, state);
    this.loadTimes.wakeState(model, state, waking);
    this.loadEvents.state(model, state);
    this.gpuHistory.state(Date.now(), model, state);
    this.nodes.stateChanged(model, state);
    // A load's event says how long it is expected to take (null: never loaded before).
    const expected =
      state === "starting"
        ? { expected_load_ms: waking ? null : this.loadTimes.expected(model) }
        : {};
    this.events.publish({ type: "model", model, state, detail: detail ?? null, ...expected });
    this.reloads.settled(model, state);
  }

  // ── lifecycle ─────────────────────────────────────────────────────────────────────────────

  /** Starts background work (the GPU probe). */
  start(): void {
    this.gpu.start();
    this.peerWatch?.start();
    this.nodes.start();
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
    this.peerWatch?.stop();
    this.nodes.stop();
    this.scheduler.shutdown();
    this.wake.disarm();
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
    this.loadEvents.close();
    this.leases.releaseAll();
    await this.runner.stopAll();
  }
}

/** A reload reads the file the config came from, the ports qm's models hold counted as taken. */
function defaultLoader(config: Config): ConfigLoader {
  return (isPortFree) => {
    if (config.file === "")
      throw new Error("the config was not read from a file: nothing to reload");
    return loadConfigFile(config.file, {
      isPortFree: (port) => isPortFree(port) && isPortFreeOnLoopback(port),
    });
  };
}

function makePolicy(config: Config, budget: BudgetView): EvictionPolicy {
  const own =
    config.router.policy === "matrix" ? new MatrixPolicy(config) : new GroupPolicy(config, budget);
  // Managed nodes' models are admitted against their node (src/peers/mistralrs.md).
  const nodes = Object.values(config.peers).some((p) => p.node !== null);
  return nodes ? new NodeAwarePolicy(own, config) : own;
}

/** Node models are supervised over their node's API; every other model by `make`. */
function withNodes(nodes: ManagedNodes, make: ProcessFactory): ProcessFactory {
  return (model, onExit) => (model.node ? nodes.server(model) : make(model, onExit));
}
