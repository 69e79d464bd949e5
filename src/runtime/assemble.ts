/**
 * The runtime's parts, built and wired together: the one scheduler and its effects (the
 * waiters, the swap runner, the wake timer), the GPU watch, the managed nodes, the peers, what
 * watches it all, and the config reloads. Each part gets only the few functions it calls;
 * the `Runtime` (runtime.ts) holds the result and serves the `Gateway` from it.
 */
import type { StatusJson } from "../api/status-json.ts";
import type { Config, ModelConfig } from "../config/types.ts";
import { GpuWatch } from "../gpu/gpu-watch.ts";
import { GpuHistory } from "../gpu/history.ts";
import { probeGpu } from "../gpu/index.ts";
import { KeyTable } from "../keys/table.ts";
import type { Metrics } from "../observe/lazy-metrics.ts";
import { type MemoryTotals, platform } from "../platform/index.ts";
import type { NodeView } from "../policy/node.ts";
import { AnswerNames } from "../proxy/answer-names.ts";
import { Scheduler } from "../scheduler/scheduler.ts";
import type { Clock } from "../shared/clock.ts";
import type { Fetch } from "../shared/fetch.ts";
import type { Logger } from "../shared/log.ts";
import { realTimers, type Timers } from "../shared/timer.ts";
import type { StateDb } from "../store/database.ts";
import { RuntimeEffects } from "./effects.ts";
import { EventHub } from "./event-hub.ts";
import { defaultLoader, makePolicy, modelProcesses, withNodes } from "./factories.ts";
import { LeaseBook } from "./leases.ts";
import { LiveBudget } from "./live-budget.ts";
import { LoadEvents } from "./load-events.ts";
import { LoadTimes } from "./load-times.ts";
import { LogHub } from "./log-hub.ts";
import { ManagedNodes } from "./nodes.ts";
import { type GaugeInputs, gaugeReading, Observation } from "./observing.ts";
import { managedLookup, PeerLinks } from "./peers.ts";
import { Prefetcher, type PrefetchSource } from "./prefetch.ts";
import { fileSource, weightFiles } from "./prefetch-files.ts";
import { prefetchPlan } from "./prefetch-plan.ts";
import { Preload } from "./preload.ts";
import { ModelRegistry } from "./registry.ts";
import { type ConfigLoader, ConfigReloads } from "./reload.ts";
import { wireStateListeners } from "./state-listeners.ts";
import { type ProcessFactory, SwapRunner } from "./swap-runner.ts";
import { Variants } from "./variants.ts";
import { Waiters } from "./waiters.ts";
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
  /** The database (`[store]`), already open; default none: memory only. */
  db?: StateDb | null;
  /** Prefetch's files and the box's memory; default the file system and the platform's figures. */
  prefetch?: { source?: PrefetchSource; memory?: () => MemoryTotals | null };
}

/** What the parts need of the runtime that holds them. */
export interface RuntimeFace {
  /** `/api/status` now (the `vram` event carries its resources). */
  status(): StatusJson;
  /** Shutdown has begun. */
  closing(): boolean;
  /** Wall-clock epoch ms qm started at. */
  readonly startedAt: number;
}

export type RuntimeParts = ReturnType<typeof assemble>;

