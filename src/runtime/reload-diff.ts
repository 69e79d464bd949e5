/**
 * What a reload changes: the running `Config` against the one just loaded. Pure: no I/O, no
 * clock. Which key applies how is decided here, once (./reload.md, "What applies how").
 */
import type { Config, ModelConfig } from "../config/types.ts";

/** How each changed model takes its new config. */
export interface ModelChange {
  /** `restart`: a new process is needed (applies on its next start); `live`: applies at once. */
  kind: "restart" | "live";
  /** The keys that changed, as written in the file (`cmd`, `ttl_s`, …). */
  keys: string[];
}

export interface ConfigChanges {
  added: string[];
  removed: string[];
  /** Changed models, by id. */
  changed: Record<string, ModelChange>;
  /** Keys outside `[models]` applied to the next decision or request (`scheduler.hold_ms`, …). */
  applied: string[];
  /** `[peers]` differs. */
  peers: boolean;
  /** Keys that changed but take effect only when qm restarts (`server.listen`, …). */
  needsRestart: string[];
}

/** Keys whose change needs a new process, compared before `${PORT}` is filled in. */
const PROCESS_KEYS: [string, (m: ModelConfig) => unknown][] = [
  ["cmd", (m) => m.template.cmd],
  ["proxy", (m) => m.template.proxy],
  ["check_endpoint", (m) => m.template.checkEndpoint],
  ["cmd_stop", (m) => m.template.cmdStop],
  ["env", (m) => m.template.env],
  ["stop_timeout_s", (m) => m.stopTimeoutS],
  ["keep_kv", (m) => m.keepKv],
];

/** Keys read per request or per decision: applied at once, the process kept. */
const LIVE_KEYS: [string, (m: ModelConfig) => unknown][] = [
  ["aliases", (m) => m.aliases],
  ["ttl_s", (m) => m.ttlS],
  ["concurrency_limit", (m) => m.concurrencyLimit],
  ["est_vram_gb", (m) => m.estVramGb],
  ["est_ram_gb", (m) => m.estRamGb],
  ["send_loading_state", (m) => m.sendLoadingState],
  ["unlisted", (m) => m.unlisted],
  ["use_model_name", (m) => m.useModelName],
  ["strip_params/set_params", (m) => m.params],
  ["anthropic_native", (m) => m.anthropicNative],
  ["evict", (m) => m.evict],
  ["sleep_level", (m) => m.sleepLevel],
  ["responses_api", (m) => m.responsesNative],
  ["first_byte_timeout_s", (m) => m.firstByteTimeoutMs],
  ["stall_timeout_s", (m) => m.stallTimeoutMs],
  ["scrape_upstream_metrics", (m) => m.scrapeUpstreamMetrics],
  ["ctx_step", (m) => m.ctxStep],
  ["capabilities", (m) => m.capabilities],
  ["prefetch", (m) => m.prefetch],
  ["group", (m) => m.group],
];

/** Sections (or keys) applied to the next decision or request. */
const LIVE_SETTINGS: [string, (c: Config) => unknown][] = [
  ["scheduler", (c) => c.scheduler],
  ["groups", (c) => c.groups],
  ["router", (c) => c.router],
  ["matrix", (c) => c.matrix],
  ["ollama", (c) => c.ollama],
  ["resources.vram_budget_gb", (c) => [c.resources.vramBudgetGb, c.resources.vramBudgetAuto]],
  ["resources.ram_budget_gb", (c) => c.resources.ramBudgetGb],
  ["resources.oom_guard_reserve_gb", (c) => c.resources.oomGuardReserveGb],
  ["server.api_keys", (c) => c.server.apiKeys],
  ["keys", (c) => c.keys],
];

/** Keys read once at start: a change is reported, not applied. */
const RESTART_SETTINGS: [string, (c: Config) => unknown][] = [
  ["server.listen", (c) => c.server.listen],
  ["server.metrics_listen", (c) => c.server.metricsListen],
  ["server.metrics_on_api", (c) => c.server.metricsOnApi],
  ["server.start_port", (c) => c.server.startPort],
  ["server.health_check_timeout_s", (c) => c.server.healthCheckTimeoutS],
  ["server.max_body_mb", (c) => c.server.maxBodyBytes],
  ["server.shutdown_timeout_s", (c) => c.server.shutdownTimeoutS],
  ["server.log_level", (c) => c.server.logLevel],
  ["server.allowed_hosts", (c) => c.server.allowedHosts],
  ["server.cors_origins", (c) => c.server.corsOrigins],
  ["server.state_dir", (c) => c.server.stateDir],
  ["server.responses_store", (c) => c.server.responsesStore],
  ["server.responses_store_mb", (c) => c.server.responsesStoreBytes],
  ["server.watch_config", (c) => c.server.watchConfig],
  // Preload happens once, at startup; the cards' budgets are read when qm starts.
  ["server.preload", (c) => c.server.preload ?? []],
  ["resources.gpus", (c) => c.resources.gpus ?? []],
  ["activity", (c) => c.activity],
  ["store", (c) => c.store],
  ["resources.gpu_probe", (c) => c.resources.gpuProbe],
  ["resources.gpu_probe_interval_ms", (c) => c.resources.gpuProbeIntervalMs],
];

