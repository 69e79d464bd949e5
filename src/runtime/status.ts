import type { CardStatusJson, GpuReadingJson, StatusJson } from "../api/status-json.ts";
import type { Config, ModelConfig } from "../config/types.ts";
import type { Attribution, GpuKind, GpuReading } from "../gpu/index.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";
import { VERSION } from "../version.ts";
import type { LiveBudget } from "./live-budget.ts";
import type { LoadTimes } from "./load-times.ts";

/**
 * A load in progress: how long so far, how long it is expected to take, the fraction (time's or
 * the log stage's, the larger) and the stage the model's log shows.
 */
function loadJson(times: LoadTimes, id: string) {
  const p = times.progress(id);
  if (!p) return null;
  const progress = p.progress ?? null;
  return {
    elapsed_ms: Math.round(p.elapsedMs),
    expected_ms: p.expectedMs,
    progress: progress === null ? null : Math.min(0.99, Math.round(progress * 100) / 100),
    stage: p.stage ?? null,
  };
}

type Snapshot = ReturnType<Scheduler["snapshot"]>;

/** `/api/status`: the scheduler's view joined with each process's pid and port. */
export interface StatusInputs {
  config: Config;
  snap: Snapshot;
  processes: ReadonlyMap<string, { readonly pid: number | null }>;
  startedAt: number;
  /** Scheduler clock time → wall-clock epoch ms. */
  toEpoch: (clockMs: number) => number;
  budget: LiveBudget;
  leasesOf: (id: string) => number;
  /** The places in the waiting line of a model's queued requests, front first. */
  positionsOf: (id: string) => number[];
  gpu: GpuReading | null;
  /** What kind of GPU the probe found, and how qm's share of its memory is told. */
  gpuKind?: GpuKind;
  attribution?: Attribution | null;
  foreignBaselineGb: number | null;
  loadTimes: LoadTimes;
  /** The fraction of a model's files prefetched, while it is planned (./prefetch.ts); else null. */
  prefetched?: (id: string) => number | null;
  /** A model's config, one removed by a reload but still running included; default `config.models`. */
  modelOf?: (id: string) => ModelConfig | undefined;
  /** A reload changed its process settings; they apply on its next start. */
  restartPending?: (id: string) => boolean;
}

/**
 * The memory the scheduler's models hold by their estimates: VRAM of the resident ones, RAM of
 * those and of level-1 sleepers. Status and the metrics' gauges both show it.
 */
export function memoryInUse(
  models: Snapshot["models"],
  modelOf: (id: string) => ModelConfig,
): { vramGb: number; ramGb: number } {
  let vramGb = 0;
  let ramGb = 0;
  for (const s of models) {
    const m = modelOf(s.id);
    if (s.state === "sleeping") {
      // Its GPU memory is let go of; at level 1 its weights wait in host RAM.
      if (m.sleepLevel === 1) ramGb += m.estRamGb;
    } else if (s.state !== "stopped" && s.state !== "failed" && !m.node) {
      // (A managed node's models hold its memory, not this box's.)
      vramGb += m.estVramGb;
      ramGb += m.estRamGb;
    }
  }
  return { vramGb, ramGb };
}

