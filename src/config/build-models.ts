/**
 * Models: macro expansion, `${PORT}` allocation in file order, argv splitting
 * and URL checks. Each model is expanded fully before the next one so that ports follow
 * the file's order, which keeps them stable across restarts of the same config.
 */
import { SplitCommandError, splitCommand } from "./argv.ts";
import { headerProblem } from "./ids.ts";
import type { Issues, Path } from "./issues.ts";
import type { SourceMap } from "./locate.ts";
import {
  type Deferred,
  type Expansion,
  fieldLookup,
  type MacroScope,
  render,
  substitute,
  usesMacro,
} from "./macros.ts";
import type { PortAllocator } from "./ports.ts";
import type { ConfigFile, ModelFile } from "./schema.ts";
import type { BodyParams, KeepKv, ModelConfig } from "./types.ts";
import { contextSize, isLlamaServer, modelPath, scrapesMetricsByDefault } from "./variant.ts";

export interface BuildContext {
  issues: Issues;
  map: SourceMap;
  scope: MacroScope;
  /** `server.state_dir`, default applied: where `keep_kv` folders live. */
  stateDir: string;
}

/** Table ids in the order they are written (object key order puts "7" before "a"). */
export function fileOrder(map: SourceMap, section: string, ids: string[]): string[] {
  const rank = (id: string) => {
    const pos = map.exact([section, id]);
    return pos ? pos.line * 1e6 + pos.col : Number.MAX_SAFE_INTEGER;
  };
  return [...ids].sort((a, b) => rank(a) - rank(b));
}

export function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

/** Expands one string, reporting its errors at `path`. */
export function expandAt(
  ctx: BuildContext,
  path: Path,
  text: string,
  allowed: Deferred[],
): Expansion {
  const result = substitute(text, fieldLookup(ctx.scope, allowed));
  for (const error of result.errors) ctx.issues.at(path, error);
  return result;
}

