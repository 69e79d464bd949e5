/**
 * Applying a reloaded config to the running one (./reload.md). Synchronous from the diff to the
 * scheduler event: nothing can interleave between reading what runs and changing it.
 */
import { kvRoot, safeName } from "../config/build-models.ts";
import { ConfigError } from "../config/errors.ts";
import type { Config, ModelConfig } from "../config/types.ts";
import type { EvictionPolicy } from "../policy/types.ts";
import { removeKvFolders } from "../process/kv-folders.ts";
import type { Reconfigure } from "../scheduler/scheduler.ts";
import type { ModelState } from "../scheduler/types.ts";
import type { Logger } from "../shared/log.ts";
import type { LiveBudget } from "./live-budget.ts";
import {
  type ConfigChanges,
  changesJson,
  describeChanges,
  diffConfig,
  diffModel,
} from "./reload-diff.ts";

/** What `POST /api/config/reload` answers and `event: config` carries. */
export type ReloadOutcome =
  | { ok: true; changes: ReturnType<typeof changesJson>; message: string }
  | { ok: false; error: string };

/** Loads the next config; `isPortFree` says which ports a new `${PORT}` may take. */
export type ConfigLoader = (isPortFree: (port: number) => boolean) => Config;

export interface ReloadHost {
  /** The running config: updated in place, as every component reads it. */
  config: Config;
  log: Logger;
  load: ConfigLoader;
  /** The scheduler's state of a model (stopped when unknown). */
  state(id: string): ModelState;
  /** Replaces (or adds) a model's supervisor; forgets one. */
  addProcess(model: ModelConfig): void;
  removeProcess(id: string): void;
  reconfigure(change: Reconfigure): void;
  /**
   * Unloads a model (the scheduler's `unload`): a sleeping model whose process settings
   * changed is stopped, so that its next request starts the new process rather than wake
   * the old one.
   */
  unload?(id: string): void;
  makePolicy(config: Config): EvictionPolicy;
  budget: LiveBudget;
  /** The GPU watch has a reading (then it sets the VRAM limit itself at the next one). */
  gpuReading(): boolean;
  /** Ports models were moved to at a start (the registry's): taken, like configured ones. */
  movedPorts?(): Iterable<number>;
  publish(event: { type: "config" } & Record<string, unknown>): void;
}

export class ConfigReloads {
  /** Models that keep serving on their old process; the new config applies when they stop. */
  private readonly pending = new Map<string, ModelConfig>();
  /** Models removed from the config, still running until idle. */
  private readonly retiring = new Map<string, ModelConfig>();
  private readonly listeners = new Set<(changes: ConfigChanges, config: Config) => void>();
  /** `keep_kv` folders (by name) whose models had `keep_kv` before a reload: id by folder. */
  private readonly kvLeft = new Map<string, string>();

  constructor(private readonly host: ReloadHost) {}

  /** Loads, validates, diffs and applies; a config that does not load changes nothing. */
  reload(): ReloadOutcome {
    const { host } = this;
    let next: Config;
    try {
      const taken = this.takenPorts();
      next = host.load((port) => !taken.has(port));
    } catch (err) {
      const error =
        err instanceof ConfigError
          ? err.format()
          : err instanceof Error
            ? err.message
            : String(err);
      host.log.warn(`config reload failed, nothing changed:\n${error}`);
      host.publish({ type: "config", ok: false, error });
      return { ok: false, error };
    }
    const changes = this.apply(next);
    const message = describeChanges(changes);
    host.log.info(`config reloaded: ${message}`);
    const json = changesJson(changes);
    host.publish({ type: "config", ok: true, changes: json, message });
    for (const fn of this.listeners) {
      try {
        fn(changes, host.config);
      } catch (err) {
        host.log.warn(`a reload listener failed: ${err instanceof Error ? err.message : err}`);
      }
    }
    return { ok: true, changes: json, message };
  }

