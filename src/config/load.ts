/**
 * TOML text → validated, normalised `Config`, or one `ConfigError` listing every issue.
 * Order: parse → locate keys → env overrides → schema (defaults, types, unknown keys) →
 * macros → models/peers (ports, argv) → cross-references. Nothing here starts or binds
 * anything except the default `isPortFree` probe.
 */
import { readFileSync } from "node:fs";
import { parse, TomlError } from "smol-toml";
import { platform, type UnifiedGpuBudget } from "../platform/index.ts";
import { buildAliases } from "./aliases.ts";
import { buildModels, fileOrder } from "./build-models.ts";
import { buildPeers } from "./build-peers.ts";
import { buildGroups, buildMatrix, checkServer } from "./checks.ts";
import { applyEnvOverrides } from "./env-overrides.ts";
import { ConfigError } from "./errors.ts";
import { Issues } from "./issues.ts";
import { buildKeys } from "./keys.ts";
import { locateKeys } from "./locate.ts";
import { render, resolveMacros } from "./macros.ts";
import { namedNodeModels, nodeModel } from "./node-models.ts";
import { checkModelPorts } from "./port-clashes.ts";
import { isPortFreeOnLoopback, PortAllocator } from "./ports.ts";
import { type ConfigFile, OLLAMA_VERSION_FORMAT } from "./schema.ts";
import { buildPreload, checkGpus } from "./startup.ts";
import { syntaxIssue } from "./toml-syntax.ts";
import type { Config, ModelConfig, PeerConfig } from "./types.ts";
import { applySchema } from "./validate.ts";

export interface LoadOptions {
  /** Path shown in issues and stored as `Config.file`. */
  file: string;
  /** Source of `${env.NAME}` and `QM_<SECTION>__<KEY>` overrides; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Expansion of `${QM_BIN}`, inserted as-is (may be `"/path/bun /path/main.ts"`); default "qm". */
  qmBin?: string;
  /** Whether a port can be handed out for `${PORT}`; default: try to bind 127.0.0.1. */
  isPortFree?: (port: number) => boolean;
  /**
   * What `vram_budget_gb = "auto"` reads where the GPU's memory is the system's (Apple
   * Silicon); default: this platform's (src/platform), asked only when the file says "auto".
   */
  unifiedGpuBudget?: () => UnifiedGpuBudget | null;
}

const GIB = 1024 ** 3;

/** `"auto"` → GB, to the hundredth below (what status shows); 0 where memory is not unified. */
function autoVramBudgetGb(opts: LoadOptions): number {
  const unified = (opts.unifiedGpuBudget ?? (() => platform.unifiedGpuBudget()))();
  return unified === null ? 0 : Math.floor((unified.bytes / GIB) * 100) / 100;
}

function parseToml(text: string, file: string): Record<string, unknown> {
  try {
    // Keys like `__proto__` are refused: model ids end up as object keys downstream.
    return parse(text, { unsafeKeyBehaviour: "throw" });
  } catch (err) {
    if (!(err instanceof TomlError)) throw err;
    throw new ConfigError([syntaxIssue(text, file, err)]);
  }
}

