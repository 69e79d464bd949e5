/**
 * A llama-swap config.yaml (its parsed value) → the quartermaster.toml that does the same.
 * Settings map key by key; one qm has no equivalent for is written as a comment saying so, and
 * a reference qm would refuse (a group member or preload that names no model) is left out with
 * a comment, so the output passes `qm config check` as written.
 * Reference: llama-swap's config.example.yaml and docs/configuration.md.
 */
import { DEFAULT_GROUP } from "../../config/types.ts";
import { convertModel, expandInline, isObj, kept, type Obj } from "./llama-swap-model.ts";
import { expandSet } from "./matrix-dsl.ts";
import { comment, tomlKey, tomlPath, tomlValue } from "./toml-out.ts";

/** The config cannot be imported at all (not a mapping, no models). */
export class ImportError extends Error {}

const TOP_KEYS = new Set([
  "healthCheckTimeout",
  "logLevel",
  "startPort",
  "apiKeys",
  "globalTTL",
  "sendLoadingState",
  "unloadTimeout",
  "macros",
  "models",
  "groups",
  "matrix",
  "hooks",
  "peers",
  "metricsMaxInMemory",
  "captureBuffer",
]);

/** Top-level settings qm has nothing for, and why. */
const NO_EQUIVALENT: Record<string, string> = {
  logTimeFormat: "no equivalent (qm's log lines carry ISO 8601 UTC times)",
  logToStdout: "no equivalent (qm logs to stderr; a model's output: qm logs MODEL, GET /logs)",
  includeAliasesInList: "no equivalent (qm's /v1/models lists model ids)",
  profiles: "no equivalent (qm has no runtime model-id switching)",
  performance: "no equivalent (qm's GPU probe is resources.gpu_probe_interval_ms)",
  ui: "no equivalent",
  store: "no equivalent (qm keeps its activity log in memory)",
};

const MACRO_NAME = /^[A-Za-z0-9_-]+$/;
const QM_BUILTINS = new Set(["PORT", "MODEL_ID", "PID", "GPU_IDS", "QM_BIN"]);

export function importLlamaSwap(doc: unknown, source: string): string {
  if (!isObj(doc)) throw new ImportError(`${source}: not a llama-swap config (expected a mapping)`);
  if (!isObj(doc.models) || Object.keys(doc.models).length === 0) {
    throw new ImportError(
      `${source}: no models to import (llama-swap's config has a "models" mapping)`,
    );
  }
  const models = doc.models;
  // Models qm can run: those with a cmd. Groups, sets and preload may name only these.
  const ids = Object.keys(models).filter((id) => {
    const m = models[id];
    return isObj(m) && typeof m.cmd === "string" && m.cmd.trim() !== "";
  });
  const out: string[] = [
    ...comment(
      `quartermaster.toml imported from llama-swap's ${source} by 'qm import llama-swap'.\n` +
        "Settings qm has no equivalent for are kept as comments. Check it with 'qm config check -c FILE'.",
    ),
    "",
    "[server]",
    ...comment(
      'llama-swap listened where its --listen flag said (default ":8080", every address); qm\n' +
        'listens on 127.0.0.1:8080 unless listen = ["HOST:PORT"] says otherwise.',
    ),
  ];
  const set = (key: string, v: unknown) => {
    const value = tomlValue(v);
    if (value !== null) out.push(`${tomlKey(key)} = ${value}`);
  };
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);

  const health = num(doc.healthCheckTimeout);
  if (health !== null) {
    set("health_check_timeout_s", Math.max(15, health));
    if (health < 15)
      out.push(...comment(`llama-swap raised healthCheckTimeout = ${health} to its minimum, 15`));
  }
  if (
    typeof doc.logLevel === "string" &&
    ["debug", "info", "warn", "error"].includes(doc.logLevel)
  ) {
    set("log_level", doc.logLevel);
  }
  const startPort = num(doc.startPort);
  if (startPort !== null && startPort >= 1 && startPort <= 65535) set("start_port", startPort);
  if (Array.isArray(doc.apiKeys)) out.push(...apiKeys(doc.apiKeys));

  out.push(...preload(doc.hooks, ids));
  for (const [key, why] of Object.entries(NO_EQUIVALENT)) {
    if (doc[key] !== undefined) out.push(...kept(key, doc[key], why));
  }
  for (const [key, value] of Object.entries(doc)) {
    if (!TOP_KEYS.has(key) && !(key in NO_EQUIVALENT)) {
      out.push(...kept(key, value, "not known to this importer; not imported"));
    }
  }
  out.push(...activity(doc));

  // Macros qm takes go to [macros]; others are written out in place in each model.
  const inline: Record<string, string> = {};
  const macros: [string, unknown][] = [];
  if (isObj(doc.macros)) {
    for (const [name, value] of Object.entries(doc.macros)) {
      if (MACRO_NAME.test(name) && !QM_BUILTINS.has(name)) macros.push([name, value]);
      else inline[name] = String(value);
    }
  }
  if (macros.length > 0) {
    out.push("", "[macros]");
    for (const [name, value] of macros) {
      const v = typeof value === "string" ? expandInline(value, inline) : value;
      if (tomlValue(v) === null)
        out.push(...kept(`macros.${name}`, value, "not a string, number or boolean"));
      else set(name, v);
    }
  }
  if (Object.keys(inline).length > 0) {
    out.push(
      ...comment(
        `macros ${Object.keys(inline).join(", ")} are not names qm takes: written out in place`,
      ),
    );
  }

  const defaults = {
    globalTtl: num(doc.globalTTL),
    sendLoadingState: typeof doc.sendLoadingState === "boolean" ? doc.sendLoadingState : null,
    unloadTimeout: num(doc.unloadTimeout),
    inline,
  };
  const taken = new Set(ids);
  for (const [id, m] of Object.entries(models)) {
    if (!ids.includes(id)) {
      out.push("", ...kept(`models.${id}`, m, "has no cmd; not imported"));
      continue;
    }
    const model = convertModel(id, m as Obj, defaults, taken);
    for (const a of model.aliases) taken.add(a);
    out.push(...model.lines);
  }
  out.push(...groups(doc.groups, ids));
  out.push(...matrix(doc.matrix, ids));
  out.push(...peers(doc.peers));
  return `${out.join("\n")}\n`;
}

