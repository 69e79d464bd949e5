/**
 * A fake Gateway over an inline TOML config (loaded by the real loader): no scheduler, no
 * processes. Leases are granted at once (or when `gate` opens) and recorded, each with the
 * outcomes it was released with, so a test can count releases per request. The control
 * routes' calls (unload, leases, events) are recorded and answered from plain fields. Upstream
 * calls go through `fetch`: by default the file's `useFakeFetch` fakes (`upstreams`).
 */

import type { AcquireHooks, Gateway, Lease, LeaseInfo, QmEvent } from "../../src/api/gateway.ts";
import type { ModelStatusJson, StatusJson } from "../../src/api/status-json.ts";
import { modelIdFor } from "../../src/config/aliases.ts";
import type { Config, ModelConfig } from "../../src/config/types.ts";
import { ActivityLog } from "../../src/observe/activity.ts";
import { type Capture, CaptureStore } from "../../src/observe/capture.ts";
import type { GaugeReading } from "../../src/observe/gauges.ts";
import { QmMetrics } from "../../src/observe/prometheus.ts";
import type { RequestRecord } from "../../src/observe/record.ts";
import type { Deadline } from "../../src/proxy/deadline.ts";
import type { LoadProgress } from "../../src/proxy/wait-status.ts";
import { EventHub } from "../../src/runtime/event-hub.ts";
import type { ModelState, ServeOutcome } from "../../src/scheduler/types.ts";
import { QmError } from "../../src/shared/errors.ts";
import type { Fetch } from "../../src/shared/fetch.ts";
import { Sweep } from "../../src/shared/sweep.ts";
import type { Timers } from "../../src/shared/timer.ts";
import { config } from "./config.ts";
import { upstreams } from "./fake-fetch.ts";

/** A granted lease and every `release` call it got (exactly one is the contract). */
export interface FakeLease extends Lease {
  readonly releases: (ServeOutcome | undefined)[];
  /** Resolves at the first release. */
  readonly released: Promise<ServeOutcome | undefined>;
}

export interface FakeGw extends Gateway {
  shuttingDown: boolean;
  fetch: Fetch;
  /** Whether records are built (the runtime's: an activity log or a metrics listener). */
  recording: boolean;
  /** Every release of every lease, in order. */
  releases: (ServeOutcome | undefined)[];
  /** Every lease granted, in order. */
  leases: FakeLease[];
  states: Record<string, ModelState>;
  /** The pid `status()` reports for a model (null when absent). */
  pids: Record<string, number>;
  acquired: number;
  /** The hooks of each acquire, in order (hold, patience and keep-alive included). */
  hooks: (AcquireHooks | undefined)[];
  /** When set, acquire waits for it (reporting `position`, if set, then loading first). */
  gate: Promise<void> | null;
  /** The queue position acquire reports before loading, while a gate is set. */
  position: number | null;
  /** Called once acquire has reported loading and starts waiting for `gate`. */
  onWaiting: () => void;
  /** The latest acquire, settled or not (a test awaits it to know the wait is over). */
  pending: Promise<Lease> | null;
  /** What each lease says it waited (`X-QM-Wait-Ms`). */
  waitedMs: number;
  /** Model ids as `reportStall` / `reportAnswered` heard of them, in order. */
  reports: string[];
  /** `unload` calls as `id|all force?`; `unloadError` is thrown instead when set. */
  unloads: string[];
  unloadError: QmError | null;
  /** Lines `logs(id)` answers with. */
  logLines: Record<string, string[]>;
  /** Live log followers per model; `emitLine` feeds them (and `logLines`). */
  logFollowers: Map<string, Set<(line: string) => void>>;
  /** What `loadProgress` answers for any model. */
  progress: LoadProgress | null;
  emitLine(id: string, line: string): void;
  /** Leases taken through `lease()`, by lease id; `leaseCalls` records every call. */
  held: Map<string, { model: string; ttlMs: number }>;
  leaseCalls: string[];
  /** What status says of each model's keep-alive and idle expiry (`keep_alive_ms`, `unload_at_ms`). */
  keepAlive: Record<string, number>;
  unloadAt: Record<string, number>;
  /** Listeners `subscribe` added and not yet removed. */
  listeners: Set<(e: QmEvent, id: number) => void>;
  /** Every finished request's record, in order. */
  records: RequestRecord[];
  /** The events published, kept and numbered as the runtime does; `publish` feeds it. */
  hub: EventHub;
  publish(e: QmEvent): void;
  /** What its metrics' gauges read at a scrape. */
  gauges(): GaugeReading;
}

