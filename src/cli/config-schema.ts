/**
 * `qm config schema`: the JSON Schema of `quartermaster.toml` as it is written, for editors
 * (taplo / Even Better TOML read it through a `#:schema` line) and other tools. It is the
 * loader's own typebox schema (TypeBox schemas are JSON Schema) with three changes that make
 * it describe the file rather than the loaded value: keys that have a default are not
 * `required` (the loader fills them in), literal unions become `enum`, and every section and
 * key carries its `description` from config-docs.ts. Taplo supports JSON Schema Draft 4, so
 * only Draft 4 keywords carry meaning (`examples` is an annotation validators ignore).
 */
import { ConfigFileSchema } from "../config/schema.ts";
import { CONFIG_ABOUT, CONFIG_DOCS, CONFIG_TITLE, MACROS_ABOUT } from "./config-docs.ts";

export type Json = Record<string, unknown>;

export const JSON_SCHEMA_DRAFT = "http://json-schema.org/draft-04/schema#";

const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The schema of the file as written: defaults optional, string literal unions as `enum`. */
function asWritten(node: Json): Json {
  const out: Json = { ...node };
  const options = out.anyOf;
  if (Array.isArray(options) && options.every((o) => isObject(o) && typeof o.const === "string")) {
    delete out.anyOf;
    out.type = "string";
    out.enum = options.map((o) => (o as Json).const);
  } else if (Array.isArray(options)) {
    out.anyOf = options.map((o) => asWritten(o as Json));
  }
  // `const` is Draft 6; a one-value `enum` says the same in Draft 4.
  if ("const" in out) {
    out.enum = [out.const];
    delete out.const;
  }
  for (const key of ["properties", "patternProperties"]) {
    if (!isObject(out[key])) continue;
    const entries = Object.entries(out[key] as Record<string, Json>);
    out[key] = Object.fromEntries(entries.map(([k, v]) => [k, asWritten(v)]));
  }
  if (isObject(out.items)) out.items = asWritten(out.items);
  if (isObject(out.properties)) {
    const props = out.properties as Record<string, Json>;
    const required = Object.keys(props).filter((k) => !("default" in props[k]!));
    if (required.length > 0) out.required = required;
    else delete out.required;
  }
  return out;
}

/** `description` first, where a reader looks for it. */
function described(node: Json, description: string, example?: unknown): Json {
  const out: Json = { description, ...node };
  if (example !== undefined) out.examples = [example];
  return out;
}

/** The one table schema of a `[section]` or of each `[section.NAME]` (a record). */
function tableOf(section: Json): { table: Json; wrap: (table: Json) => Json } {
  const pattern = section.patternProperties;
  if (!isObject(pattern)) return { table: section, wrap: (table) => table };
  const [key, table] = Object.entries(pattern as Record<string, Json>)[0]!;
  return { table, wrap: (t) => ({ ...section, patternProperties: { [key]: t } }) };
}

export function configJsonSchema(): Json {
  // JSON drops typebox's symbol keys (Kind, Hint): what is left is plain JSON Schema.
  const root = asWritten(JSON.parse(JSON.stringify(ConfigFileSchema)) as Json);
  const sections = { ...(root.properties as Record<string, Json>) };
  for (const [name, doc] of Object.entries(CONFIG_DOCS)) {
    const section = sections[name];
    if (!section) continue;
    const { table, wrap } = tableOf(section);
    const keys = { ...(table.properties as Record<string, Json>) };
    for (const [key, k] of Object.entries(doc.keys)) {
      if (keys[key]) keys[key] = described(keys[key], k.meaning, k.example);
    }
    const filled = { ...table, properties: keys };
    // A record (`[models.ID]`) describes each of its tables too: that is what a hover shows.
    const inner = table === section ? filled : described(filled, doc.about);
    sections[name] = described(wrap(inner), doc.about);
  }
  if (sections.macros) sections.macros = described(sections.macros, MACROS_ABOUT);
  return {
    $schema: JSON_SCHEMA_DRAFT,
    title: CONFIG_TITLE,
    description: CONFIG_ABOUT,
    ...root,
    properties: sections,
  };
}

const LINE_WIDTH = 100;

/** A value printed on one line, or null when it must span several (objects always do). */
function oneLine(value: unknown): string | null {
  if (Array.isArray(value)) {
    const parts = value.map(oneLine);
    return parts.every((p) => p !== null) ? `[${parts.join(", ")}]` : null;
  }
  if (isObject(value)) return Object.keys(value).length === 0 ? "{}" : null;
  return JSON.stringify(value);
}

/**
 * JSON laid out the way the repository's formatter (biome) lays it out, so that the shipped
 * docs/quartermaster.schema.json is byte for byte this output: objects one key per line,
 * arrays on one line when they fit in 100 columns.
 */
export function formatJson(value: unknown, indent = "", lead = "", trail = ""): string {
  const flat = oneLine(value);
  if (flat !== null && (indent + lead + flat + trail).length <= LINE_WIDTH) return flat;
  // A long string or number has no place to break.
  if (!Array.isArray(value) && !isObject(value)) return JSON.stringify(value);
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    const items = value.map(
      (v, i) => inner + formatJson(v, inner, "", i < value.length - 1 ? "," : ""),
    );
    return `[\n${items.join(",\n")}\n${indent}]`;
  }
  const entries = Object.entries(value as Json);
  const lines = entries.map(([k, v], i) => {
    const key = `${JSON.stringify(k)}: `;
    return inner + key + formatJson(v, inner, key, i < entries.length - 1 ? "," : "");
  });
  return `{\n${lines.join(",\n")}\n${indent}}`;
}

/** What `qm config schema` prints. */
export function configSchemaText(): string {
  return `${formatJson(configJsonSchema())}\n`;
}