/**
 * Literal keys go to api_keys. qm expands no macros there, so a key llama-swap read from the
 * environment (`${env.NAME}`) cannot be written as one: qm reads `QM_SERVER__API_KEYS`
 * (comma-separated) from its environment instead, which replaces the list.
 */
function apiKeys(list: unknown[]): string[] {
  const keys = list.filter((k): k is string => typeof k === "string" && k !== "");
  const literal = keys.filter((k) => !k.includes("$" + "{"));
  const fromEnv = keys.filter((k) => k.includes("$" + "{"));
  const lines = literal.length > 0 ? [`api_keys = ${tomlValue(literal)}`] : [];
  if (fromEnv.length > 0) {
    lines.push(
      ...kept(
        "apiKeys",
        fromEnv,
        'qm\'s api_keys take no macros; give qm QM_SERVER__API_KEYS="KEY,KEY" in its environment instead (it replaces api_keys, so list every key there)',
      ),
    );
  }
  return lines;
}

function preload(hooks: unknown, ids: readonly string[]): string[] {
  if (hooks === undefined) return [];
  const list = isObj(hooks) && isObj(hooks.on_startup) ? hooks.on_startup.preload : undefined;
  const lines: string[] = [];
  if (Array.isArray(list)) {
    const known = list.filter((id): id is string => typeof id === "string" && ids.includes(id));
    if (known.length > 0) lines.push(`preload = ${tomlValue(known)}`);
    const unknown = list.filter((id) => !known.includes(id as string));
    if (unknown.length > 0)
      lines.push(...kept("hooks.on_startup.preload", unknown, "names no model; left out"));
  }
  const rest = isObj(hooks)
    ? Object.entries(hooks).filter(
        ([k, v]) =>
          !(k === "on_startup" && isObj(v) && Object.keys(v).every((x) => x === "preload")),
      )
    : [["hooks", hooks] as const];
  for (const [k, v] of rest)
    lines.push(...kept(`hooks.${k}`, v, "no equivalent (qm's hook is preload)"));
  return lines;
}

/** `metricsMaxInMemory` (requests kept) and `captureBuffer` (MB of captured bodies). */
function activity(doc: Obj): string[] {
  const lines: string[] = [];
  const size = doc.metricsMaxInMemory;
  if (typeof size === "number" && Number.isInteger(size) && size >= 0) lines.push(`size = ${size}`);
  const capture = doc.captureBuffer;
  if (typeof capture === "number" && capture >= 0) {
    lines.push(`capture = ${capture > 0}`);
    if (capture > 0) lines.push(`capture_total_mb = ${capture}`);
  }
  return lines.length > 0 ? ["", "[activity]", ...lines] : [];
}