/** The status of each configured model, from `states`. */
function statusOf(cfg: Config, gw: FakeGw): StatusJson {
  const models: ModelStatusJson[] = Object.values(cfg.models).map((m) => ({
    id: m.id,
    state: gw.modelState(m.id),
    inflight: 0,
    leases: 0,
    queued: 0,
    queue_positions: [],
    held_until_ms: null,
    est_vram_gb: m.estVramGb,
    est_ram_gb: m.estRamGb,
    pid: gw.pids[m.id] ?? null,
    port: m.port,
    aliases: m.aliases,
    group: m.group,
    ttl_s: m.ttlS,
    keep_alive_ms: gw.keepAlive[m.id] ?? null,
    unload_at_ms: gw.unloadAt[m.id] ?? null,
    concurrency_limit: m.concurrencyLimit,
    unlisted: m.unlisted,
    last_error: null,
    load: null,
    last_load_ms: null,
    prefetched: null,
  }));
  return {
    version: "0.0.0-test",
    uptime_s: 1,
    models,
    queue: { depth: 0 },
    swaps: [],
    resources: {
      vram_budget_gb: 0,
      vram_ceiling_gb: 0,
      vram_used_gb: 0,
      ram_budget_gb: 0,
      ram_used_gb: 0,
      probe: "off",
      gpu: null,
    },
  };
}

/** What the gauges read: each configured model's state from `states`, nothing else going on. */
function readingOf(cfg: Config, gw: FakeGw): GaugeReading {
  return {
    version: "0.0.0-test",
    uptimeS: 1,
    models: Object.values(cfg.models).map((m) => ({
      id: m.id,
      state: gw.modelState(m.id),
      inflight: 0,
      queued: 0,
      leases: 0,
    })),
    queueDepth: 0,
    swapsInProgress: 0,
    vram: { budgetGb: 0, ceilingGb: 0, usedGb: 0 },
    gpu: null,
    gpuReadingAgeS: null,
    peers: [],
  };
}

