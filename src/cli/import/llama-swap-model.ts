/**
 * One llama-swap model (`models.<id>` of its config.yaml) as a `[models.<id>]` table. Every
 * setting either becomes qm's key or a comment saying qm has no equivalent.
 * Reference: llama-swap's config.example.yaml and docs/configuration.md.
 */
import { comment, tomlKey, tomlPath, tomlValue } from "./toml-out.ts";

export type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A value for a comment: JSON on one line, cut short. */
export function shown(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** `# llama-swap KEY = VALUE: WHY`: a setting kept as a comment. */
export function kept(key: string, value: unknown, why: string): string[] {
  return comment(`llama-swap ${key} = ${shown(value)}: ${why}`);
}

/** What the whole config says that a model inherits. */
export interface ModelDefaults {
  globalTtl: number | null;
  sendLoadingState: boolean | null;
  unloadTimeout: number | null;
  /** Macros expanded in place in every model (names qm does not take, and the model's own). */
  inline: Readonly<Record<string, string>>;
}

/** `${name}` → value for each of `macros`, again until nothing changes (values may nest). */
export function expandInline(text: string, macros: Readonly<Record<string, string>>): string {
  let out = text;
  for (let pass = 0; pass < 10; pass++) {
    const next = out.replace(/\$\{([A-Za-z0-9_-]+)\}/g, (all, name: string) =>
      Object.hasOwn(macros, name) ? macros[name]! : all,
    );
    if (next === out) break;
    out = next;
  }
  return out;
}

/** Fields qm decides itself: a filter may neither strip nor set them. */
const OWN_FIELDS = new Set(["model", "stream"]);

const MODEL_KEYS = new Set([
  "cmd",
  "cmdStop",
  "proxy",
  "checkEndpoint",
  "ttl",
  "aliases",
  "env",
  "concurrencyLimit",
  "useModelName",
  "filters",
  "unlisted",
  "sendLoadingState",
  "unloadTimeout",
  "macros",
  "name",
  "description",
  "metadata",
  "timeouts",
]);

const DEFAULT_PROXIES = new Set(["http://localhost:$" + "{PORT}", "http://127.0.0.1:$" + "{PORT}"]);

export interface ModelOut {
  lines: string[];
  /** Aliases written (so later models do not reuse them). */
  aliases: string[];
}

/**
 * The table for model `id`. `taken` holds every model id and the aliases written so far: an
 * alias already taken is left out, as qm refuses it.
 */
export function convertModel(
  id: string,
  m: Obj,
  defaults: ModelDefaults,
  taken: ReadonlySet<string>,
): ModelOut {
  const lines = ["", `[${tomlPath("models", id)}]`];
  const own: Record<string, string> = {};
  if (isObj(m.macros)) {
    for (const [k, v] of Object.entries(m.macros)) own[k] = String(v);
    lines.push(
      ...comment(
        `llama-swap macros of this model (${Object.keys(own).join(", ")}) are written out in place`,
      ),
    );
  }
  const inline = { ...defaults.inline, ...own };
  const text = (v: unknown) => expandInline(String(v), inline);
  const set = (key: string, v: unknown) => {
    const value = tomlValue(v);
    if (value !== null) lines.push(`${tomlKey(key)} = ${value}`);
  };

  set("cmd", text(m.cmd));
  if (typeof m.cmdStop === "string" && m.cmdStop.trim() !== "") set("cmd_stop", text(m.cmdStop));
  if (typeof m.proxy === "string" && !DEFAULT_PROXIES.has(m.proxy.trim()))
    set("proxy", text(m.proxy));
  if (typeof m.checkEndpoint === "string") set("check_endpoint", text(m.checkEndpoint));

  const ttl = typeof m.ttl === "number" && m.ttl >= 0 ? m.ttl : defaults.globalTtl;
  if (ttl !== null && ttl > 0) set("ttl_s", ttl);

  const aliases: string[] = [];
  const aliasList = Array.isArray(m.aliases) ? m.aliases : [];
  for (const a of aliasList) {
    const alias = typeof a === "string" ? a : isObj(a) && typeof a.id === "string" ? a.id : null;
    if (alias === null) {
      lines.push(...kept("alias", a, "not a name; left out"));
      continue;
    }
    if (taken.has(alias) || aliases.includes(alias)) {
      lines.push(...kept("alias", alias, "already a model id or another model's alias; left out"));
      continue;
    }
    aliases.push(alias);
    if (isObj(a) && (a.name !== undefined || a.unlisted !== undefined)) {
      lines.push(
        ...kept(`alias ${alias}`, a, "qm has no display name or listing setting for an alias"),
      );
    }
  }
  if (aliases.length > 0) set("aliases", aliases);

  if (Array.isArray(m.env)) {
    const env: Record<string, string> = {};
    for (const entry of m.env) {
      const eq = typeof entry === "string" ? entry.indexOf("=") : -1;
      if (eq > 0) env[(entry as string).slice(0, eq)] = text((entry as string).slice(eq + 1));
      else lines.push(...kept("env", entry, 'not "NAME=value"; left out'));
    }
    if (Object.keys(env).length > 0) set("env", env);
  }

  if (typeof m.concurrencyLimit === "number" && m.concurrencyLimit > 0) {
    set("concurrency_limit", m.concurrencyLimit);
    lines.push(...comment("llama-swap answered 429 past the limit; qm queues the excess instead"));
  }
  if (typeof m.useModelName === "string" && m.useModelName !== "") {
    set("use_model_name", text(m.useModelName));
  }
  if (m.unlisted === true) set("unlisted", true);
  const loading =
    typeof m.sendLoadingState === "boolean" ? m.sendLoadingState : defaults.sendLoadingState;
  // qm's default is on (SSE comment lines only, never a data frame): only "off" needs saying.
  if (loading === false) set("send_loading_state", false);
  const stop = typeof m.unloadTimeout === "number" ? m.unloadTimeout : defaults.unloadTimeout;
  if (stop !== null && stop > 0) set("stop_timeout_s", stop);

  if (isObj(m.filters)) lines.push(...filters(m.filters, set, text));
  if (isObj(m.timeouts)) {
    const header = m.timeouts.responseHeader;
    if (typeof header === "number" && header > 0) set("first_byte_timeout_s", header);
    const rest = Object.fromEntries(
      Object.entries(m.timeouts).filter(([k]) => k !== "responseHeader"),
    );
    if (Object.keys(rest).length > 0) {
      lines.push(
        ...kept(
          "timeouts",
          rest,
          "no equivalent (qm has first_byte_timeout_s and stall_timeout_s)",
        ),
      );
    }
  }
  for (const key of ["name", "description"] as const) {
    if (m[key] !== undefined)
      lines.push(...kept(key, m[key], "no equivalent (qm lists a model by its id)"));
  }
  if (m.metadata !== undefined) {
    lines.push(
      ...kept("metadata", m.metadata, "no equivalent (qm's /v1/models does not carry it)"),
    );
  }
  for (const [key, value] of Object.entries(m)) {
    if (!MODEL_KEYS.has(key))
      lines.push(...kept(key, value, "not known to this importer; not imported"));
  }
  return { lines, aliases };
}

/** `filters`: stripParams (a comma list) and setParams map over; setParamsByID has no equivalent. */
function filters(
  f: Obj,
  set: (key: string, v: unknown) => void,
  text: (v: unknown) => string,
): string[] {
  const lines: string[] = [];
  if (typeof f.stripParams === "string") {
    const names = text(f.stripParams)
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
    const strip = names.filter((n) => !OWN_FIELDS.has(n));
    if (strip.length > 0) set("strip_params", strip);
    if (strip.length < names.length)
      lines.push(...comment("model and stream are never stripped: left out"));
  }
  if (isObj(f.setParams)) {
    const params = Object.fromEntries(
      Object.entries(f.setParams).filter(([k]) => !OWN_FIELDS.has(k)),
    );
    if (Object.keys(params).length > 0) {
      const value = tomlValue(params);
      if (value === null)
        lines.push(...kept("filters.setParams", f.setParams, "holds a null; not imported"));
      else set("set_params", params);
    }
  }
  for (const [key, value] of Object.entries(f)) {
    if (key === "setParamsByID") {
      lines.push(
        ...kept(
          "filters.setParamsByID",
          value,
          "no equivalent (qm sets the same params for every name of a model; a second [models] entry with its own set_params comes closest)",
        ),
      );
    } else if (key !== "stripParams" && key !== "setParams") {
      lines.push(...kept(`filters.${key}`, value, "not known to this importer; not imported"));
    }
  }
  return lines;
}
