/**
 * Who hears a model's state change (`Effects.stateChanged`), in this order: the log, the RAM a
 * level-1 sleeper holds, the load times and load events, the GPU history's residency bars, the
 * managed nodes, `event: model`
 * (which reads the load times just updated), and the config reloads waiting for a model to stop.
 */
import type { Config } from "../config/types.ts";
import type { GpuHistory } from "../gpu/history.ts";
import type { Logger } from "../shared/log.ts";
import type { RuntimeEffects } from "./effects.ts";
import type { EventHub } from "./event-hub.ts";
import type { LiveBudget } from "./live-budget.ts";
import type { LoadEvents } from "./load-events.ts";
import type { LoadTimes } from "./load-times.ts";
import type { ManagedNodes } from "./nodes.ts";
import type { ConfigReloads } from "./reload.ts";

export interface StateHearers {
  config: Config;
  log: Logger;
  budget: LiveBudget;
  loadTimes: LoadTimes;
  loadEvents: LoadEvents;
  gpuHistory: GpuHistory;
  nodes: ManagedNodes;
  events: EventHub;
  reloads: ConfigReloads;
}

export function wireStateListeners(effects: RuntimeEffects, h: StateHearers): void {
  effects.onStateChange((model, state, detail) => {
    const line = `model ${model}: ${state}${detail ? ` — ${detail}` : ""}`;
    if (state === "failed") h.log.warn(line);
    else h.log.info(line);
  });
  // A level-1 sleeper keeps its weights in host RAM: charged to the RAM budget while asleep.
  effects.onStateChange((model, state) => {
    const m = h.config.models[model];
    h.budget.sleeping(model, state === "sleeping" && m && m.sleepLevel === 1 ? m.estRamGb : null);
  });
  effects.onStateChange((model, state, detail) => {
    // A wake is not a load: its seconds would skew the load-time estimates.
    if (!waking(state, detail)) h.loadTimes.state(model, state);
    h.loadTimes.wakeState(model, state, waking(state, detail));
    h.loadEvents.state(model, state);
  });
  effects.onStateChange((model, state) => h.gpuHistory.state(Date.now(), model, state));
  effects.onStateChange((model, state) => h.nodes.stateChanged(model, state));
  effects.onStateChange((model, state, detail) => {
    // A load's event says how long it is expected to take (null: never loaded before).
    const expected =
      state === "starting"
        ? { expected_load_ms: waking(state, detail) ? null : h.loadTimes.expected(model) }
        : {};
    h.events.publish({ type: "model", model, state, detail: detail ?? null, ...expected });
  });
  effects.onStateChange((model, state) => h.reloads.settled(model, state));
}

function waking(state: string, detail: string | undefined): boolean {
  return state === "starting" && detail === "waking";
}