export function fakeGateway(toml: string, timers?: Timers): FakeGw {
  const cfg: Config = config(toml);
  const act = cfg.activity;
  const captures = act.capture ? new CaptureStore(act.captureBytes, act.captureTotalBytes) : null;
  let nextLease = 1;
  const lease = (model: ModelConfig): FakeLease => {
    const releases: (ServeOutcome | undefined)[] = [];
    let first: (o: ServeOutcome | undefined) => void = () => {};
    const released = new Promise<ServeOutcome | undefined>((r) => {
      first = r;
    });
    return {
      model,
      waitedMs: gw.waitedMs,
      releases,
      released,
      release(o?: ServeOutcome) {
        releases.push(o);
        gw.releases.push(o);
        first(o);
      },
    };
  };
  const gw: FakeGw = {
    config: cfg,
    // With `timers`, upstream calls' deadlines are swept on that clock, every 1 ms of it.
    ...(timers ? { calls: new Sweep<Deadline>(timers, 1) } : {}),
    fetch: upstreams,
    shuttingDown: false,
    releases: [],
    leases: [],
    states: {},
    pids: {},
    acquired: 0,
    hooks: [],
    gate: null,
    position: null,
    onWaiting: () => {},
    pending: null,
    waitedMs: 0,
    reports: [],
    unloads: [],
    unloadError: null,
    logLines: {},
    logFollowers: new Map(),
    progress: null,
    loadProgress: () => gw.progress,
    emitLine(id: string, line: string) {
      gw.logLines[id] = [...(gw.logLines[id] ?? []), line];
      for (const fn of gw.logFollowers.get(id) ?? []) fn(line);
    },
    followLogs(id: string, fn: (line: string) => void) {
      const set = gw.logFollowers.get(id) ?? new Set();
      gw.logFollowers.set(id, set);
      set.add(fn);
      return () => {
        set.delete(fn);
      };
    },
    held: new Map(),
    leaseCalls: [],
    listeners: new Set(),
    records: [],
    captures,
    recording: true,
    activity: new ActivityLog(cfg.activity.size, captures),
    gauges: () => readingOf(cfg, gw),
    metrics: new QmMetrics({ gauges: () => gw.gauges() }),
    record(r: RequestRecord, capture?: Capture | null) {
      gw.records.push(r);
      r.id = gw.activity.push(r, capture ?? null);
      gw.metrics.request(r);
      gw.hub.publish({ type: "request", ...r });
    },
    hub: new EventHub(),
    publish: (e: QmEvent) => gw.hub.publish(e),
    eventsSince: (id: number) => gw.hub.since(id),
    get lastEventId() {
      return gw.hub.lastId;
    },
    keepAlive: {},
    unloadAt: {},
    resolve(name: string): ModelConfig | undefined {
      const id = modelIdFor(cfg, name);
      return id === undefined ? undefined : cfg.models[id];
    },
    resolveModel: async (name: string) => gw.resolve(name),
    logs: (id: string) => gw.logLines[id] ?? [],
    acquire(model: ModelConfig, signal: AbortSignal, hooks?: AcquireHooks): Promise<Lease> {
      gw.hooks.push(hooks);
      const wait = async () => {
        if (gw.gate) {
          if (gw.position !== null) hooks?.onPosition?.(gw.position);
          hooks?.onLoading?.();
          gw.onWaiting();
          await gw.gate;
        }
        if (signal.aborted) throw new QmError("cancelled", "the client went away");
        gw.acquired++;
        gw.states[model.id] = "ready";
        const granted = lease(model);
        gw.leases.push(granted);
        return granted;
      };
      gw.pending = wait();
      return gw.pending;
    },
    modelState: (id: string) => gw.states[id] ?? "stopped",
    stderrTail: () => [],
    status: () => statusOf(cfg, gw),
    unload(id: string | null, opts?: { force?: boolean }) {
      gw.unloads.push(`${id ?? "all"}${opts?.force ? " force" : ""}`);
      if (gw.unloadError) throw gw.unloadError;
    },
    async lease(model: ModelConfig, _signal: AbortSignal, ttlMs: number): Promise<LeaseInfo> {
      const id = `lease-${nextLease++}`;
      gw.held.set(id, { model: model.id, ttlMs });
      gw.leaseCalls.push(`lease ${model.id} ${ttlMs}`);
      return { lease: id, model: model.id, expires_in_s: ttlMs / 1000 };
    },
    renewLease(model: string, id: string, ttlMs?: number): LeaseInfo {
      gw.leaseCalls.push(`renew ${model} ${id} ${ttlMs ?? "-"}`);
      const held = gw.held.get(id);
      if (!held || held.model !== model) throw noLease(model, id);
      if (ttlMs !== undefined) held.ttlMs = ttlMs;
      return { lease: id, model, expires_in_s: held.ttlMs / 1000 };
    },
    releaseLease(model: string, id: string) {
      gw.leaseCalls.push(`release ${model} ${id}`);
      const held = gw.held.get(id);
      if (!held || held.model !== model) throw noLease(model, id);
      gw.held.delete(id);
    },
    subscribe(fn: (e: QmEvent, id: number) => void) {
      gw.listeners.add(fn);
      const off = gw.hub.subscribe(fn);
      return () => {
        gw.listeners.delete(fn);
        off();
      };
    },
    reportStall: (id: string) => void gw.reports.push(`stall ${id}`),
    reportAnswered: (id: string) => void gw.reports.push(`answered ${id}`),
  };
  return gw;
}

/** Config text for models served by `upstream` (a FakeUpstream or FakeFetch) (cmd decides the profile). */
export function modelToml(id: string, upstream: { url: string }, extra = "", cmd = "run-model") {
  return `[models.${id}]\ncmd = "${cmd}"\nproxy = "${upstream.url}"\ncheck_endpoint = "none"\n${extra}\n`;
}

/** As the runtime's lease book words it. */
function noLease(model: string, id: string): QmError {
  return new QmError("not_found", `no lease "${id}" on model "${model}" (released or expired)`);
}

/** Makes acquire wait until the test opens (grant) or fails (refuse) the gate. */
export function closeGate(gw: FakeGw): { open(): void; fail(err: Error): void } {
  let open = () => {};
  let fail: (err: Error) => void = () => {};
  gw.gate = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  gw.gate.catch(() => {});
  return { open, fail };
}