/**
 * The changes from `old` to `next`. Models minted at run time (`?ctx=` variants) are in no
 * file: they are neither removed nor compared, unless their base is removed.
 */
export function diffConfig(old: Config, next: Config): ConfigChanges {
  const changes: ConfigChanges = {
    added: [],
    removed: [],
    changed: {},
    applied: [],
    peers: !same(old.peers, next.peers),
    needsRestart: [],
  };
  for (const [id, m] of Object.entries(old.models)) {
    if (m.variantOf) {
      if (!(m.variantOf.base in next.models)) changes.removed.push(id);
      continue;
    }
    // A model found on a managed node stays while its node does, at the same address.
    if (m.node?.discovered && !(id in next.models)) {
      const node = next.peers[m.node.node];
      if (!node?.node || node.url !== m.proxy || node.apiKey !== m.node.apiKey) {
        changes.removed.push(id);
      }
      continue;
    }
    const n = next.models[id];
    if (!n) {
      changes.removed.push(id);
      continue;
    }
    const change = diffModel(m, n);
    if (change) changes.changed[id] = change;
  }
  for (const id of Object.keys(next.models)) if (!(id in old.models)) changes.added.push(id);
  for (const [key, read] of LIVE_SETTINGS) {
    if (!same(read(old), read(next))) changes.applied.push(key);
  }
  for (const [key, read] of RESTART_SETTINGS) {
    if (!same(read(old), read(next))) changes.needsRestart.push(key);
  }
  return changes;
}

/** How `next` differs from the running `old` model, or null when it does not. */
export function diffModel(old: ModelConfig, next: ModelConfig): ModelChange | null {
  const restart = PROCESS_KEYS.filter(([, read]) => !same(read(old), read(next))).map(([k]) => k);
  const live = LIVE_KEYS.filter(([, read]) => !same(read(old), read(next))).map(([k]) => k);
  if (restart.length > 0) return { kind: "restart", keys: [...restart, ...live] };
  return live.length > 0 ? { kind: "live", keys: live } : null;
}

/** Nothing changed at all. */
export function isEmpty(c: ConfigChanges): boolean {
  return (
    c.added.length === 0 &&
    c.removed.length === 0 &&
    Object.keys(c.changed).length === 0 &&
    c.applied.length === 0 &&
    !c.peers &&
    c.needsRestart.length === 0
  );
}

/** The wire form (`POST /api/config/reload`, `event: config`). */
export function changesJson(c: ConfigChanges) {
  const byKind = (kind: ModelChange["kind"]) =>
    Object.fromEntries(
      Object.entries(c.changed)
        .filter(([, m]) => m.kind === kind)
        .map(([id, m]) => [id, m.keys]),
    );
  return {
    added: c.added,
    removed: c.removed,
    restart_pending: byKind("restart"),
    updated: byKind("live"),
    applied: c.applied,
    peers: c.peers,
    needs_restart: c.needsRestart,
  };
}

/** One line for the log. */
export function describeChanges(c: ConfigChanges): string {
  const parts: string[] = [];
  if (c.added.length) parts.push(`added ${c.added.join(", ")}`);
  if (c.removed.length) parts.push(`removed ${c.removed.join(", ")}`);
  for (const [id, m] of Object.entries(c.changed)) {
    parts.push(`${id}: ${m.keys.join(", ")}${m.kind === "restart" ? " (on its next start)" : ""}`);
  }
  if (c.applied.length) parts.push(`applied ${c.applied.join(", ")}`);
  if (c.peers) parts.push("peers changed");
  if (c.needsRestart.length) parts.push(`needs a restart: ${c.needsRestart.join(", ")}`);
  return parts.length ? parts.join("; ") : "no changes";
}

/** Structural equality of plain config values. */
function same(a: unknown, b: unknown): boolean {
  return Bun.deepEquals(a, b, true);
}
