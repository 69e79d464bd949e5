/**
 * The GPU watch: the probe (nvidia-smi, AMD, unified memory) sampled on an interval, each
 * reading attributed (by process or by change) and turned into the live VRAM ceiling the
 * policy admits against, the spawn guard's verdicts, shedding, the `vram` events' pictures and
 * the history's samples. The runtime owns one and hands it the budget it sets (watch-deps.ts).
 */
import type { ResourcesConfig } from "../config/types.ts";
import { delay } from "../shared/timer.ts";
import { effectiveBudgetGb, ForeignBaseline, liveCeiling } from "./ceiling.ts";
import { type CardLimits, cardSamples } from "./history.ts";
import { GPU_KIND_NAMES } from "./kind.ts";
import { OwnProcesses, RELEASE_SETTLE_MS } from "./own-processes.ts";
import { MemoryOwners } from "./owners.ts";
import { type SpawnVerdict, spawnGuard } from "./spawn-guard.ts";
import type { Attribution, CardReading, GpuKind, GpuReading, ProbeResult } from "./types.ts";
import { setPlacementKind } from "./visible-devices.ts";
import { VramPictures } from "./vram-pictures.ts";
import type { CardLimit, GpuWatchDeps, GuardOptions } from "./watch-deps.ts";

export { VramPictures };
export type {
  CardLimit,
  GpuProbe,
  GpuWatchDeps,
  GuardOptions,
  WatchedBudget,
} from "./watch-deps.ts";

const round = (n: number) => Math.round(n * 100) / 100;

/**
 * The budget a reading is judged against: `vram_budget_gb`, or where none is set (0) — with
 * `"auto"` where the loader found no unified memory, or on an NVIDIA unified-memory box
 * (MemTotal) — the GPUs' total as the probe reads it; no reading, no budget.
 */
export function budgetInForce(resources: ResourcesConfig, probe: ProbeResult): number {
  if (!probe.ok || resources.vramBudgetGb > 0) return resources.vramBudgetGb;
  // Unified memory without a budget set: the memory the box has (MemTotal).
  const unified = probe.reading.kind === "nvidia-unified";
  return resources.vramBudgetAuto === true || unified
    ? probe.reading.totalGb
    : resources.vramBudgetGb;
}

/**
 * Samples nvidia-smi on an interval and turns each reading into the live VRAM ceiling
 * (`budget − max(0, foreign − idle baseline) − oom_guard_reserve_gb`), learns the idle foreign
 * baseline, and sheds idle models when foreign usage grows while models are resident. A
 * missing or untrustworthy reading leaves the static budget in force; `qm status` says why.
 */
export class GpuWatch {
  private readonly baseline = new ForeignBaseline();
  /** Several GPUs: each card's idle foreign baseline, by index. */
  private readonly cardBaselines = new Map<number, ForeignBaseline>();
  private readonly own: OwnProcesses;
  private timer: unknown = null;
  private stopped = false;
  last: GpuReading | null = null;
  /** When `last` was read (the timers' clock). */
  lastAt = 0;
  /** Spawn-guard refusals, remembered until the memory picture changes. */
  private readonly refusals = new Map<string, { fingerprint: string; message: string }>();
  private readonly pictures: VramPictures;
  /** Whose memory each reading shows: by process, or by change (a PID namespace). */
  private readonly owners = new MemoryOwners();
  /** The kind of GPU the last probe found (`/api/status` `resources.gpu_kind`). */
  kind: GpuKind = "none";
  private kindLogged = false;