export function assemble(config: Config, opts: RuntimeOptions, face: RuntimeFace) {
  const { clock, log } = opts;
  const timers: Timers = opts.timers ?? { ...realTimers, now: () => clock.now() };
  const registry = new ModelRegistry();
  const events = new EventHub();
  const logHub = new LogHub();
  const loadTimes = new LoadTimes(
    () => clock.now(),
    opts.loadTimesFile ?? null,
    (err) => log.warn(`cannot keep load times: ${err instanceof Error ? err.message : err}`),
  );
  const loadEvents = new LoadEvents({
    timers,
    progress: (id) => loadTimes.progress(id),
    publish: (e) => events.publish(e),
    listening: () => events.listening,
  });
  /** Each output line of model `id`: to its live followers, and to its load's stages. */
  const modelLine = (id: string, line: string): void => {
    logHub.publish(id, line);
    loadTimes.line(id, line);
    loadEvents.line(id);
  };
  const budget = new LiveBudget(config.resources);
  const leases = new LeaseBook(log, timers);
  const observation: Observation = new Observation(config, {
    events,
    db: opts.db ?? null,
    gauges: () => gaugeReading(gaugeInputs, config),
    // Ready models whose server's own metrics are merged into qm's (`scrape_upstream_metrics`).
    upstreams: () =>
      Object.values(config.models)
        .filter((m) => m.scrapeUpstreamMetrics && scheduler.state(m.id) === "ready")
        .map((m) => ({ model: m.id, url: `${registry.live(m).proxy}/metrics` })),
    warn: (line) => log.warn(line),
    keys: () => {
      const table = KeyTable.of(config);
      const names = table.required ? table.names() : [table.anonymous.name];
      return names.map((key) => ({
        key,
        waiting: waiters.waitingOf(key),
        inflight: waiters.inflightOf(key),
      }));
    },
  });
  const metrics: Metrics = observation.metrics;
  /** What the GPU held, which models were resident, and the swaps: the last 30 minutes. */
  const gpuHistory = new GpuHistory();
  const effects: RuntimeEffects = new RuntimeEffects({
    clock,
    metrics,
    events,
    history: gpuHistory,
    // The scheduler's clock is monotonic; events show its times as wall-clock ones.
    toEpoch: (t) => Math.round(Date.now() + (t - clock.now())),
  });
  // Admission reads the managed nodes as their keeper (made below) knows them.
  const nodeView: NodeView = {
    refusal: (model) => nodes.view.refusal(model),
    canUnload: (node) => nodes.view.canUnload(node),
  };
  const scheduler: Scheduler = new Scheduler(
    config,
    makePolicy(config, budget, nodeView),
    effects,
    clock,
    {
      loadMs: (id) => loadTimes.expected(id),
      wakeMs: (id) => loadTimes.expectedWake(id),
    },
  );
  const modelState = (id: string) => scheduler.state(id) ?? "stopped";
  /** Loads a model as `POST /api/models/{id}/load` does, with nobody waiting on it. */
  const loadInBackground = (id: string): void => {
    const model = config.models[id];
    if (!model) return;
    waiters.acquire(model, new AbortController().signal, { holdMs: 0 }).then(
      (lease) => lease.release(),
      (err: unknown) =>
        log.warn(`model ${id}: ${err instanceof Error ? err.message : String(err)}`),
    );
  };
  const nodes = new ManagedNodes({
    config,
    timers,
    log,
    loadTimeoutMs: config.server.healthCheckTimeoutS * 1000,
    state: modelState,
    inTransition: (id) => scheduler.inTransition(id),
    inflight: (id) => scheduler.inflightOf(id),
    runningLru: () => scheduler.runningLru(),
    adopt: (id) => scheduler.adopt(id),
    gone: (id, detail) => scheduler.gone(id, detail),
    unload: (id) => scheduler.unload(id),
    load: loadInBackground,
    addModel: (model) => {
      addModel(model);
      peerLinks.table?.modelChanged(model.node!.node, model.node!.remote, "offered");
    },
    table: () => peerLinks.table,
    onLine: modelLine,
    ...(opts.nodeFetch ? { fetch: opts.nodeFetch } : {}),
    ...(opts.runRestart ? { runRestart: opts.runRestart } : {}),
  });
  const gpu: GpuWatch = new GpuWatch({
    resources: config.resources,
    budget,
    log,
    timers,
    probe: probeGpu,
    processes: () => runner.all().values(),
    inTransition: () => scheduler.snapshot().swaps.length > 0,
    shed: (gb, cards) => scheduler.shed(gb, cards),
    // The VRAM picture as status shows it (only when it changed: a status costs little then).
    vramChanged: () => events.publish({ type: "vram", ...face.status().resources }),
    onSample: (cards) => gpuHistory.memory(Date.now(), cards),
  });
  budget.refusalOf = (model) => gpu.refusal(model);
  budget.placementOf = (model) => scheduler.placementOf(model);
  const runner: SwapRunner = new SwapRunner({
    log,
    models: () => config.models,
    // The scheduler's, with each swap's end counted on the way.
    events: {
      swapDone: (id, result) => {
        const aborted = !result.ok && result.error.code === "model_unloaded";
        metrics.swapEnded(id, result.ok ? "ok" : aborted ? "aborted" : "failed", clock.now());
        scheduler.swapDone(id, result);
      },
      stopped: (model) => scheduler.stopped(model),
      slept: (model, asleep) => scheduler.slept(model, asleep),
      exited: (model, error) => scheduler.exited(model, error),
    },
    gpu,
    counts: metrics,
    onSwap: () => replanPrefetch(),
    makeProcess: withNodes(
      nodes,
      opts.makeProcess ??
        modelProcesses(config, log, registry, modelLine, (id) => loadTimes.expected(id)),
    ),
  });
  // A model's supervisor, new or replaced: it runs where its config says from its next start.
  const addProcess = (model: ModelConfig): void => {
    registry.forget(model.id);
    runner.add(model);
  };
  // A model minted at run time (a `?ctx=` variant, a model found on a node) joins.
  const addModel = (model: ModelConfig): void => {
    config.models[model.id] = model;
    addProcess(model);
    scheduler.addModel(model);
  };
  const waiters = new Waiters({
    events: scheduler,
    clock,
    current: (model) => registry.live(config.models[model.id] ?? model),
    onQueue: () => replanPrefetch(),
  });
  const wake = new WakeTimer(timers, () => scheduler.wake());
  effects.drive({ waiters, runner, wake });
  for (const model of Object.values(config.models)) addProcess(model);
  const peerLinks = new PeerLinks(config.peers, {
    timers,
    log,
    publish: (e) => events.publish(e),
    managed: managedLookup(config, () => scheduler),
    fetch: opts.fetch,
  });
  const variants = new Variants(config, log, addModel, undefined, {
    state: modelState,
    // A leased variant was asked to stay: it is left to its holder.
    unload: (id) => {
      if (leases.count(id) === 0) scheduler.unload(id);
    },
  });
  const reloads = new ConfigReloads({
    config,
    log,
    load: opts.loadConfig ?? defaultLoader(config),
    state: modelState,
    addProcess,
    removeProcess: (id) => {
      registry.forget(id);
      runner.remove(id);
    },
    reconfigure: (change) => scheduler.reconfigure(change),
    unload: (id) => scheduler.unload(id),
    makePolicy: (cfg) => makePolicy(cfg, budget, nodeView),
    budget,
    gpuReading: () => gpu.last !== null,
    movedPorts: () => registry.ports(),
    publish: (event) => events.publish(event),
  });
  const preload = new Preload(config.server.preload ?? [], {
    log,
    evictionFor: (id) => scheduler.evictionFor(id),
    active: (id) => {
      const state = scheduler.state(id);
      return state === "ready" || state === "starting";
    },
    load: async (id) => {
      const model = config.models[id];
      if (!model) throw new Error("it is no longer configured");
      const lease = await waiters.acquire(model, new AbortController().signal, { holdMs: 0 });
      lease.release();
    },
    closing: face.closing,
  });
  reloads.subscribe((changes, cfg) => {
    if (!changes.peers || face.closing()) return;
    nodes.replace(cfg.peers);
    peerLinks.replace(cfg.peers, true);
    nodes.start();
  });
  const prefetch = new Prefetcher({
    source: opts.prefetch?.source ?? fileSource(),
    memory: opts.prefetch?.memory ?? (() => platform.memory()),
    clock,
    log,
  });
  // What comes next, read again at most once per microtask however many changes raise it.
  let planQueued = false;
  const replanPrefetch = (): void => {
    if (planQueued) return;
    planQueued = true;
    queueMicrotask(() => {
      planQueued = false;
      const p = preload.status();
      prefetch.plan(
        prefetchPlan({
          models: config.models,
          waitingTargets: runner.waitingTargets(),
          queued: waiters.queuedModels(),
          nextPreload: p.loading === null ? null : (p.pending[0] ?? null),
          state: (id) => scheduler.state(id),
          files: weightFiles,
        }),
      );
    });
  };
  effects.onStateChange(replanPrefetch);
  const answerNames = new AnswerNames();
  // A start may bring a server that answers with another name: learnt again.
  effects.onStateChange((model, state) => {
    if (state === "starting") answerNames.forget(model);
  });
  wireStateListeners(effects, {
    config,
    log,
    budget,
    loadTimes,
    loadEvents,
    nodes,
    gpuHistory,
    events,
    reloads,
  });
  const gaugeInputs: GaugeInputs = {
    scheduler,
    modelOf: (id) => reloads.model(id)!,
    leasesOf: (id) => leases.count(id),
    budget,
    gpu: () => gpu.last && { reading: gpu.last, ageS: (timers.now() - gpu.lastAt) / 1000 },
    peers: () => peerLinks.health(),
    startedAt: face.startedAt,
  };
  return {
    timers,
    registry,
    answerNames,
    events,
    logHub,
    loadTimes,
    loadEvents,
    modelLine,
    budget,
    leases,
    observation,
    scheduler,
    nodes,
    gpu,
    gpuHistory,
    runner,
    waiters,
    wake,
    peerLinks,
    variants,
    reloads,
    preload,
    prefetch,
  };
}
