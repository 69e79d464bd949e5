/**
 * The GPU watch: nvidia-smi sampled on an interval, each reading turned into the live VRAM
 * ceiling the policy admits against, the spawn guard's verdicts, shedding, and the `vram`
 * events' pictures. The runtime owns one and hands it the budget it sets.
 */
import type { ResourcesConfig } from "../config/types.ts";
import type { Logger } from "../shared/log.ts";
import { delay, type Timers } from "../shared/timer.ts";
import { effectiveBudgetGb, ForeignBaseline, liveCeiling } from "./ceiling.ts";
import { OwnProcesses, type ProcessView, RELEASE_SETTLE_MS } from "./own-processes.ts";
import type { ProbeOptions } from "./probe.ts";
import { type SpawnVerdict, spawnGuard } from "./spawn-guard.ts";
import type { CardReading, GpuReading, ProbeResult } from "./types.ts";

/** One card's budget and what admission uses on it now. */
export interface CardLimit {
  index: number;
  budgetGb: number;
  ceilingGb: number;
}

/** The memory limits the watch sets (the runtime's `LiveBudget`, which the policy reads). */
export interface WatchedBudget {
  vramGb(): number;
  /** Each card's budget and ceiling now (empty: one budget for the box). */
  cardLimits(): readonly CardLimit[];
  /** Each card's ceiling now, as shedding takes them. */
  cards(): readonly { index: number; ceilingGb: number }[];
  set(vramGb: number, note: string): void;
  /** Several GPUs: the cards' limits now; the box's VRAM limit becomes their sum. */
  setCards(limits: CardLimit[], note: string): void;
}

/** One reading of the GPUs' memory (`probeGpu`: nvidia-smi). */
export type GpuProbe = (opts: ProbeOptions) => Promise<ProbeResult>;

export interface GpuWatchDeps {
  resources: ResourcesConfig;
  budget: WatchedBudget;
  log: Logger;
  /** The clock and the timers: the probe interval, the spawn guard's re-reads. */
  timers: Timers;
  probe: GpuProbe;
  /** qm's model processes, every state: whose memory is ours, and whether qm is idle. */
  processes(): Iterable<ProcessView>;
  /** True while a swap is loading or stopping something: readings are in flux. */
  inTransition(): boolean;
  /** The ceiling dropped: shed idle models to fit (several GPUs: on each card, `cards`). */
  shed(vramLimitGb: number, cards?: readonly { index: number; ceilingGb: number }[]): void;
  /** How often the spawn guard re-reads while freed memory settles; default 200 ms. */
  settlePollMs?: number;
  /** How long freed memory may take to show up; default RELEASE_SETTLE_MS (5 s). */
  settleMs?: number;
  /**
   * The VRAM picture changed (`VramPictures`): a first trusted reading, trust lost, or used,
   * foreign or the ceiling moved. The runtime publishes it as `event: vram`.
   */
  vramChanged?: () => void;
  /** How far used, foreign or the ceiling must move to count as a change; default 0.25 GB. */
  vramEventGb?: number;
  /** The least time between two change reports; default 1 s (the spawn guard re-reads fast). */
  vramEventMinMs?: number;
}

/** What one `vram` report showed. */
interface Picture {
  usedGb: number;
  foreignGb: number;
  ceilingGb: number;
  at: number;
}

/**
 * Decides which readings change the VRAM picture enough to report: the first trusted one, the
 * loss of trust (and its return), and a move of used, foreign or the ceiling by more than
 * `thresholdGb` since the last report — at most once per `minMs`. A move held back by that
 * limit is not lost: the next reading past it is compared with the last report, not the last
 * reading, so the change is reported then.
 */
export class VramPictures {
  /** The last report: a picture, "none" (trust lost), or null (nothing reported yet). */
  private shown: Picture | "none" | null = null;

  constructor(
    private readonly thresholdGb = 0.25,
    private readonly minMs = 1000,
  ) {}

  /** A trusted reading (with the ceiling it gives) at `now`: true when it is to be reported. */
  reading(usedGb: number, foreignGb: number, ceilingGb: number, now: number): boolean {
    const last = this.shown;
    const next = { usedGb, foreignGb, ceilingGb, at: now };
    if (last === null || last === "none") {
      this.shown = next;
      return true;
    }
    const moved = (a: number, b: number) => Math.abs(a - b) > this.thresholdGb;
    const changed =
      moved(usedGb, last.usedGb) ||
      moved(foreignGb, last.foreignGb) ||
      moved(ceilingGb, last.ceilingGb);
    if (!changed || now - last.at < this.minMs) return false;
    this.shown = next;
    return true;
  }

  /** No trusted reading: reported once, when trust is lost. */
  untrusted(): boolean {
    if (this.shown === null || this.shown === "none") return false;
    this.shown = "none";
    return true;
  }
}

export interface GuardOptions {
  /** Models this swap just stopped: their memory may not show up free at once. */
  evicted?: readonly string[];
  /** Several GPUs: the cards the model is placed on (only their free memory counts). */
  gpus?: readonly number[];
}

const round = (n: number) => Math.round(n * 100) / 100;

/**
 * The budget a reading is judged against: `vram_budget_gb`, or with `"auto"` where the loader
 * found no unified memory (0), the GPUs' total as the probe reads it; no reading, no budget.
 */
export function budgetInForce(resources: ResourcesConfig, probe: ProbeResult): number {
  const auto = resources.vramBudgetAuto === true && resources.vramBudgetGb <= 0;
  return auto && probe.ok ? probe.reading.totalGb : resources.vramBudgetGb;
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
    const idle = pids.idle && this.own.look(timers.now(), this.deps.processes()).idle;
    const budgetGb = budgetInForce(resources, result);
    const limit = (r: typeof result) =>
      effectiveBudgetGb(budgetGb, resources.oomGuardReserveGb, r, this.baseline.gb);
    if (!result.ok) {
      this.last = null;
      if (budget.cardLimits().length > 0) {
        // The cards' budgets stand, verbatim, as the box's static budget does.
        const limits = budget.cardLimits().map((c) => ({ ...c, ceilingGb: c.budgetGb }));
        budget.setCards(limits, result.reason);
      } else budget.set(limit(result), result.reason);
      if (this.pictures.untrusted()) this.deps.vramChanged?.();
      return result.reason.includes("not found");
    }
    const r = result.reading;
    this.last = r;
    this.lastAt = timers.now();
    this.baseline.observe(r.foreignGb, idle);
    this.forgetStaleRefusals();
    const before = budget.vramGb();
    const cards = this.cardLimits(r.cards ?? [], idle);
    if (cards.length > 0) return this.applyCards(r, cards, before);
    const ceiling = limit(result);
    const base = round(this.baseline.gb ?? 0);
    budget.set(
      ceiling,
      budgetGb <= 0
        ? `live: ${round(r.usedGb)} of ${round(r.totalGb)} GB used, ${round(r.foreignGb)} GB by other programs (no vram_budget_gb set)`
        : `live: ${round(r.foreignGb)} GB used by other programs (idle baseline ${base} GB), ` +
            `${resources.oomGuardReserveGb} GB reserve → ceiling ${round(ceiling)} GB` +
            (budgetGb === resources.vramBudgetGb
              ? ""
              : ` (vram_budget_gb = "auto": the GPUs' ${round(budgetGb)} GB)`),
    );
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
      `live, per card: ${list.join(", ")} (${round(r.foreignGb)} GB used by other programs, ` +
        `${this.deps.resources.oomGuardReserveGb} GB reserve each)`,
    );
    const ceiling = budget.vramGb();
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