  constructor(private readonly deps: GpuWatchDeps) {
    this.own = new OwnProcesses(deps.settleMs ?? RELEASE_SETTLE_MS);
    this.pictures = new VramPictures(deps.vramEventGb, deps.vramEventMinMs);
  }

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
    if (this.timer !== null) this.deps.timers.clear(this.timer);
  }

  private async loop(): Promise<void> {
    if (this.stopped) return;
    const notFound = await this.sample();
    if (this.stopped) return;
    // A box without nvidia-smi will not grow one soon: look again rarely.
    const every = notFound ? 60_000 : this.deps.resources.gpuProbeIntervalMs;
    this.timer = this.deps.timers.set(() => void this.loop(), every);
  }

  /** Takes one reading now and applies it. Returns true when the probe command is missing. */
  async sample(): Promise<boolean> {
    const { resources, budget, timers } = this.deps;
    const pids = this.own.look(timers.now(), this.deps.processes());
    const result = await this.deps.probe({
      command: resources.gpuProbe,
      ourPids: pids.ready,
      transientPids: pids.transient,
    });
    // Idle at both ends of the reading: a model that started or exited while nvidia-smi ran
    // may be in it, unattributed.
    const models = [...this.deps.processes()];
    const idle = pids.idle && this.own.look(timers.now(), models).idle;
    this.noteKind(result);
    const { reading: r, switched } = this.owners.apply({
      result,
      models,
      settling: this.own.settling(timers.now()),
      placement: (id) => budget.placement(id),
    });
    if (switched) {
      this.deps.log.warn(
        `GPU memory: ${result.ok ? "the probe" : result.reason.replace(/: static budget applies$/, "")}; attributing memory by change (the GPU's process ids are not visible here)`,
      );
    }
    if (!r) {
      const reason = result.ok ? "no reading" : result.reason;
      this.last = null;
      if (budget.cardLimits().length > 0) {
        // The cards' budgets stand, verbatim, as the box's static budget does.
        const limits = budget.cardLimits().map((c) => ({ ...c, ceilingGb: c.budgetGb }));
        budget.setCards(limits, reason);
      } else budget.set(resources.vramBudgetGb, reason);
      if (this.pictures.untrusted()) this.deps.vramChanged?.();
      return !result.ok && result.kind === "none";
    }
    this.last = r;
    this.lastAt = timers.now();
    this.baseline.observe(r.foreignGb, idle);
    this.forgetStaleRefusals();
    const before = budget.vramGb();
    const cards = this.cardLimits(r.cards ?? [], idle);
    if (cards.length > 0) return this.applyCards(r, cards, before);
    const budgetGb = budgetInForce(resources, { ok: true, reading: r });
    const ceiling = effectiveBudgetGb(
      budgetGb,
      resources.oomGuardReserveGb,
      { ok: true, reading: r },
      this.baseline.gb,
    );
    const base = round(this.baseline.gb ?? 0);
    budget.set(
      ceiling,
      `${this.liveNote()}: ` +
        (budgetGb <= 0
          ? `${round(r.usedGb)} of ${round(r.totalGb)} GB used, ${round(r.foreignGb)} GB by other programs (no vram_budget_gb set)`
          : `${round(r.foreignGb)} GB used by other programs (idle baseline ${base} GB), ` +
            `${resources.oomGuardReserveGb} GB reserve → ceiling ${round(ceiling)} GB` +
            (budgetGb === resources.vramBudgetGb
              ? ""
              : resources.vramBudgetAuto
                ? ` (vram_budget_gb = "auto": the GPUs' ${round(budgetGb)} GB)`
                : ` of ${round(budgetGb)} GB (MemTotal)`)),
    );
    this.recordSample(r, () => ({ budgetGb, ceilingGb: budget.vramGb() }));
    if (this.pictures.reading(r.usedGb, r.foreignGb, budget.vramGb(), timers.now())) {
      this.deps.vramChanged?.();
    }
    if (budgetGb <= 0) return false;
    if (ceiling < before) {
      this.deps.log.warn(
        `GPU memory: other programs now use ${round(r.foreignGb)} GB; VRAM ceiling ${round(before)} → ${round(ceiling)} GB`,
      );
    }
    // While a swap is in flight, or memory qm let go of may still read as used (foreign: its
    // process is gone), memory is moving; judge pressure once it settles.
    if (!this.deps.inTransition() && !this.own.settling(timers.now())) this.deps.shed(ceiling);
    return false;
  }

  /** "live" with how qm's memory is told, for the status note. */
  private liveNote(): string {
    return this.owners.attribution === "by_change"
      ? "live, attribution by change (the GPU's process ids are not visible here)"
      : "live";
  }

  /** The kind of GPU the probe found; logged when it changes (the first reading included). */
  private noteKind(result: ProbeResult): void {
    const kind: GpuKind = result.ok ? (result.reading.kind ?? "nvidia") : (result.kind ?? "none");
    if (kind === this.kind && this.kindLogged) return;
    this.kind = kind;
    this.kindLogged = true;
    if (kind !== "none") setPlacementKind(kind);
    this.deps.log.info(`GPU: ${GPU_KIND_NAMES[kind]}`);
  }

  /** One history sample of the reading's cards, with the limits in force. */
  private recordSample(r: GpuReading, boxLimits: () => CardLimits): void {
    const onSample = this.deps.onSample;
    if (!onSample) return;
    const limits = this.deps.budget.cardLimits();
    onSample(
      cardSamples(r.cards ?? [], this.owners.models, (index) => {
        const c = limits.find((l) => l.index === index);
        return c ? { budgetGb: c.budgetGb, ceilingGb: c.ceilingGb } : boxLimits();
      }),
    );
  }

  /** How qm's memory is told now: by its processes, by change, or null without a reading. */
  get attribution(): Attribution | null {
    return this.last ? this.owners.attribution : null;
  }

  /** Each of qm's models' memory in the latest trusted reading (GB, summed over cards). */
  measured(): Map<string, number> {
    return this.last ? this.owners.measured() : new Map();
  }

  /** The same, card by card: card index → model id → GB. */
  modelsOnCards(): ReadonlyMap<number, ReadonlyMap<string, number>> {
    return this.last ? this.owners.models : new Map();
  }

  /**
   * Several GPUs: each card's budget (`resources.gpus`; else, with two or more cards listed,
   * each card's memory, scaled to `vram_budget_gb` when one is set) and its live ceiling
   * (the box's formula, card by card). Empty: one budget for the box, as today.
   */
  private cardLimits(cards: readonly CardReading[], idle: boolean): CardLimit[] {
    const { resources } = this.deps;
    const configured = resources.gpus ?? [];
    if (configured.length === 0 && cards.length < 2) return [];
    for (const c of cards) {
      const b = this.cardBaselines.get(c.index) ?? new ForeignBaseline();
      this.cardBaselines.set(c.index, b);
      b.observe(c.foreignGb, idle);
    }
    const totalGb = cards.reduce((s, c) => s + c.totalGb, 0);
    const scale =
      resources.vramBudgetGb > 0 && totalGb > 0 ? Math.min(1, resources.vramBudgetGb / totalGb) : 1;
    const budgets =
      configured.length > 0
        ? configured.map((g) => ({ index: g.index, budgetGb: g.vramBudgetGb }))
        : cards.map((c) => ({ index: c.index, budgetGb: c.totalGb * scale }));
    return budgets.map(({ index, budgetGb }) => {
      const card = cards.find((c) => c.index === index);
      // A configured card the reading does not list: its budget stands.
      if (!card) return { index, budgetGb, ceilingGb: budgetGb };
      const ceilingGb = liveCeiling({
        budgetGb,
        foreignGb: card.foreignGb,
        baselineGb: this.cardBaselines.get(index)?.gb ?? 0,
        reserveGb: resources.oomGuardReserveGb,
      });
      return { index, budgetGb, ceilingGb };
    });
  }

  private applyCards(r: GpuReading, cards: CardLimit[], before: number): boolean {
    const { budget, timers } = this.deps;
    const list = cards.map(
      (c) => `GPU ${c.index} ${round(c.ceilingGb)} of ${round(c.budgetGb)} GB`,
    );
    budget.setCards(
      cards,
      `${this.liveNote()}, per card: ${list.join(", ")} (${round(r.foreignGb)} GB used by other programs, ` +
        `${this.deps.resources.oomGuardReserveGb} GB reserve each)`,
    );
    const ceiling = budget.vramGb();
    this.recordSample(r, () => ({ budgetGb: 0, ceilingGb: 0 }));
    if (this.pictures.reading(r.usedGb, r.foreignGb, ceiling, timers.now())) {
      this.deps.vramChanged?.();
    }
    if (ceiling < before) {
      this.deps.log.warn(
        `GPU memory: other programs now use ${round(r.foreignGb)} GB; VRAM ceiling ${round(before)} → ${round(ceiling)} GB`,
      );
    }
    if (!this.deps.inTransition() && !this.own.settling(timers.now())) {
      this.deps.shed(ceiling, budget.cards());
    }
    return false;
  }

  /** qm let go of a model's memory outside a swap (unload, TTL, shed): the guard may wait for it. */
  noteReleased(): void {
    this.own.released(this.deps.timers.now());
  }

  /**
   * The spawn guard: with a fresh reading, may `model` start now? When qm let go of memory
   * in the last few seconds (this swap's evictions, or a model seen exiting) and the reading
   * shows too little free, re-read until it does or the memory had `settleMs` to come back:
   * drivers reclaim an exited process's memory late. A refusal is remembered (and admission
   * refuses the model at once) until the memory picture changes.
   */
  async guard(model: string, estimateGb: number, opts: GuardOptions = {}): Promise<SpawnVerdict> {
    if (this.deps.resources.gpuProbe.trim() === "off" || !(estimateGb > 0)) return { ok: true };
    const { timers } = this.deps;
    const since = timers.now();
    if (opts.evicted && opts.evicted.length > 0) this.own.released(since);
    const on = opts.gpus ? [...opts.gpus] : undefined;
    let check = await this.check(model, estimateGb, on);
    const pollMs = Math.max(1, this.deps.settlePollMs ?? 200);
    // The poll count bounds the wait too, should the clock not move (a frozen test clock).
    let polls = Math.ceil((this.deps.settleMs ?? RELEASE_SETTLE_MS) / pollMs);
    const waits = !check.verdict.ok && this.own.settling(timers.now());
    while (!check.verdict.ok && this.own.settling(timers.now()) && polls-- > 0 && !this.stopped) {
      await delay(pollMs, undefined, timers);
      check = await this.check(model, estimateGb, on);
    }
    const { verdict, reading } = check;
    if (waits) {
      const ms = Math.round(timers.now() - since);
      this.deps.log.info(
        `spawn guard: waited ${ms} ms for memory qm let go of to show up free; ` +
          `${model} ${verdict.ok ? "fits" : "still does not fit"}`,
      );
    }
    if (!verdict.ok && reading) {
      this.refusals.set(model, { fingerprint: fingerprint(reading), message: verdict.message });
    } else {
      this.refusals.delete(model);
    }
    return verdict;
  }

  /** One fresh reading and the guard's verdict on it; no trusted reading → not judged. */
  private async check(
    model: string,
    estimateGb: number,
    gpuIndexes?: number[],
  ): Promise<{ verdict: SpawnVerdict; reading: GpuReading | null }> {
    await this.sample();
    const reading = this.last;
    if (!reading) return { verdict: { ok: true }, reading };
    const reserveGb = this.deps.resources.oomGuardReserveGb;
    return {
      verdict: spawnGuard(reading, {
        model,
        estimateGb,
        reserveGb,
        ...(gpuIndexes ? { gpuIndexes } : {}),
      }),
      reading,
    };
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