function groups(value: unknown, ids: readonly string[]): string[] {
  if (value === undefined) return [];
  if (!isObj(value)) return ["", ...kept("groups", value, "not a mapping; not imported")];
  const lines: string[] = [];
  const owner = new Map<string, string>();
  for (const [name, g] of Object.entries(value)) {
    if (!isObj(g)) {
      lines.push("", ...kept(`groups.${name}`, g, "not a mapping; not imported"));
      continue;
    }
    const id = name === DEFAULT_GROUP ? `${name}-imported` : name;
    lines.push("", `[${tomlPath("groups", id)}]`);
    const members: string[] = [];
    for (const member of Array.isArray(g.members) ? g.members : []) {
      if (typeof member !== "string" || !ids.includes(member)) {
        lines.push(...kept("member", member, "names no imported model; left out"));
      } else if (owner.has(member)) {
        lines.push(...kept("member", member, `already in group "${owner.get(member)}"; left out`));
      } else if (!members.includes(member)) {
        owner.set(member, id);
        members.push(member);
      }
    }
    lines.push(`members = ${tomlValue(members)}`);
    // llama-swap's defaults, written out: qm's are the same, but the file should say it.
    lines.push(
      `swap = ${g.swap !== false}`,
      `exclusive = ${g.exclusive !== false}`,
      `persistent = ${g.persistent === true}`,
    );
    for (const [k, v] of Object.entries(g)) {
      if (!["members", "swap", "exclusive", "persistent"].includes(k)) {
        lines.push(...kept(`groups.${name}.${k}`, v, "not known to this importer; not imported"));
      }
    }
  }
  return lines;
}

/** The matrix: `vars` name models, `sets` are expressions over them, `evict_costs` per var. */
function matrix(value: unknown, ids: readonly string[]): string[] {
  if (value === undefined) return [];
  if (!isObj(value)) return ["", ...kept("matrix", value, "not a mapping; not imported")];
  const vars = isObj(value.vars) ? value.vars : {};
  const exprs = isObj(value.sets)
    ? Object.fromEntries(Object.entries(value.sets).map(([k, v]) => [k, String(v)]))
    : {};
  const model = (v: string) =>
    typeof vars[v] === "string" && ids.includes(vars[v] as string) ? (vars[v] as string) : null;
  const notes: string[] = [];
  const sets: string[][] = [];
  for (const name of Object.keys(exprs)) {
    let expanded: string[][];
    try {
      expanded = expandSet(name, exprs);
    } catch (err) {
      notes.push(
        ...kept(`matrix.sets.${name}`, exprs[name], `${(err as Error).message}; left out`),
      );
      continue;
    }
    for (const set of expanded) {
      const members = set.map(model);
      if (members.some((m) => m === null)) {
        notes.push(
          ...kept(`matrix.sets.${name}`, set, "names a var that is no imported model; left out"),
        );
      } else sets.push(members as string[]);
    }
  }
  const cost: Record<string, number> = {};
  if (isObj(value.evict_costs)) {
    for (const [v, c] of Object.entries(value.evict_costs)) {
      const m = model(v);
      if (m !== null && typeof c === "number" && c >= 0) cost[m] = c;
      else notes.push(...kept(`matrix.evict_costs.${v}`, c, "names no imported model; left out"));
    }
  }
  for (const [k, v] of Object.entries(value)) {
    if (!["vars", "sets", "evict_costs"].includes(k))
      notes.push(...kept(`matrix.${k}`, v, "not known to this importer; not imported"));
  }
  return [
    "",
    "[router]",
    'policy = "matrix"',
    "",
    "[matrix]",
    ...comment(
      "llama-swap's set expressions, expanded: each list is one set of models that may run together",
    ),
    `sets = ${tomlValue(sets)}`,
    `evict_cost = ${tomlValue(cost)}`,
    ...notes,
  ];
}

function peers(value: unknown): string[] {
  if (value === undefined) return [];
  if (!isObj(value)) return ["", ...kept("peers", value, "not a mapping; not imported")];
  const lines: string[] = [];
  for (const [name, p] of Object.entries(value)) {
    if (!isObj(p) || typeof p.proxy !== "string") {
      lines.push("", ...kept(`peers.${name}`, p, "has no proxy URL; not imported"));
      continue;
    }
    const models = Array.isArray(p.models)
      ? p.models.filter((m): m is string => typeof m === "string")
      : [];
    if (models.length === 0) {
      lines.push(
        "",
        ...kept(`peers.${name}`, p, "lists no models, which qm needs to route to it; not imported"),
      );
      continue;
    }
    lines.push(
      "",
      `[${tomlPath("peers", name)}]`,
      `url = ${tomlValue(p.proxy)}`,
      'kind = "openai"',
    );
    if (typeof p.apiKey === "string" && p.apiKey !== "")
      lines.push(`api_key = ${tomlValue(p.apiKey)}`);
    lines.push(`models = ${tomlValue(models)}`);
    for (const [k, v] of Object.entries(p)) {
      if (k === "filters")
        lines.push(
          ...kept(
            `peers.${name}.filters`,
            v,
            "no equivalent for peers (qm's strip_params/set_params are per local model)",
          ),
        );
      else if (k === "timeouts")
        lines.push(
          ...kept(
            `peers.${name}.timeouts`,
            v,
            "no equivalent (qm's peer timeout_s bounds connect and first byte; default 30)",
          ),
        );
      else if (!["proxy", "apiKey", "models"].includes(k))
        lines.push(...kept(`peers.${name}.${k}`, v, "not known to this importer; not imported"));
    }
  }
  return lines;
}
