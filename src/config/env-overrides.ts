/**
 * `QM_<SECTION>__<KEY>=value` overrides scalar keys of [server], [scheduler], [resources]
 * and [router] (the double underscore separates section from key, because keys contain
 * single underscores). Applied to the parsed TOML before validation, so an override is
 * checked exactly like the file value it replaces; issues about it name the variable.
 */
import { Kind, type TSchema } from "@sinclair/typebox";
import { OVERRIDABLE_SECTIONS } from "./schema.ts";
import { didYouMean } from "./suggest.ts";
import { isTable } from "./validate.ts";

const VARIABLE = /^QM_([A-Za-z0-9]+)__([A-Za-z0-9_]+)$/;
const TRUE = ["true", "1", "yes", "on"];
const FALSE = ["false", "0", "no", "off"];

export interface EnvOverrides {
  /** `section.key` → the variable that set it. */
  applied: Map<string, string>;
  errors: { variable: string; message: string }[];
}

type Coerced = { value: unknown } | { error: string };

function coerce(schema: TSchema, text: string): Coerced {
  switch (schema[Kind]) {
    case "Number":
    case "Integer": {
      const n = Number(text.trim());
      return text.trim() === "" || !Number.isFinite(n)
        ? { error: `expected a number, got ${JSON.stringify(text)}` }
        : { value: n };
    }
    case "Boolean": {
      const lower = text.trim().toLowerCase();
      if (TRUE.includes(lower)) return { value: true };
      if (FALSE.includes(lower)) return { value: false };
      return { error: `expected true or false, got ${JSON.stringify(text)}` };
    }
    case "Array":
      // Comma-separated; blanks dropped so `QM_SERVER__API_KEYS=` means "no keys".
      return {
        value: text
          .split(",")
          .map((s) => s.trim())
          .filter((s) => s !== ""),
      };
    case "Union": {
      // `vram_budget_gb = "auto"` or a number: a literal as written, else the first member
      // the text reads as.
      const members = schema.anyOf as TSchema[];
      const literal = members.find((m) => m[Kind] === "Literal" && m.const === text.trim());
      if (literal) return { value: literal.const };
      let first: Coerced | null = null;
      for (const m of members.filter((m) => m[Kind] !== "Literal")) {
        const c = coerce(m, text);
        if ("value" in c) return c;
        first ??= c;
      }
      const names = members
        .filter((m) => m[Kind] === "Literal")
        .map((m) => JSON.stringify(m.const));
      return first && names.length > 0
        ? { error: `${first.error.replace(/^expected /, `expected ${names.join(", ")} or `)}` }
        : (first ?? { value: text });
    }
    default:
      return { value: text };
  }
}

export function applyEnvOverrides(
  raw: Record<string, unknown>,
  env: Record<string, string | undefined>,
): EnvOverrides {
  const result: EnvOverrides = { applied: new Map(), errors: [] };
  for (const variable of Object.keys(env).sort()) {
    const text = env[variable];
    const match = VARIABLE.exec(variable);
    if (text === undefined || !match) continue;
    const section = match[1]!.toLowerCase();
    const key = match[2]!.toLowerCase();
    // Other sections (models, peers…) are not overridable; QM_* names there belong to
    // someone else, so they are ignored rather than rejected.
    if (!Object.hasOwn(OVERRIDABLE_SECTIONS, section)) continue;
    const sectionSchema = OVERRIDABLE_SECTIONS[section as keyof typeof OVERRIDABLE_SECTIONS];
    const properties: Record<string, TSchema> = sectionSchema.properties;
    const keySchema = Object.hasOwn(properties, key) ? properties[key] : undefined;
    if (!keySchema) {
      const prefix = `QM_${section.toUpperCase()}__`;
      const hint = didYouMean(key, Object.keys(properties), (k) => prefix + k.toUpperCase());
      result.errors.push({ variable, message: `unknown setting ${section}.${key}${hint}` });
      continue;
    }
    const coerced = coerce(keySchema, text);
    if ("error" in coerced) {
      result.errors.push({ variable, message: `${coerced.error} (for ${section}.${key})` });
      continue;
    }
    raw[section] ??= {};
    const table = raw[section];
    if (!isTable(table)) continue; // the file's own type error is reported by validation
    table[key] = coerced.value;
    result.applied.set(`${section}.${key}`, variable);
  }
  return result;
}
