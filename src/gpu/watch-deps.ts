/**
 * What the GPU watch (gpu-watch.ts) is given: the budget it sets (the runtime's `LiveBudget`),
 * the probe, qm's model processes, and the hooks it calls on a reading.
 */
import type { ResourcesConfig } from "../config/types.ts";
import type { Logger } from "../shared/log.ts";
import type { Timers } from "../shared/timer.ts";
import type { CardSample } from "./history.ts";
import type { ProcessView } from "./own-processes.ts";
import type { ProbeOptions } from "./probe.ts";
import type { ProbeResult } from "./types.ts";
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
  /** The cards model `id` was placed on (several GPUs); undefined: the whole box. */
  placement(id: string): readonly number[] | undefined;
}

/** One reading of the GPUs' memory (`probeGpu`: nvidia-smi, AMD sysfs, /proc/meminfo). */
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
  /** Each trusted reading's cards, for the history behind the dashboard's charts. */
  onSample?: (cards: CardSample[]) => void;
}

export interface GuardOptions {
  /** Models this swap just stopped: their memory may not show up free at once. */
  evicted?: readonly string[];
  /** Several GPUs: the cards the model is placed on (only their free memory counts). */
  gpus?: readonly number[];
}
