/**
 * Where each model runs now, apart from the loaded config. The config says where a model is to
 * run; a supervisor that finds the model's `${PORT}` taken at a start moves it to a free port
 * (src/process/port-guard.ts) and says so here. Requests follow it there: `live` is the model
 * as it runs now, which name resolution, leases (and so the proxy), status and the metrics'
 * upstream scrape read. A move never rewrites the config.
 */
import type { ModelConfig } from "../config/types.ts";

/** Where a model's server listens now. */
export interface Placement {
  readonly port: number | null;
  /** The base URL requests for it go to. */
  readonly proxy: string;
}

interface Moved {
  readonly at: Placement;
  /** The configured model `live` last overlaid, and the result (made once per config object). */
  of: ModelConfig | null;
  live: ModelConfig | null;
}

export class ModelRegistry {
  private readonly moved = new Map<string, Moved>();

  /** `model`'s supervisor moved it: `model` is its config re-rendered on the new port. */
  move(model: ModelConfig): void {
    this.moved.set(model.id, {
      at: { port: model.port, proxy: model.proxy },
      of: null,
      live: null,
    });
  }

  /**
   * A model's supervisor was replaced (a reload, a variant minted again) or forgotten: it runs
   * where its config says from its next start.
   */
  forget(id: string): void {
    this.moved.delete(id);
  }

  /** Where `id` runs now when a supervisor moved it; null: where its config says. */
  placement(id: string): Placement | null {
    return this.moved.get(id)?.at ?? null;
  }

  /**
   * `model` (as configured now) where it runs now: the same object unless its supervisor moved
   * it. A moved model's copy is made once per config object, not per request.
   */
  live(model: ModelConfig): ModelConfig {
    const m = this.moved.get(model.id);
    if (m === undefined) return model;
    if (m.of !== model || m.live === null) {
      m.of = model;
      m.live = { ...model, port: m.at.port, proxy: m.at.proxy };
    }
    return m.live;
  }

  /** The ports moved models hold (a reload's new `${PORT}`s must not take them). */
  ports(): number[] {
    const ports: number[] = [];
    for (const m of this.moved.values()) if (m.at.port !== null) ports.push(m.at.port);
    return ports;
  }
}
