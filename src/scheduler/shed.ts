import type { Config } from "../config/types.ts";
import type { ModelTable } from "./models.ts";
import type { SwapBook } from "./swaps.ts";

/**
 * Which idle models to stop when the live VRAM ceiling drops below what the residents are
 * estimated to use (another program took GPU memory). Pure.
 *
 * Nothing is shed while the known estimates fit. Otherwise: models with an unknown footprint
 * first (they cannot be accounted for), then idle ones least-recently-used first, those under
 * an idle-grace hold last; stop the moment the rest fits. Busy (or leased) models, persistent
 * ones and models already in transition are never chosen.
 */
export interface ShedInput {
  /** GPU residents, least-recently-used first. */
  residents: readonly string[];
  limitGb: number;
  estimate(id: string): number;
  /** Ready, idle, not persistent, not in transition. */
  sheddable(id: string): boolean;
  held(id: string): boolean;
}

export function shedVictims(o: ShedInput): string[] {
  let used = o.residents.reduce((sum, id) => sum + o.estimate(id), 0);
  if (used <= o.limitGb) return [];
  const known = (id: string) => o.estimate(id) > 0;
  const order = [
    ...o.residents.filter((id) => !known(id)),
    ...o.residents.filter((id) => known(id) && !o.held(id)),
    ...o.residents.filter((id) => known(id) && o.held(id)),
  ];
  const victims: string[] = [];
  for (const id of order) {
    if (used <= o.limitGb) break;
    if (!o.sheddable(id)) continue;
    victims.push(id);
    used -= o.estimate(id);
  }
  return victims;
}

/**
 * The scheduler's reading of `shedVictims`: GPU residents (not RAM-pool models, not already
 * stopping) are candidates; only ready, idle, non-persistent ones not in transition may go.
 */
export function idleToShed(
  limitGb: number,
  config: Pick<Config, "models" | "groups">,
  models: ModelTable,
  swaps: SwapBook,
  now: number,
): string[] {
  const cfg = config.models;
  return shedVictims({
    residents: gpuResidents(config, models, swaps),
    limitGb,
    estimate: (id) => cfg[id]!.estVramGb,
    sheddable: (id) => sheddable(id, config, models, swaps),
    held: (id) => models.held(id, now),
  });
}

/**
 * Several GPUs: `idleToShed` card by card. On each card, the residents placed there (a model on
 * n cards counts `est_vram_gb / n` on each) against that card's ceiling; the victims of every
 * card together, each once.
 */
export function idleToShedOnCards(
  cards: readonly { index: number; ceilingGb: number }[],
  config: Pick<Config, "models" | "groups">,
  models: ModelTable,
  swaps: SwapBook,
  now: number,
): string[] {
  const cfg = config.models;
  const victims = new Set<string>();
  const residents = gpuResidents(config, models, swaps);
  for (const card of cards) {
    const on = residents.filter((id) => models.get(id)!.gpus?.includes(card.index));
    const chosen = shedVictims({
      residents: on.filter((id) => !victims.has(id)),
      limitGb: card.ceilingGb,
      estimate: (id) => cfg[id]!.estVramGb / models.get(id)!.gpus!.length,
      sheddable: (id) => sheddable(id, config, models, swaps),
      held: (id) => models.held(id, now),
    });
    for (const id of chosen) victims.add(id);
  }
  return [...victims];
}

/** This box's GPU residents, least recently used first: not RAM-pool, not a node's, not stopping. */
function gpuResidents(
  config: Pick<Config, "models" | "groups">,
  models: ModelTable,
  swaps: SwapBook,
): string[] {
  const { groups, models: cfg } = config;
  return models
    .runningLru()
    .filter(
      (id) => groups[cfg[id]!.group]?.pool !== "ram" && !cfg[id]!.node && !swaps.isStopping(id),
    );
}

/** Ready, idle, not persistent and in no transition: a model shedding may stop. */
function sheddable(
  id: string,
  config: Pick<Config, "models" | "groups">,
  models: ModelTable,
  swaps: SwapBook,
): boolean {
  const m = models.get(id)!;
  return (
    m.state === "ready" &&
    m.inflight === 0 &&
    !swaps.inTransition(id) &&
    !config.groups[config.models[id]!.group]?.persistent
  );
}
