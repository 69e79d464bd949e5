/**
 * What watches the requests and the runtime (src/observe): the activity log, the captures and
 * the metrics, made from `[activity]` and the listeners' settings, and the one place each
 * finished request's record goes. The gauges read the runtime's state through `GaugeInputs`.
 */
import type { Config, ModelConfig } from "../config/types.ts";
import type { GpuReading } from "../gpu/index.ts";
import { ActivityLog } from "../observe/activity.ts";
import { type Capture, CaptureStore, captureJson } from "../observe/capture.ts";
import type { GaugeReading } from "../observe/gauges.ts";
import type { KeyLoadReading } from "../observe/key-metrics.ts";
import { type Metrics, metricsFor } from "../observe/lazy-metrics.ts";
import type { RequestRecord } from "../observe/record.ts";
import type { UpstreamTarget } from "../observe/upstream.ts";
import { UsageBook } from "../observe/usage.ts";
import type { Eviction } from "../policy/types.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";
import type { ModelState } from "../scheduler/types.ts";
import type { StateDb } from "../store/database.ts";
import { VERSION } from "../version.ts";
import type { EventHub } from "./event-hub.ts";
import type { LiveBudget } from "./live-budget.ts";
import { memoryInUse, round } from "./status.ts";

/** The runtime's state the gauges read at each scrape. */
export interface GaugeInputs {
  scheduler: Scheduler;
  /** A model's config (one removed by a reload but still running included). */
  modelOf(id: string): ModelConfig;
  leasesOf(id: string): number;
  budget: LiveBudget;
  /** The last trusted GPU reading, and seconds since it, or null. */
  gpu(): { reading: GpuReading; ageS: number } | null;
  peers(): Iterable<{ name: string; up: boolean }>;
  /** Wall-clock epoch ms qm started at. */
  startedAt: number;
}

/** The gauges' reading now: no status is rendered for it. */
export function gaugeReading(i: GaugeInputs, config: Config): GaugeReading {
  const snap = i.scheduler.snapshot();
  const gpu = i.gpu();
  const r = gpu?.reading;
  const aliasesOf = new Map<string, string[]>();
  for (const [alias, id] of Object.entries(config.aliases)) {
    aliasesOf.set(id, [...(aliasesOf.get(id) ?? []), alias]);
  }
  /** What the model server protocol reports of a model of this box's own (not a node's). */
  const protocolOf = (id: string, state: ModelState) => {
    const m = i.modelOf(id);
    if (m.node) return undefined;
    const listed = !m.unlisted && !m.variantOf;
    const stopped = state === "stopped" || state === "failed";
    return {
      names: listed ? [id, ...(aliasesOf.get(id) ?? [])] : [],
      loadable: listed && stopped && evictsNothing(i.scheduler.evictionFor(id)),
    };
  };
  return {
    version: VERSION,
    uptimeS: Math.round((Date.now() - i.startedAt) / 1000),
    models: snap.models.map((m) => ({
      id: m.id,
      state: m.state,
      inflight: m.inflight,
      queued: m.queued,
      leases: i.leasesOf(m.id),
      protocol: protocolOf(m.id, m.state),
    })),
    queueDepth: snap.queueDepth,
    swapsInProgress: snap.swaps.length,
    vram: {
      budgetGb: config.resources.vramBudgetGb,
      ceilingGb: round(i.budget.vramGb()),
      usedGb: round(memoryInUse(snap.models, i.modelOf).vramGb),
    },
    gpu: r
      ? { totalGb: round(r.totalGb), usedGb: round(r.usedGb), foreignGb: round(r.foreignGb) }
      : null,
    gpuReadingAgeS: gpu ? gpu.ageS : null,
    peers: i.peers(),
  };
}

const evictsNothing = (e: Eviction) => e.ok && e.evict.length === 0;

export interface ObservationDeps {
  events: EventHub;
  /** The database (`[store]`): records, captures and usage outlast a restart. Null: none. */
  db: StateDb | null;
  gauges(): GaugeReading;
  /** The ready models whose servers' own metrics are merged in (`scrape_upstream_metrics`). */
  upstreams(): UpstreamTarget[];
  /** Each configured key's waiting and in-flight requests now (`qm_key_waiting`, `…_inflight`). */
  keys?: () => KeyLoadReading[];
  warn(line: string): void;
}

export class Observation {
  readonly activity: ActivityLog;
  /** qm's metrics: prom-client is loaded only when a listener serves them (lazy-metrics.ts). */
  readonly metrics: Metrics;
  /** Where requests and answers are captured (`[activity] capture`), or null. */
  readonly captures: CaptureStore | null;
  /** Usage per key × model × hour (`GET /api/usage`); null when no record is kept anywhere. */
  readonly usage: UsageBook | null;
  /**
   * Something reads the records: the activity log, metrics that a listener serves, or the
   * database (usage).
   */
  readonly recording: boolean;
  /** A listener serves `/metrics`: only then are requests counted. */
  private readonly metricsServed: boolean;
  private readonly logged: boolean;

  constructor(
    config: Config,
    private readonly deps: ObservationDeps,
  ) {
    const act = config.activity;
    this.captures =
      act.enabled && act.capture && act.size > 0
        ? new CaptureStore(act.captureBytes, act.captureTotalBytes)
        : null;
    this.activity = new ActivityLog(act.enabled ? act.size : 0, this.captures);
    this.logged = act.enabled;
    this.metricsServed = config.server.metricsListen !== "" || config.server.metricsOnApi !== false;
    const db = deps.db;
    this.usage =
      act.enabled || db !== null
        ? new UsageBook(config.store.maxAgeMs, db ? (row) => db.usage.put(row) : undefined)
        : null;
    this.recording = act.enabled || this.metricsServed || this.usage !== null;
    if (db) this.restore(db, config);
    this.metrics = metricsFor(this.metricsServed, {
      gauges: deps.gauges,
      upstreams: deps.upstreams,
      keys: deps.keys,
      upstream: { warn: deps.warn },
    });
  }

  /**
   * A finished request: to the metrics, the usage, the activity log, the database and (while
   * anyone listens) events.
   */
  record(r: RequestRecord, capture: Capture | null): void {
    if (this.metricsServed) this.metrics.request(r);
    this.usage?.add(r);
    if (!this.logged) return;
    r.id = this.activity.push(r, capture);
    const db = this.deps.db;
    if (db) db.requests.put(r, this.persistCaptures && capture ? () => captureJson(capture) : null);
    const events = this.deps.events;
    if (events.listening) events.publish({ type: "request", ...r });
  }

  /** Captures are written with their records (`[activity] capture_persist`). */
  private persistCaptures = false;

  /**
   * After a restart: the usage and the latest records back from the database, ids going on
   * from the last one; a record (or its capture) the ring no longer holds is read from it.
   */
  private restore(db: StateDb, config: Config): void {
    this.persistCaptures = config.activity.capturePersist && this.captures !== null;
    this.usage?.load(db.usage.since(Date.now() - config.store.maxAgeMs));
    if (!this.logged) return;
    this.activity.restore(db.requests.latest(this.activity.size), db.requests.lastId());
    this.activity.older = (id) => db.requests.get(id);
  }
}