export function loadConfigText(text: string, opts: LoadOptions): Config {
  const env = opts.env ?? process.env;
  const raw = parseToml(text, opts.file);
  const map = locateKeys(text);
  const overrides = applyEnvOverrides(raw, env);
  const issues = new Issues(opts.file, map, overrides.applied);
  for (const { variable, message } of overrides.errors) issues.env(variable, message);

  const file = applySchema(raw, issues);
  const scope = resolveMacros(
    macroTexts(file, issues),
    { env, qmBin: opts.qmBin ?? "qm" },
    (name, message) => issues.at(["macros", name], message),
  );
  const listeners = checkServer(file, issues);
  const ports = new PortAllocator(
    issues.within(["server", "start_port"]) ? 10001 : file.server.start_port,
    opts.isPortFree ?? isPortFreeOnLoopback,
    listeners.map((l) => l.port).filter((p) => p !== 0),
  );
  const stateDir = file.server.state_dir || defaultStateDir();
  const ctx = { issues, map, scope, stateDir };
  const models = buildModels(ctx, file, ports);
  const peers = buildPeers(ctx, file);
  const { groups, groupOf } = buildGroups(file, map, issues);
  for (const model of Object.values(models)) model.group = groupOf.get(model.id) ?? "";
  addNodeModels(models, peers, issues);
  const { aliases, aliasPatterns } = buildAliases(
    file,
    fileOrder(map, "models", Object.keys(file.models)),
    issues,
  );
  const matrix = buildMatrix(file, issues);
  checkModelPorts(
    { listeners, models: Object.values(models), groups, policy: file.router.policy, matrix },
    issues,
  );
  const preload = buildPreload(file, map, issues);
  const gpus = checkGpus(file, issues);
  const keys = buildKeys(file, issues);
  if (!issues.within(["ollama", "version"]) && !OLLAMA_VERSION_FORMAT.test(file.ollama.version)) {
    issues.at(
      ["ollama", "version"],
      `expected a version such as "0.13.5", got ${JSON.stringify(file.ollama.version)}`,
    );
  }
  issues.throwIfAny();

  const { server, scheduler, resources } = file;
  return {
    file: opts.file,
    server: {
      listen: [...server.listen],
      metricsListen: server.metrics_listen,
      metricsOnApi: server.metrics_on_api,
      apiKeys: [...server.api_keys],
      startPort: server.start_port,
      healthCheckTimeoutS: server.health_check_timeout_s,
      maxBodyBytes: Math.round(server.max_body_mb * 1024 * 1024),
      shutdownTimeoutS: server.shutdown_timeout_s,
      logLevel: server.log_level,
      allowedHosts: server.allowed_hosts.map((h) => h.toLowerCase()),
      corsOrigins: server.cors_origins.map((o) => o.toLowerCase().replace(/\/+$/, "")),
      stateDir,
      responsesStore: server.responses_store,
      responsesStoreBytes: Math.round(server.responses_store_mb * 1024 * 1024),
      watchConfig: server.watch_config,
      ...(preload.length > 0 ? { preload } : {}),
    },
    keys,
    scheduler: {
      holdMs: scheduler.hold_ms,
      patienceMs: scheduler.patience_ms,
      holdOn: scheduler.hold_on,
      holdPolicy: scheduler.hold_policy,
      maxQueue: scheduler.max_queue,
      fairShare: {
        enabled: scheduler.fair_share.enabled,
        weights: {
          interactive: scheduler.fair_share.interactive,
          normal: scheduler.fair_share.normal,
          batch: scheduler.fair_share.batch,
        },
      },
    },
    activity: {
      enabled: file.activity.enabled,
      size: file.activity.size,
      capture: file.activity.capture,
      captureBytes: file.activity.capture_bytes,
      captureTotalBytes: Math.round(file.activity.capture_total_mb * 1024 * 1024),
      capturePersist: file.activity.capture_persist,
    },
    store: {
      enabled: file.store.enabled,
      maxAgeMs: Math.round(file.store.max_age_days * 24 * 3600 * 1000),
      maxBytes: Math.round(file.store.max_mb * 1024 * 1024),
    },
    resources: {
      vramBudgetGb:
        resources.vram_budget_gb === "auto" ? autoVramBudgetGb(opts) : resources.vram_budget_gb,
      ...(resources.vram_budget_gb === "auto" ? { vramBudgetAuto: true as const } : {}),
      ramBudgetGb: resources.ram_budget_gb,
      oomGuardReserveGb: resources.oom_guard_reserve_gb,
      gpuProbe: resources.gpu_probe,
      gpuProbeIntervalMs: resources.gpu_probe_interval_ms,
      ...(gpus.length > 0 ? { gpus } : {}),
    },
    router: { policy: file.router.policy },
    ollama: { version: file.ollama.version },
    groups,
    matrix,
    models,
    peers,
    macros: Object.fromEntries([...scope.resolved].map(([name, segs]) => [name, render(segs)])),
    aliases,
    aliasPatterns,
  };
}

/** `[macros]` values as text; ones that failed the schema are passed as invalid. */
function macroTexts(
  file: ConfigFile,
  issues: Issues,
): { texts: Record<string, string>; invalid: string[] } {
  const texts: Record<string, string> = {};
  const invalid: string[] = [];
  for (const [name, value] of Object.entries(file.macros)) {
    texts[name] = String(value);
    if (issues.within(["macros", name])) invalid.push(name);
  }
  return { texts, invalid };
}

export function loadConfigFile(path: string, opts: Partial<LoadOptions> = {}): Config {
  const file = opts.file ?? path;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError([{ file, line: 0, col: 0, key: "", message: unreadable(err) }]);
  }
  return loadConfigText(text, { ...opts, file });
}

/** Why the config file cannot be read, as a sentence (the path is printed before it). */
function unreadable(err: unknown): string {
  switch ((err as { code?: unknown }).code) {
    case "ENOENT":
      return "no such config file (-c FILE or $QM_CONFIG names another; the quartermaster.toml shipped with qm is an example to start from)";
    case "EACCES":
      return "cannot read the config file: permission denied";
    case "EISDIR":
      return "is a directory, not a config file";
    default:
      return `cannot read the config file: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** `$XDG_STATE_HOME/quartermaster`, else `~/.local/state/quartermaster` (XDG Base Directory). */
export function defaultStateDir(env: Record<string, string | undefined> = process.env): string {
  if (env.XDG_STATE_HOME?.startsWith("/")) return `${env.XDG_STATE_HOME}/quartermaster`;
  return `${env.HOME || "/tmp"}/.local/state/quartermaster`;
}

/** A managed node's named models join the scheduler's as `NODE/MODEL` (src/peers/mistralrs.md). */
function addNodeModels(
  models: Record<string, ModelConfig>,
  peers: Record<string, PeerConfig>,
  issues: Issues,
): void {
  for (const peer of Object.values(peers)) {
    for (const remote of namedNodeModels(peer)) {
      const m = nodeModel(peer, remote);
      if (Object.hasOwn(models, m.id)) {
        issues.at(
          ["peers", peer.id],
          `model "${m.id}" is both configured and a model of node "${peer.id}"`,
        );
        continue;
      }
      models[m.id] = m;
    }
  }
}
