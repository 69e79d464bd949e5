/**
 * Whose memory a reading shows, kept across readings: by process (the probe lists qm's pids), or
 * by change (./by-change.ts) once the probe showed qm's running models nowhere among the
 * processes it lists. That switch sticks until a reading lists one of qm's processes again,
 * because a model that is still starting need not be listed and would otherwise pass for
 * foreign. Pure: the caller passes the probe's answer, qm's processes and the time's verdicts.
 */
import { ChangeAttribution, type ModelView } from "./by-change.ts";
import type { Attribution, CardReading, GpuReading, ProbeResult } from "./types.ts";

export interface OwnersInput {
  result: ProbeResult;
  /** qm's model processes now (with their ids), every state. */
  models: readonly ModelView[];
  /** qm let go of memory within the settle time. */
  settling: boolean;
  /** The cards a model was placed on (several GPUs); undefined: every card. */
  placement?: (id: string) => readonly number[] | undefined;
}

export class MemoryOwners {
  #mode: Attribution = "pids";
  readonly #change = new ChangeAttribution();
  /** How the latest trusted reading was attributed; null without one. */
  attribution: Attribution | null = null;
  /** The latest trusted reading's memory of each of qm's models, per card index. */
  models = new Map<number, Map<string, number>>();

  /** The reading to trust, or null; `switched`: attribution by change began with this one. */
  apply(input: OwnersInput): { reading: GpuReading | null; switched: boolean } {
    const { result, models } = input;
    const raw = result.ok ? result.reading : (result.unattributed ?? null);
    if (!raw) {
      this.attribution = null;
      this.models = new Map();
      return { reading: null, switched: false };
    }
    // Always followed, so a switch to by-change finds each model's start already measured.
    const split = this.#change.observe(
      (raw.cards ?? []).map((c) => ({ index: c.index, usedGb: c.usedGb })),
      models,
      input.settling,
      input.placement,
    );
    const before = this.#mode;
    if (!result.ok) this.#mode = "by_change";
    else if (raw.ourPidsOnGpu.length > 0) this.#mode = "pids";
    const switched = before !== "by_change" && this.#mode === "by_change";
    this.attribution = this.#mode;
    if (this.#mode === "pids") {
      this.models = byModel(raw, models);
      return { reading: raw, switched };
    }
    this.models = new Map(split.map((s) => [s.index, s.models]));
    const cards: CardReading[] = (raw.cards ?? []).map((c) => {
      const s = split.find((x) => x.index === c.index);
      return s ? { ...c, oursGb: s.oursGb, foreignGb: s.foreignGb, ourPids: [] } : c;
    });
    const sum = (f: (c: CardReading) => number) => cards.reduce((n, c) => n + f(c), 0);
    const { byRoot: _, ...rest } = raw;
    return {
      reading: { ...rest, cards, oursGb: sum((c) => c.oursGb), foreignGb: sum((c) => c.foreignGb) },
      switched,
    };
  }

  /** Each of qm's models' memory in the latest trusted reading, summed over cards. */
  measured(): Map<string, number> {
    const out = new Map<string, number>();
    for (const card of this.models.values()) {
      for (const [id, gb] of card) out.set(id, (out.get(id) ?? 0) + gb);
    }
    return out;
  }
}

/** Per card, each model's memory from the reading's process trees (root pid → model id). */
function byModel(r: GpuReading, models: readonly ModelView[]): Map<number, Map<string, number>> {
  const idOf = new Map<number, string>();
  for (const m of models) if (m.pid !== null && m.id !== undefined) idOf.set(m.pid, m.id);
  const out = new Map<number, Map<string, number>>();
  for (const card of r.cards ?? []) {
    const on = new Map<string, number>();
    for (const [root, gb] of card.byRoot ?? []) {
      const id = idOf.get(root);
      if (id !== undefined) on.set(id, (on.get(id) ?? 0) + gb);
    }
    out.set(card.index, on);
  }
  return out;
}
