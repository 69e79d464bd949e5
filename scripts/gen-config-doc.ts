/**
 * Regenerates what the docs say about the config file from the schema itself:
 * - the key tables of docs/config.md, each between `<!-- keys SECTION -->` and `<!-- /keys -->`
 *   (keys and defaults from src/config/schema.ts, meanings and examples from
 *   src/cli/config-docs.ts); the prose around them is written by hand;
 * - docs/quartermaster.schema.json, which is what `qm config schema` prints.
 *
 * Run `bun scripts/gen-config-doc.ts` after changing either source; tests/config/docs.test.ts
 * fails while a generated part is stale.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { Kind, type TObject, type TSchema } from "@sinclair/typebox";
import { CONFIG_DOCS, type DocumentedSection } from "../src/cli/config-docs.ts";
import { configSchemaText } from "../src/cli/config-schema.ts";
import { ConfigFileSchema } from "../src/config/schema.ts";

const ROOT = resolve(import.meta.dir, "..");
export const CONFIG_DOC = resolve(ROOT, "docs/config.md");
export const SCHEMA_FILE = resolve(ROOT, "docs/quartermaster.schema.json");

/** The table schema of `[section]`, or of each `[section.NAME]` when the section is a record. */
export function sectionTable(section: DocumentedSection): TObject {
  const schema = ConfigFileSchema.properties[section] as TSchema;
  if (schema[Kind] === "Record") return Object.values(schema.patternProperties)[0] as TObject;
  return schema as TObject;
}

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

/** A value as it is written in TOML (inline: arrays and inline tables). */
export function tomlValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(tomlValue).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value);
    if (entries.length === 0) return "{}";
    const pairs = entries.map(
      ([k, v]) => `${BARE_KEY.test(k) ? k : JSON.stringify(k)} = ${tomlValue(v)}`,
    );
    return `{ ${pairs.join(", ")} }`;
  }
  // JSON's string escapes are TOML basic-string escapes.
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/** Markdown table cells cannot hold a bare `|`. */
const cell = (text: string) => text.replaceAll("|", "\\|");

export function keyTable(section: DocumentedSection): string {
  const doc = CONFIG_DOCS[section];
  const rows = Object.entries(sectionTable(section).properties).map(([key, schema]) => {
    const k = doc.keys[key];
    if (!k) throw new Error(`${section}.${key} has no meaning in src/cli/config-docs.ts`);
    const fallback = "default" in schema ? `\`${tomlValue(schema.default)}\`` : "(required)";
    const example = k.example === undefined ? "" : ` E.g. \`${key} = ${tomlValue(k.example)}\`.`;
    return `| \`${key}\` | ${cell(fallback)} | ${cell(k.meaning + example)} |`;
  });
  return ["| key | default | meaning |", "|---|---|---|", ...rows].join("\n");
}

const MARKED = /<!-- keys ([a-z_]+) -->\n[\s\S]*?<!-- \/keys -->/g;

/** docs/config.md with every marked table regenerated; each documented section must be marked. */
export function fillTables(doc: string): string {
  const seen = new Set<string>();
  const out = doc.replace(MARKED, (_, name: string) => {
    if (!Object.hasOwn(CONFIG_DOCS, name)) throw new Error(`docs/config.md: no section "${name}"`);
    seen.add(name);
    return `<!-- keys ${name} -->\n${keyTable(name as DocumentedSection)}\n<!-- /keys -->`;
  });
  const missing = Object.keys(CONFIG_DOCS).filter((name) => !seen.has(name));
  if (missing.length > 0) throw new Error(`docs/config.md has no table for ${missing.join(", ")}`);
  return out;
}

if (import.meta.main) {
  writeFileSync(CONFIG_DOC, fillTables(readFileSync(CONFIG_DOC, "utf8")));
  writeFileSync(SCHEMA_FILE, configSchemaText());
  process.stdout.write("wrote docs/config.md (key tables) and docs/quartermaster.schema.json\n");
}
