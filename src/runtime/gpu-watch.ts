import type { ResourcesConfig } from "../config/types.ts";
import {
  effectiveBudgetGb,
  ForeignBaseline,
  type GpuReading,
  probeGpu,
  type SpawnVerdict,
  spawnGuard,
} from "../gpu/index.ts";
import type { Logger } from "../shared/log.ts";
import type { LiveBudget } from "./live-budget.ts";

export interface GpuWatchDeps {
  resources: ResourcesConfig;
  budget: LiveBudget;
  log: Logger;
  /** Pids of ready models (expected on the GPU). */
  readyPids(): number[];
  /** True when no model is resident: foreign usage then is the idle baseline. */
  idle(): boolean;
  /** True while a swap is loading or stopping something: readings are in flux. */
  inTransition(): boolean;
  /** The ceiling dropped: shed idle models to fit. */
  shed(vramLimitGb: number): void;
}

const round = (n: number) => Math.round(n * 100) / 100;

/**
 * Samples nvidia-smi on an interval and turns each reading into the live VRAM ceiling
 * (`budget − max(0, foreign − idle baseline) − oom_guard_reserve_gb`), learns the idle foreign
 * baseline, and sheds idle models when foreign usage grows while models are resident. A
 * missing or untrustworthy reading leaves the static budget in force; `qm status` says why.
 */
export class GpuWatch {
  private readonly baseline = new ForeignBaseline();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  last: GpuReading | null = null;
  /** Spawn-guard refusals, remembered until the memory picture changes. */
  private readonly refusals = new Map<string, { fingerprint: string; message: string }>();

  constructor(private readonly deps: GpuWatchDeps) {}

  start(): void {
    if (this.deps.resources.gpuProbe.trim() === "off") {
      this.deps.budget.set(
        this.deps.resources.vramBudgetGb,
        "GPU probe off (resources.gpu_probe): static budget applies",
      );
      return;
    }
    void this.loop();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private async loop(): Promise<void> {
    if (this.stopped) return;
    const notFound = await this.sample();
    if (this.stopped) return;
    // A box without nvidia-smi will not grow one soon: look again rarely.
    const every = notFound ? 60_000 : this.deps.resources.gpuProbeIntervalMs;
    this.timer = setTimeout(() => void this.loop(), every);
  }

  /** Takes one reading now and applies it. Returns true when the probe command is missing. */
  async sample(): Promise<boolean> {
    const { resources, budget } = this.deps;
    const result = await probeGpu({ command: resources.gpuProbe, ourPids: this.deps.readyPids() });
    const limit = (r: typeof result) =>
      effectiveBudgetGb(resources.vramBudgetGb, resources.oomGuardReserveGb, r, this.baseline.gb);
    if (!result.ok) {
      this.last = null;
      budget.set(limit(result), result.reason);
      return result.reason.includes("not found");
    }
    const r = result.reading;
    this.last = r;
    this.baseline.observe(r.foreignGb, this.deps.idle());
    this.forgetStaleRefusals();
    const before = budget.vramGb();
    const ceiling = limit(result);
    const base = round(this.baseline.gb ?? 0);
    budget.set(
      ceiling,
      resources.vramBudgetGb <= 0
        ? `live: ${round(r.usedGb)} of ${round(r.totalGb)} GB used, ${round(r.foreignGb)} GB by other programs (no vram_budget_gb set)`
        : `live: ${round(r.foreignGb)} GB used by other programs (idle baseline ${base} GB), ` +
            `${resources.oomGuardReserveGb} GB reserve → ceiling ${round(ceiling)} GB`,
    );
    if (resources.vramBudgetGb <= 0) return false;
    if (ceiling < before) {
      this.deps.log.warn(
        `GPU memory: other programs now use ${round(r.foreignGb)} GB; VRAM ceiling ${round(before)} → ${round(ceiling)} GB`,
      );
    }
    // While a swap is in flight its model's memory is moving; judge pressure once it settles.
    if (!this.deps.inTransition()) this.deps.shed(ceiling);
    return false;
  }

  /**
   * The spawn guard: with a fresh reading, may `model` start now? A refusal is remembered
   * (and admission refuses the model at once) until the memory picture changes.
   */
  async guard(model: string, estimateGb: number): Promise<SpawnVerdict> {
    if (this.deps.resources.gpuProbe.trim() === "off" || !(estimateGb > 0)) return { ok: true };
    await this.sample();
    const reading = this.last;
    if (!reading) return { ok: true };
    const verdict = spawnGuard(reading, {
      model,
      estimateGb,
      reserveGb: this.deps.resources.oomGuardReserveGb,
    });
    if (!verdict.ok) {
      this.refusals.set(model, { fingerprint: fingerprint(reading), message: verdict.message });
    } else {
      this.refusals.delete(model);
    }
    return verdict;
  }

  get foreignBaselineGb(): number | null {
    return this.baseline.gb;
  }

  /** A remembered refusal for `model`, if memory has not changed since. */
  refusal(model: string): string | null {
    return this.refusals.get(model)?.message ?? null;
  }

  private forgetStaleRefusals(): void {
    if (!this.last) return;
    const now = fingerprint(this.last);
    for (const [model, r] of this.refusals) if (r.fingerprint !== now) this.refusals.delete(model);
  }
}

/** Memory "changed" when free memory on any card moved by more than 64 MiB. */
function fingerprint(r: GpuReading): string {
  return r.gpus.map((g) => Math.round(g.freeMib / 64)).join(",");
}