function buildModel(ctx: BuildContext, id: string, m: ModelFile, ports: PortAllocator) {
  const at = (...rest: (string | number)[]): Path => ["models", id, ...rest];
  const model: Deferred[] = ["PORT", "MODEL_ID", "GPU_IDS"];
  const fields = {
    cmd: expandAt(ctx, at("cmd"), m.cmd, model),
    cmdStop: expandAt(ctx, at("cmd_stop"), m.cmd_stop, [...model, "PID"]),
    proxy: expandAt(ctx, at("proxy"), m.proxy, model),
    checkEndpoint: expandAt(ctx, at("check_endpoint"), m.check_endpoint, model),
    useModelName: expandAt(ctx, at("use_model_name"), m.use_model_name, model),
  };
  const env = Object.entries(m.env).map(
    ([name, value]) => [name, expandAt(ctx, at("env", name), value, model)] as const,
  );
  const all = [...Object.values(fields), ...env.map(([, e]) => e)];
  if (all.some((e) => e.failed)) return undefined;

  let port: number | null = null;
  if (all.some((e) => usesMacro(e.segments, "PORT"))) {
    port = ports.allocate();
    if (port === null) {
      ctx.issues.at(at(), `no free port left for \${PORT} (server.start_port up to 65535)`);
      return undefined;
    }
  }
  // ${PID} and ${GPU_IDS} are filled at each start (the process, and the cards it is placed on).
  const fill = (macro: Deferred) =>
    macro === "PORT" ? String(port) : macro === "MODEL_ID" ? id : `\${${macro}}`;
  const text = (e: Expansion) => render(e.segments, fill);
  // Everything but ${PORT}, ${MODEL_ID} and ${PID} resolved: what `model?ctx=N` variants are
  // minted from at run time.
  const raw = (e: Expansion) => render(e.segments, (macro) => `\${${macro}}`);

  const cmd = text(fields.cmd);
  let argv: string[] = [];
  try {
    argv = splitCommand(cmd);
    if (argv.length === 0) ctx.issues.at(at("cmd"), "must not be empty");
  } catch (err) {
    if (!(err instanceof SplitCommandError)) throw err;
    ctx.issues.at(at("cmd"), err.message);
  }
  const proxy = text(fields.proxy).replace(/\/+$/, "");
  if (!isHttpUrl(proxy)) {
    ctx.issues.at(at("proxy"), `expected an http(s) URL, got ${JSON.stringify(proxy)}`);
  }
  const check = text(fields.checkEndpoint);
  if (check !== "none" && !check.startsWith("/")) {
    ctx.issues.at(
      at("check_endpoint"),
      `must start with "/" or be "none", got ${JSON.stringify(check)}`,
    );
  }
  const caps = m.capabilities;
  if (new Set(caps).size < caps.length) {
    ctx.issues.at(at("capabilities"), "lists a capability more than once");
  }
  if (caps.includes("embedding") && caps.includes("completion")) {
    // Ollama's clients list an embedding model apart and never chat with it; one that claims
    // both would be offered for chat (src/api/ollama/capabilities.ts).
    ctx.issues.at(
      at("capabilities"),
      'an embedding model cannot also claim "completion": list one of them',
    );
  }
  const env_ = Object.fromEntries(env.map(([name, e]) => [name, text(e)]));
  const keepKv = m.keep_kv
    ? keepKvOf(ctx, id, m, argv, {
        cmd: raw(fields.cmd),
        env: Object.fromEntries(env.map(([name, e]) => [name, raw(e)])),
      })
    : null;
  const config: ModelConfig = {
    id,
    cmd: keepKv ? `${cmd} --slot-save-path ${keepKv.dir}/` : cmd,
    argv: keepKv ? [...argv, "--slot-save-path", `${keepKv.dir}/`] : argv,
    proxy,
    port,
    checkEndpoint: check === "none" ? null : check,
    cmdStop: text(fields.cmdStop),
    aliases: [...m.aliases],
    env: env_,
    ttlS: m.ttl_s,
    concurrencyLimit: m.concurrency_limit,
    estVramGb: m.est_vram_gb,
    estRamGb: m.est_ram_gb,
    sendLoadingState: m.send_loading_state,
    unlisted: m.unlisted,
    useModelName: text(fields.useModelName),
    params: bodyParams(ctx, at, m.strip_params, m.set_params),
    anthropicNative: m.anthropic_native,
    evict: m.evict,
    sleepLevel: m.sleep_level,
    responsesNative: m.responses_api === "native",
    stopTimeoutS: m.stop_timeout_s,
    firstByteTimeoutMs: Math.round(m.first_byte_timeout_s * 1000),
    stallTimeoutMs: Math.round(m.stall_timeout_s * 1000),
    scrapeUpstreamMetrics:
      m.scrape_upstream_metrics === "auto"
        ? scrapesMetricsByDefault(argv)
        : m.scrape_upstream_metrics,
    // One card is the default: only another count, or a fixed list, is kept.
    ...(m.gpus === 1
      ? {}
      : { gpus: typeof m.gpus === "number" ? m.gpus : [...new Set(m.gpus)].sort((a, b) => a - b) }),
    group: "", // set once groups are known
    keepKv,
    ctxStep: m.ctx_step,
    ...(caps.length > 0 ? { capabilities: [...caps] } : {}),
    prefetch: m.prefetch,
    template: {
      cmd: raw(fields.cmd),
      proxy: raw(fields.proxy),
      checkEndpoint: raw(fields.checkEndpoint),
      cmdStop: raw(fields.cmdStop),
      useModelName: raw(fields.useModelName),
      env: Object.fromEntries(env.map(([name, e]) => [name, raw(e)])),
    },
  };
  return config;
}

/**
 * `keep_kv = true`: llama-server only (its `--slot-save-path` and `/slots` API); the folder is
 * `<state_dir>/kv/<id made safe>`, and the hash covers what makes a saved cache another's: the
 * command and env as written, before `${PORT}` is filled in (a port is where the server
 * listens, not what it computes — a reload or a restart may hand out another), and the context
 * size. The model file is stamped when the process starts (`KvSlots.prepare`), not here: it
 * can change on disk without any reload.
 */
