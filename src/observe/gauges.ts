/**
 * qm's gauges (`qm_model_state`, `qm_queue_depth`, `qm_vram_*`, `qm_gpu_*`, `qm_peer_up`, …),
 * set at each scrape from one `GaugeReading`: what the runtime holds now (the scheduler's
 * snapshot, the live budget, the last GPU reading, the peers' breakers), read as typed values.
 * No status is rendered for a scrape, and no timer runs between scrapes.
 */
import { Gauge, type Registry } from "prom-client";
import type { ModelState } from "../scheduler/types.ts";

const STATES = ["stopped", "starting", "ready", "stopping", "failed", "sleeping"] as const;

/** 1 GB in qm's configs and status is a GiB (`gpu/units.ts`). */
const BYTES_PER_GB = 2 ** 30;

/** One model, as the gauges show it. */
export interface ModelGauge {
  readonly id: string;
  readonly state: ModelState;
  /** Requests being served. */
  readonly inflight: number;
  /** Requests waiting for it. */
  readonly queued: number;
  /** Leases held on it. */
  readonly leases: number;
  /**
   * Set for this box's own models (absent for a managed node's): what the model server
   * protocol reports of it (`model-server.ts`).
   */
  readonly protocol?: {
    /** The names a client may send for it: its id and exact aliases; none when unlisted. */
    readonly names: readonly string[];
    /** Not resident, and loading it now would evict nothing. */
    readonly loadable: boolean;
  };
}

/** What the gauges show at one scrape. Memory in GB, as status words it (2 decimals). */
export interface GaugeReading {
  readonly version: string;
  readonly uptimeS: number;
  readonly models: Iterable<ModelGauge>;
  /** Requests waiting, all models together. */
  readonly queueDepth: number;
  readonly swapsInProgress: number;
  readonly vram: { readonly budgetGb: number; readonly ceilingGb: number; readonly usedGb: number };
  /** The last trusted GPU reading, or null (then its gauges are left out). */
  readonly gpu: {
    readonly totalGb: number;
    readonly usedGb: number;
    readonly foreignGb: number;
  } | null;
  /** Seconds since the last trusted GPU reading, or null when there is none. */
  readonly gpuReadingAgeS: number | null;
  /** Each peer (`[peers.NAME]`) and whether it is up (its breaker closed). */
  readonly peers: Iterable<{ readonly name: string; readonly up: boolean }>;
}

type Fixed = "state" | "inflight" | "leases" | "queued" | "queue" | "swapping";

/** The gauges of one registry, set from a reading. */
export class Gauges {
  private readonly g: Record<
    Fixed | "budget" | "ceiling" | "used" | "uptime" | "info" | "peerUp",
    Gauge<string>
  >;
  /** Shown only while a GPU reading is known: registered at a scrape that has one. */
  private readonly gpu: Record<
    "total" | "used" | "foreign" | "age",
    { name: string; gauge: Gauge<string> }
  >;

  constructor(private readonly registry: Registry) {
    const registers = [registry];
    const gauge = (name: string, help: string, labelNames: string[] = []) =>
      new Gauge({ name, help, labelNames, registers });
    const sometimes = (name: string, help: string) => ({
      name,
      gauge: new Gauge({ name, help, labelNames: [], registers: [] }),
    });
    this.g = {
      state: gauge("qm_model_state", "1 for the model's current state, 0 for the others.", [
        "model",
        "state",
      ]),
      inflight: gauge("qm_model_inflight", "Requests being served by the model.", ["model"]),
      leases: gauge("qm_model_leases", "Leases held on the model.", ["model"]),
      queued: gauge("qm_model_queued", "Requests waiting for the model.", ["model"]),
      queue: gauge("qm_queue_depth", "Requests waiting, all models together."),
      swapping: gauge("qm_swaps_in_progress", "Swaps under way."),
      budget: gauge("qm_vram_budget_bytes", "The configured VRAM budget."),
      ceiling: gauge("qm_vram_ceiling_bytes", "The VRAM qm may use now (budget less others' use)."),
      used: gauge("qm_vram_used_bytes", "VRAM of the loaded models, by their estimates."),
      uptime: gauge("qm_uptime_seconds", "Seconds since qm started."),
      info: gauge("qm_info", "qm's version (always 1).", ["version"]),
      peerUp: gauge("qm_peer_up", "1 while the peer is up (its breaker closed), else 0.", ["peer"]),
    };
    this.gpu = {
      total: sometimes("qm_gpu_memory_total_bytes", "GPU memory, at the last trusted reading."),
      used: sometimes(
        "qm_gpu_memory_used_bytes",
        "GPU memory in use, at the last trusted reading.",
      ),
      foreign: sometimes(
        "qm_gpu_memory_foreign_bytes",
        "GPU memory used by programs qm did not start, at the last trusted reading.",
      ),
      age: sometimes("qm_gpu_reading_age_seconds", "Seconds since the last trusted GPU reading."),
    };
  }

  /** Sets every gauge from `r`. */
  set(r: GaugeReading): void {
    const g = this.g;
    g.state.reset();
    g.inflight.reset();
    g.leases.reset();
    g.queued.reset();
    for (const m of r.models) {
      for (const state of STATES) g.state.set({ model: m.id, state }, m.state === state ? 1 : 0);
      g.inflight.set({ model: m.id }, m.inflight);
      g.leases.set({ model: m.id }, m.leases);
      g.queued.set({ model: m.id }, m.queued);
    }
    g.queue.set(r.queueDepth);
    g.swapping.set(r.swapsInProgress);
    g.budget.set(r.vram.budgetGb * BYTES_PER_GB);
    g.ceiling.set(r.vram.ceilingGb * BYTES_PER_GB);
    g.used.set(r.vram.usedGb * BYTES_PER_GB);
    const gpu = r.gpu;
    this.known("total", gpu && gpu.totalGb * BYTES_PER_GB);
    this.known("used", gpu && gpu.usedGb * BYTES_PER_GB);
    this.known("foreign", gpu && gpu.foreignGb * BYTES_PER_GB);
    this.known("age", r.gpuReadingAgeS);
    g.uptime.set(r.uptimeS);
    g.peerUp.reset();
    for (const p of r.peers) g.peerUp.set({ peer: p.name }, p.up ? 1 : 0);
    g.info.reset();
    g.info.set({ version: r.version }, 1);
  }

  /** A gauge with no value to show is left out, not shown as 0 (no GPU reading ≠ an empty GPU). */
  private known(which: keyof Gauges["gpu"], value: number | null): void {
    const { gauge: g, name } = this.gpu[which];
    const shown = this.registry.getSingleMetric(name) !== undefined;
    if (value === null) {
      if (shown) this.registry.removeSingleMetric(name);
      return;
    }
    if (!shown) this.registry.registerMetric(g);
    g.set(value);
  }
}