export function buildStatus(inputs: StatusInputs): StatusJson {
  const { config, snap, processes, startedAt, toEpoch, leasesOf, gpu } = inputs;
  const modelOf = (id: string) => (inputs.modelOf?.(id) ?? config.models[id])!;
  const use = memoryInUse(snap.models, modelOf);
  const models = snap.models.map((s) => {
    const m = modelOf(s.id);
    return {
      id: s.id,
      state: s.state,
      inflight: s.inflight,
      leases: leasesOf(s.id),
      queued: s.queued,
      queue_positions: inputs.positionsOf(s.id),
      held_until_ms: s.heldUntil === null ? null : toEpoch(s.heldUntil),
      held_reason: s.hold === null ? null : heldReason(s.hold),
      hold:
        s.hold === null
          ? null
          : {
              gap_ms: Math.round(s.hold.gapMs),
              window_ms: s.hold.windowMs,
              swap_ms: Math.round(s.hold.swapBackMs),
            },
      hold_ended:
        s.holdEnded === null
          ? null
          : { how: s.holdEnded.change, reason: s.holdEnded.reason, at_ms: toEpoch(s.holdEnded.at) },
      est_vram_gb: m.estVramGb,
      est_ram_gb: m.estRamGb,
      pid: processes.get(s.id)?.pid ?? null,
      port: m.port,
      aliases: m.aliases,
      group: m.group,
      ttl_s: m.ttlS,
      keep_alive_ms: s.keepAliveMs === null ? null : Math.max(-1, s.keepAliveMs),
      unload_at_ms: s.idleExpiry === null ? null : toEpoch(s.idleExpiry),
      concurrency_limit: m.concurrencyLimit,
      unlisted: m.unlisted,
      last_error: s.lastError,
      load: loadJson(inputs.loadTimes, s.id),
      last_load_ms: inputs.loadTimes.last(s.id),
      prefetched: prefetchedJson(inputs.prefetched?.(s.id) ?? null),
      restart_pending: inputs.restartPending?.(s.id) ?? false,
      ...(s.gpus ? { gpus: [...s.gpus] } : {}),
      ...(m.node ? { node: m.node.node } : {}),
    };
  });
  const budget = config.resources.vramBudgetGb;
  const live = inputs.budget;
  return {
    version: VERSION,
    uptime_s: Math.round((Date.now() - startedAt) / 1000),
    models,
    queue: { depth: snap.queueDepth },
    swaps: snap.swaps.map(({ target, evict, waiters }) => ({ target, evict, waiters })),
    resources: {
      vram_budget_gb: budget,
      vram_ceiling_gb: round(live.vramGb()),
      vram_used_gb: round(use.vramGb),
      ram_budget_gb: config.resources.ramBudgetGb,
      ram_used_gb: round(use.ramGb),
      probe: live.note,
      gpu_kind: inputs.gpuKind ?? "none",
      attribution: gpu ? (inputs.attribution ?? "pids") : null,
      gpu: gpu && {
        ...readingJson(gpu),
        foreign_baseline_gb:
          inputs.foreignBaselineGb === null ? null : round(inputs.foreignBaselineGb),
      },
      ...cardsJson(inputs),
    },
  };
}

/** Several GPUs: each card's budget, ceiling, the models placed on it and its reading. */
function cardsJson(inputs: StatusInputs): { gpus?: CardStatusJson[] } {
  const limits = inputs.budget.cardLimits();
  if (limits.length === 0) return {};
  const { config, snap, gpu } = inputs;
  return {
    gpus: limits.map((c) => {
      const on = snap.models.filter((m) => m.gpus?.includes(c.index));
      const used = on.reduce((sum, m) => {
        const est = (inputs.modelOf?.(m.id) ?? config.models[m.id])?.estVramGb ?? 0;
        return sum + est / m.gpus!.length;
      }, 0);
      const r = gpu?.cards?.find((x) => x.index === c.index);
      return {
        index: c.index,
        budget_gb: round(c.budgetGb),
        ceiling_gb: round(c.ceilingGb),
        used_gb: round(used),
        models: on.map((m) => m.id),
        reading: r ? readingJson(r) : null,
      };
    }),
  };
}

/** A reading of the box or of one card, as status shows it. */
function readingJson(r: {
  totalGb: number;
  usedGb: number;
  freeGb: number;
  oursGb: number;
  foreignGb: number;
}): GpuReadingJson {
  return {
    total_gb: round(r.totalGb),
    used_gb: round(r.usedGb),
    free_gb: round(r.freeGb),
    ours_gb: round(r.oursGb),
    foreign_gb: round(r.foreignGb),
  };
}

/** Prefetch's fraction to the hundredth, never 1 before every byte is read. */
function prefetchedJson(fraction: number | null): number | null {
  if (fraction === null) return null;
  return fraction >= 1 ? 1 : Math.min(0.99, Math.round(fraction * 100) / 100);
}

/**
 * Why a cost-policy hold stands: `gap 2.1 s expected, swap 6.3 s`; before any tool gap has been
 * measured, `no gap measured yet (hold up to 12.5 s), swap 6.3 s`: the hold then lasts at most
 * its window and gives way as the gap so far grows (src/scheduler/design.md, "The first round").
 */
export function heldReason(hold: {
  gapMs: number;
  windowMs: number;
  swapBackMs: number;
  measured: boolean;
}): string {
  const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const swap = `swap ${sec(hold.swapBackMs)}`;
  return hold.measured
    ? `gap ${sec(hold.gapMs)} expected, ${swap}`
    : `no gap measured yet (hold up to ${sec(hold.windowMs)}), ${swap}`;
}

export function round(n: number): number {
  return Math.round(n * 100) / 100;
}