function keepKvOf(
  ctx: BuildContext,
  id: string,
  m: ModelFile,
  argv: string[],
  template: { cmd: string; env: Record<string, string> },
): KeepKv | null {
  if (argv.length > 0 && !isLlamaServer(argv)) {
    ctx.issues.at(
      ["models", id, "keep_kv"],
      "keep_kv needs llama-server (its --slot-save-path and /slots API); this model's cmd does not run llama-server",
    );
    return null;
  }
  if (argv.includes("--slot-save-path")) {
    ctx.issues.at(
      ["models", id, "keep_kv"],
      "keep_kv sets --slot-save-path itself: remove it from cmd",
    );
    return null;
  }
  return {
    dir: `${kvRoot(ctx.stateDir)}/${safeName(id)}`,
    maxBytes: m.keep_kv_max_mb * 1024 * 1024,
    timeoutMs: Math.round(m.keep_kv_timeout_s * 1000),
    hash: Bun.hash(JSON.stringify([words(template.cmd), template.env, contextSize(argv)])).toString(
      16,
    ),
    modelFile: modelPath(argv),
  };
}

/** A command's words (so a re-wrapped command is the same command); the text if it cannot split. */
function words(cmd: string): string[] | string {
  try {
    return splitCommand(cmd);
  } catch {
    return cmd;
  }
}

/** The folder that holds every `keep_kv` model's folder. */
export function kvRoot(stateDir: string): string {
  return `${stateDir.replace(/\/+$/, "")}/kv`;
}

/** A model id as one path segment: other characters become "_", with a hash when any did. */
export function safeName(id: string): string {
  const safe = id.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_");
  return safe === id ? id : `${safe}-${Bun.hash(id).toString(16).slice(0, 8)}`;
}

/** Models that passed schema validation, expanded; broken ones are left out. */
/** Fields qm itself decides from the request: a filter may not remove or force them. */
const OWN_FIELDS = new Set(["model", "stream"]);

function bodyParams(
  ctx: BuildContext,
  at: (...rest: (string | number)[]) => Path,
  strip: string[],
  set: Record<string, unknown>,
): BodyParams | null {
  strip.forEach((name, i) => {
    if (OWN_FIELDS.has(name)) {
      ctx.issues.at(at("strip_params", i), `"${name}" cannot be stripped: qm routes by it`);
    }
  });
  for (const name of Object.keys(set)) {
    if (OWN_FIELDS.has(name)) {
      ctx.issues.at(
        at("set_params", name),
        `"${name}" cannot be set: qm routes by it${name === "model" ? " (use use_model_name)" : ""}`,
      );
    }
  }
  if (strip.length === 0 && Object.keys(set).length === 0) return null;
  return { strip: [...strip], set: { ...set } };
}

/**
 * A model id or peer name that an HTTP header cannot carry (`X-QM-Model`, `X-QM-Peer`: see
 * ids.ts) is refused here, at its line and column.
 */
export function refusedName(
  ctx: BuildContext,
  path: Path,
  what: string,
  name: string,
  hint: string,
): boolean {
  const problem = headerProblem(name);
  if (problem === null) return false;
  ctx.issues.at(path, `${what} ${problem}; ${hint}`);
  return true;
}

export function buildModels(
  ctx: BuildContext,
  file: ConfigFile,
  ports: PortAllocator,
): Record<string, ModelConfig> {
  const models: Record<string, ModelConfig> = {};
  for (const id of fileOrder(ctx.map, "models", Object.keys(file.models))) {
    if (ctx.issues.within(["models", id])) continue;
    const hint = "name it in ASCII or Latin-1 and put this name in aliases (any character)";
    if (refusedName(ctx, ["models", id], `model id ${JSON.stringify(id)}`, id, hint)) continue;
    const model = buildModel(ctx, id, file.models[id]!, ports);
    if (model) models[id] = model;
  }
  return models;
}
