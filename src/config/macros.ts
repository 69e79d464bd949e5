/**
 * `${...}` macros. Global ones (`${env.NAME}`, `${QM_BIN}`, user macros from `[macros]`)
 * are resolved once; per-model ones (`${PORT}`, `${MODEL_ID}`, `${PID}`, `${GPU_IDS}`) stay as markers
 * in the resolved text until a model uses them, so `[macros] llama = "llama-server
 * --port ${PORT}"` works the way it does in llama-swap. Text inserted from the
 * environment or a macro is never rescanned: a `${` inside an env value is literal.
 */
import { didYouMean } from "./suggest.ts";

export type Deferred = "PORT" | "MODEL_ID" | "PID" | "GPU_IDS";
/** Expanded text: literal runs and markers for macros only a model can fill. */
export type Segment = string | { macro: Deferred };

type Lookup = (name: string) => Segment[] | { error: string } | "silent";

export interface Expansion {
  segments: Segment[];
  errors: string[];
  /** True when some part could not be expanded (errors, or a macro already reported). */
  failed: boolean;
}

const DEFERRED: readonly string[] = ["PORT", "MODEL_ID", "PID", "GPU_IDS"];
const BUILTINS = ["PORT", "MODEL_ID", "PID", "GPU_IDS", "QM_BIN"];

/** `${GPU_IDS}` as it stays in a model's resolved text until a start fills it. */
export const GPU_IDS_MARKER = "$" + "{GPU_IDS}";

/** Fills `${GPU_IDS}` with the cards a start was placed on (comma list; "0" without one). */
export function fillGpuIds(text: string, gpus: readonly number[] | undefined): string {
  return text.includes(GPU_IDS_MARKER)
    ? text.replaceAll(GPU_IDS_MARKER, gpus && gpus.length > 0 ? gpus.join(",") : "0")
    : text;
}
const MACRO_NAME = /^[A-Za-z0-9_-]+$/;

export function substitute(text: string, lookup: Lookup): Expansion {
  const out: Expansion = { segments: [], errors: [], failed: false };
  let i = 0;
  for (;;) {
    const open = text.indexOf("${", i);
    if (open === -1) break;
    const close = text.indexOf("}", open + 2);
    if (close === -1) {
      out.errors.push(`unterminated "\${" in ${JSON.stringify(text)}`);
      break;
    }
    out.segments.push(text.slice(i, open));
    const found = lookup(text.slice(open + 2, close));
    if (found === "silent") out.failed = true;
    else if ("error" in found) out.errors.push(found.error);
    else out.segments.push(...found);
    i = close + 1;
  }
  out.segments.push(text.slice(i));
  out.failed ||= out.errors.length > 0;
  return out;
}

export function usesMacro(segments: readonly Segment[], macro: Deferred): boolean {
  return segments.some((s) => typeof s !== "string" && s.macro === macro);
}

/** Joins segments; `fill` supplies deferred macros (default: leave them as written). */
export function render(segments: readonly Segment[], fill?: (m: Deferred) => string): string {
  return segments
    .map((s) => (typeof s === "string" ? s : fill ? fill(s.macro) : `\${${s.macro}}`))
    .join("");
}

export interface MacroScope {
  env: Record<string, string | undefined>;
  qmBin: string;
  /** Resolved `[macros]`; broken ones are absent (their error is already reported). */
  resolved: ReadonlyMap<string, Segment[]>;
  defined: ReadonlySet<string>;
}

function lookupGlobal(name: string, scope: MacroScope): Segment[] | { error: string } | undefined {
  if (name.startsWith("env.")) {
    const value = scope.env[name.slice(4)];
    // typeof, not `=== undefined`: a plain-object env would otherwise yield `toString`.
    return typeof value !== "string"
      ? { error: `environment variable ${name.slice(4)} is not set (used as \${${name}})` }
      : [value];
  }
  if (name === "QM_BIN") return [scope.qmBin];
  return undefined;
}

function unknown(name: string, scope: MacroScope): { error: string } {
  const hint = didYouMean(name, [...BUILTINS, ...scope.defined], (s) => `\${${s}}`);
  return { error: `unknown macro \${${name}}${hint}` };
}

/**
 * Lookup for one string of a model or peer: `allowed` lists the deferred macros the field
 * may use (a model's fields: PORT and MODEL_ID, `cmd_stop` also PID; a peer's: none).
 */
export function fieldLookup(scope: MacroScope, allowed: readonly Deferred[]): Lookup {
  const refuse = (m: Deferred, via = "") => {
    const where = m === "PID" && allowed.length > 0 ? "cmd_stop" : "model settings";
    return { error: `\${${m}} is only available in ${where}${via}` };
  };
  return (name) => {
    const global = lookupGlobal(name, scope);
    if (global) return global;
    if (DEFERRED.includes(name)) {
      const m = name as Deferred;
      return allowed.includes(m) ? [{ macro: m }] : refuse(m);
    }
    if (scope.defined.has(name)) {
      const segments = scope.resolved.get(name);
      if (!segments) return "silent";
      for (const s of segments) {
        if (typeof s !== "string" && !allowed.includes(s.macro))
          return refuse(s.macro, ` (used by macro ${name})`);
      }
      return segments;
    }
    return unknown(name, scope);
  };
}

/**
 * Resolves every `[macros]` entry (dependencies first, cycles detected) and reports each
 * problem at the macro whose own text has it; macros that depend on a broken one fail
 * quietly instead of repeating the error.
 */
export function resolveMacros(
  macros: { texts: Readonly<Record<string, string>>; invalid: readonly string[] },
  base: Omit<MacroScope, "resolved" | "defined">,
  report: (name: string, message: string) => void,
): MacroScope {
  const raw = macros.texts;
  const resolved = new Map<string, Segment[]>();
  const defined = new Set(Object.keys(raw));
  const scope: MacroScope = { ...base, resolved, defined };
  const state = new Map<string, "visiting" | "done" | "broken">();
  const stack: string[] = [];

  const resolve = (name: string): Segment[] | "silent" => {
    const seen = state.get(name);
    if (seen === "done") return resolved.get(name)!;
    if (seen === "broken") return "silent";
    if (seen === "visiting") {
      const cycle = [...stack.slice(stack.indexOf(name)), name];
      report(name, `macro cycle: ${cycle.join(" -> ")}`);
      for (const member of cycle) state.set(member, "broken");
      return "silent";
    }
    state.set(name, "visiting");
    stack.push(name);
    const result = substitute(raw[name]!, (ref) => {
      const global = lookupGlobal(ref, scope);
      if (global) return global;
      if (DEFERRED.includes(ref)) return [{ macro: ref as Deferred }];
      return defined.has(ref) ? resolve(ref) : unknown(ref, scope);
    });
    stack.pop();
    for (const error of result.errors) report(name, error);
    if (result.failed || state.get(name) === "broken") {
      state.set(name, "broken");
      return "silent";
    }
    state.set(name, "done");
    resolved.set(name, result.segments);
    return result.segments;
  };

  for (const name of macros.invalid) state.set(name, "broken");
  for (const name of defined) {
    if (state.has(name)) continue;
    if (!MACRO_NAME.test(name) || BUILTINS.includes(name)) {
      report(name, `"${name}" cannot be a macro name (reserved or not a bare key)`);
      state.set(name, "broken");
    }
  }
  for (const name of defined) resolve(name);
  return scope;
}