  /** Hears every applied reload (the new `[peers]` are `config.peers`). */
  subscribe(fn: (changes: ConfigChanges, config: Config) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  restartPending(id: string): boolean {
    return this.pending.has(id);
  }

  /** A configured model, or one removed but still running. */
  model(id: string): ModelConfig | undefined {
    return this.host.config.models[id] ?? this.retiring.get(id);
  }

  /** The scheduler reported `id` down: a pending config takes over, a removed model goes. */
  settled(id: string, state: ModelState): void {
    if (state !== "stopped" && state !== "failed") return;
    const next = this.pending.get(id);
    if (next) {
      this.pending.delete(id);
      this.host.config.models[id] = next;
      this.host.addProcess(next);
      this.host.log.info(`model ${id}: its new config applies from its next start`);
    }
    const retired = this.retiring.delete(id);
    if (retired) this.host.removeProcess(id);
    // Its last save is done: a folder its model no longer keeps can go.
    if (next || retired) this.pruneKv();
  }

  /**
   * Deletes the `keep_kv` folders that a reload left without a model: that of a model removed,
   * or now without `keep_kv`, once its process is down (a running one may still save there).
   * Only models this qm knew with `keep_kv` are candidates: another qm on the same state dir
   * may keep folders of its own there.
   */
  private pruneKv(): void {
    const { config } = this.host;
    // What keeps keep_kv from now on: the config (a removed model still running is not in it).
    const kept = new Set<string>();
    for (const m of [...Object.values(config.models), ...this.pending.values()]) {
      if (m.keepKv !== null) kept.add(safeName(m.id));
    }
    const gone: string[] = [];
    for (const [name, id] of this.kvLeft) {
      if (kept.has(name)) this.kvLeft.delete(name);
      else if (["stopped", "failed"].includes(this.host.state(id))) {
        this.kvLeft.delete(name);
        gone.push(name);
      }
    }
    removeKvFolders(kvRoot(config.server.stateDir), gone, this.host.log);
  }

  /** Applies `next` (already valid). Exposed for tests; `reload` is the way in. */
  apply(next: Config): ConfigChanges {
    const { host } = this;
    const live = host.config;
    const changes = diffConfig(live, next);
    const sleepers: string[] = [];
    for (const m of [...Object.values(live.models), ...this.retiring.values()]) {
      if (m.keepKv !== null) this.kvLeft.set(safeName(m.id), m.id);
    }
    for (const id of changes.removed) {
      // One that is down goes now; a running one stays until the scheduler reports it down.
      if (host.state(id) === "stopped") host.removeProcess(id);
      else this.retiring.set(id, live.models[id]!);
      delete live.models[id];
      this.pending.delete(id);
    }
    for (const [id, n] of Object.entries(next.models)) {
      const current = live.models[id] ?? this.retiring.get(id);
      this.retiring.delete(id);
      if (!current) {
        live.models[id] = n;
        host.addProcess(n);
        continue;
      }
      const restart = diffModel(current, n)?.kind === "restart";
      const state = host.state(id);
      if (restart && (state === "stopped" || state === "failed")) {
        live.models[id] = n;
        host.addProcess(n);
        this.pending.delete(id);
      } else {
        live.models[id] = keepProcess(current, n);
        if (restart) this.pending.set(id, n);
        else this.pending.delete(id);
        if (restart && state === "sleeping") sleepers.push(id);
      }
    }
    live.scheduler = next.scheduler;
    live.groups = next.groups;
    live.router = next.router;
    live.matrix = next.matrix;
    live.ollama = next.ollama;
    live.aliases = next.aliases;
    live.aliasPatterns = next.aliasPatterns;
    live.macros = next.macros;
    live.peers = next.peers;
    // In place: the budget and the GPU watch hold this very object.
    live.resources.vramBudgetGb = next.resources.vramBudgetGb;
    if (next.resources.vramBudgetAuto) live.resources.vramBudgetAuto = true;
    else delete live.resources.vramBudgetAuto;
    live.resources.ramBudgetGb = next.resources.ramBudgetGb;
    live.resources.oomGuardReserveGb = next.resources.oomGuardReserveGb;
    live.server.apiKeys = next.server.apiKeys;
    live.keys = next.keys;
    if (!host.gpuReading()) host.budget.set(live.resources.vramBudgetGb, host.budget.note);

    const policy = host.makePolicy(live);
    for (const m of Object.values(live.models)) {
      if (m.variantOf) policy.addVariant(m.id, m.variantOf.base);
    }
    host.reconfigure({ config: live, policy, retire: changes.removed });
    for (const id of sleepers) host.unload?.(id);
    this.pruneKv();
    return changes;
  }

  /** Ports held by the models configured now, those still running after a removal, and moved ones. */
  private takenPorts(): Set<number> {
    const taken = new Set<number>();
    const all = [
      ...Object.values(this.host.config.models),
      ...this.retiring.values(),
      ...this.pending.values(),
    ];
    for (const m of all) if (m.port !== null) taken.add(m.port);
    for (const port of this.host.movedPorts?.() ?? []) taken.add(port);
    return taken;
  }
}

/** `next`'s settings on `current`'s process: what a running model can take without a restart. */
export function keepProcess(current: ModelConfig, next: ModelConfig): ModelConfig {
  return {
    ...next,
    cmd: current.cmd,
    argv: current.argv,
    proxy: current.proxy,
    port: current.port,
    checkEndpoint: current.checkEndpoint,
    cmdStop: current.cmdStop,
    env: current.env,
    stopTimeoutS: current.stopTimeoutS,
    template: current.template,
  };
}
