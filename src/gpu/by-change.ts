/**
 * Attribution by change: where the probe's process ids are not qm's (a container with its own
 * PID namespace, a GPU tool that lists no processes), qm still knows what it started and when.
 * The memory that appeared on a card while a model started is that model's; it leaves when the
 * model stops. Pure: the caller passes each reading's cards and qm's model processes.
 *
 * Per card it keeps `foreign` — what other programs hold — and per model what it was measured
 * to hold:
 * - **steady** readings (no model starting or stopping, nothing let go of within the settle
 *   time, no model waiting to be measured): foreign = used − Σ models, so another program's
 *   allocation shows up at the next reading;
 * - while things **move**, foreign stays as it was and each model started since the last steady
 *   reading (pending) is measured as used − foreign − Σ settled models, shared evenly among
 *   the pending models on that card; the first reading with nothing starting or stopping and
 *   nothing settling fixes their measure, and the one after is steady again.
 *
 * A model counts as started anew when its pid changes, so each start is measured afresh. What
 * another program allocates while a model starts is taken for the model's until its next
 * start: the price of not seeing pids (docs/gpu.md).
 */

/** A model process as this needs it (structurally the runtime's model servers). */
export interface ModelView {
  readonly id?: string;
  readonly state: "stopped" | "starting" | "ready" | "stopping";
  readonly pid: number | null;
  /** Asleep (its server's sleep API): its GPU memory let go of; measured afresh at its wake. */
  readonly asleep?: boolean;
}

export interface CardUse {
  index: number;
  usedGb: number;
}

export interface CardSplit {
  index: number;
  oursGb: number;
  foreignGb: number;
  /** Each model's memory on this card, by id. */
  models: Map<string, number>;
}

interface Measure {
  pid: number;
  /** GB per card index. */
  cards: Map<number, number>;
  settled: boolean;
  /** The cards it was placed on; undefined: every card (the box). */
  on: readonly number[] | undefined;
}

export class ChangeAttribution {
  readonly #foreign = new Map<number, number>();
  readonly #models = new Map<string, Measure>();

  /**
   * One reading. `placement(id)`: the cards a model runs on (undefined: all). `settling`: qm
   * let go of memory within the settle time (it may still read as used).
   */
  observe(
    cards: readonly CardUse[],
    models: Iterable<ModelView>,
    settling: boolean,
    placement: (id: string) => readonly number[] | undefined = () => undefined,
  ): CardSplit[] {
    const live = new Set<string>();
    let transitional = settling;
    for (const m of models) {
      if (m.state === "starting" || m.state === "stopping") transitional = true;
      if (m.id === undefined || m.state === "stopped" || m.pid === null || m.asleep) continue;
      live.add(m.id);
      const known = this.#models.get(m.id);
      if (!known || known.pid !== m.pid) {
        this.#models.set(m.id, {
          pid: m.pid,
          cards: new Map(),
          settled: false,
          on: placement(m.id),
        });
      }
    }
    for (const id of this.#models.keys()) if (!live.has(id)) this.#models.delete(id);
    const pending = [...this.#models.values()].filter((m) => !m.settled);
    const steady = !transitional && pending.length === 0;
    const out = cards.map((card) => this.#card(card, steady));
    if (!transitional) for (const m of pending) m.settled = true;
    return out;
  }

  #card({ index, usedGb }: CardUse, steady: boolean): CardSplit {
    const on = (m: Measure) => m.on === undefined || m.on.includes(index);
    const settled = [...this.#models.values()].filter((m) => m.settled && on(m));
    const settledGb = settled.reduce((s, m) => s + (m.cards.get(index) ?? 0), 0);
    if (steady || !this.#foreign.has(index)) {
      // Not yet known while something moves: the pending models take what is not settled.
      const foreign = Math.max(0, usedGb - settledGb);
      if (steady) this.#foreign.set(index, foreign);
    }
    const foreignGb = this.#foreign.get(index) ?? 0;
    const pending = [...this.#models.values()].filter((m) => !m.settled && on(m));
    const share = Math.max(0, usedGb - foreignGb - settledGb) / Math.max(1, pending.length);
    for (const m of pending) m.cards.set(index, share);
    const models = new Map<string, number>();
    for (const [id, m] of this.#models) if (on(m)) models.set(id, m.cards.get(index) ?? 0);
    return {
      index,
      oursGb: Math.max(0, usedGb - foreignGb),
      foreignGb: Math.min(foreignGb, usedGb),
      models,
    };
  }

  /** Each model's memory now, summed over its cards. */
  measured(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [id, m] of this.#models) {
      out.set(
        id,
        [...m.cards.values()].reduce((s, gb) => s + gb, 0),
      );
    }
    return out;
  }
}
