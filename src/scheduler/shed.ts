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
