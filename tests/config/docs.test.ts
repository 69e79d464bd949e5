/**
 * The configuration reference cannot drift from the schema: docs/config.md's key tables and
 * docs/quartermaster.schema.json are what `bun scripts/gen-config-doc.ts` makes of
 * src/config/schema.ts now, and — read back independently of the generator — the doc lists
 * exactly the keys the schema accepts, with the schema's defaults.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parse } from "smol-toml";
import { fillTables, sectionTable } from "../../scripts/gen-config-doc.ts";
import { CONFIG_DOCS, type DocumentedSection } from "../../src/cli/config-docs.ts";
import { configSchemaText } from "../../src/cli/config-schema.ts";
import { ConfigFileSchema } from "../../src/config/schema.ts";
import { ANNOTATIONS, VALIDATION } from "./json-schema.ts";

const ROOT = resolve(import.meta.dir, "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const doc = read("docs/config.md");
const SECTIONS = Object.keys(CONFIG_DOCS) as DocumentedSection[];

/** What a default cell says, read as TOML: `["a"]` → ["a"]; "(required)" → undefined. */
function defaultOf(cellText: string): unknown {
  if (cellText === "(required)") return undefined;
  const code = /^`(.*)`$/.exec(cellText);
  if (!code) throw new Error(`default cell is neither code nor "(required)": ${cellText}`);
  return (parse(`v = ${code[1]!.replaceAll("\\|", "|")}`) as { v: unknown }).v;
}

/** Every `## \`[…]\`` section of the doc with the key table under it. */
function documentedTables(): Map<string, Map<string, unknown>> {
  const tables = new Map<string, Map<string, unknown>>();
  for (const part of doc.split(/^## /m).slice(1)) {
    const heading = /^`\[([^\]]+)\]`/.exec(part)?.[1];
    if (!heading) continue;
    const rows = new Map<string, unknown>();
    for (const m of part.matchAll(/^\| `([a-z][a-z0-9_]*)` \| (.+?) \| .+ \|$/gm)) {
      rows.set(m[1]!, defaultOf(m[2]!));
    }
    tables.set(heading, rows);
  }
  return tables;
}

describe("docs/config.md", () => {
  test("its key tables are the ones the schema generates (run bun scripts/gen-config-doc.ts)", () => {
    expect(fillTables(doc)).toBe(doc);
  });

  test("every key the schema accepts is in its section's table, with the schema's default", () => {
    const tables = documentedTables();
    for (const section of SECTIONS) {
      const heading = CONFIG_DOCS[section].heading.slice(1, -1);
      const rows = tables.get(heading);
      expect({ heading, documented: rows !== undefined }).toEqual({ heading, documented: true });
      const expected = Object.entries(sectionTable(section).properties).map(
        ([k, s]): [string, unknown] => [k, s.default],
      );
      expect({ heading, keys: [...rows!.entries()] }).toEqual({ heading, keys: expected });
    }
  });

  test("it has a table for no section the schema lacks; [macros] is prose", () => {
    const headings = [...documentedTables()].filter(([, rows]) => rows.size > 0).map(([h]) => h);
    expect(headings).toEqual(SECTIONS.map((s) => CONFIG_DOCS[s].heading.slice(1, -1)));
    const sections = Object.keys(ConfigFileSchema.properties).filter((s) => s !== "macros");
    expect(sections).toEqual(SECTIONS);
  });

  test("every key has a meaning, and none is documented that the schema lacks", () => {
    for (const section of SECTIONS) {
      const keys = Object.keys(sectionTable(section).properties);
      const meanings = CONFIG_DOCS[section].keys;
      expect({ section, keys: Object.keys(meanings).sort() }).toEqual({
        section,
        keys: [...keys].sort(),
      });
      for (const [key, { meaning }] of Object.entries(meanings)) {
        expect({ key, sentence: /^\S.*\.$/s.test(meaning) }).toEqual({ key, sentence: true });
      }
    }
  });
});

describe("section.key names in the docs", () => {
  const FILES = [
    "README.md",
    "quartermaster.toml",
    ...readdirSync(join(ROOT, "docs"))
      .filter((f) => f.endsWith(".md"))
      .map((f) => `docs/${f}`),
  ];
  const FIXED = ["server", "scheduler", "resources", "router", "matrix"] as const;

  test("every `server.x`, `scheduler.x`, … the README and docs mention is a key", () => {
    const named = new RegExp(`\\b(${FIXED.join("|")})\\.([a-z][a-z_]*)\\b`, "g");
    let seen = 0;
    for (const file of FILES) {
      for (const m of read(file).matchAll(named)) {
        const [, section, key] = m as unknown as [string, (typeof FIXED)[number], string];
        if (key === "md") continue; // a file name (`security.md`)
        seen++;
        const known = Object.hasOwn(sectionTable(section).properties, key);
        expect({ file, name: `${section}.${key}`, known }).toEqual({
          file,
          name: `${section}.${key}`,
          known: true,
        });
      }
    }
    expect(seen).toBeGreaterThan(10);
  });
});

describe("docs/quartermaster.schema.json", () => {
  const shipped = read("docs/quartermaster.schema.json");
  const schema = JSON.parse(shipped) as Record<string, unknown>;

  test("is what `qm config schema` prints (run bun scripts/gen-config-doc.ts)", () => {
    expect(shipped).toBe(configSchemaText());
  });

  test("uses only JSON Schema Draft 4 keywords, the level taplo supports", () => {
    const used = new Set<string>();
    const walk = (node: Record<string, unknown>) => {
      for (const [key, value] of Object.entries(node)) {
        used.add(key);
        if (key === "properties" || key === "patternProperties") {
          for (const sub of Object.values(value as Record<string, Record<string, unknown>>)) {
            walk(sub);
          }
        } else if (key === "items") walk(value as Record<string, unknown>);
        else if (key === "anyOf") for (const sub of value as Record<string, unknown>[]) walk(sub);
      }
    };
    walk(schema);
    const allowed = new Set([...ANNOTATIONS, ...VALIDATION]);
    expect([...used].filter((k) => !allowed.has(k))).toEqual([]);
    expect(schema.$schema).toBe("http://json-schema.org/draft-04/schema#");
  });

  test("requires only what has no default (a model's cmd, a peer's url); describes every key", () => {
    const required: string[] = [];
    const undescribed: string[] = [];
    const walk = (node: Record<string, unknown>, path: string) => {
      for (const r of (node.required as string[] | undefined) ?? []) required.push(`${path}.${r}`);
      const props = (node.properties ?? node.patternProperties) as
        | Record<string, Record<string, unknown>>
        | undefined;
      for (const [key, sub] of Object.entries(props ?? {})) {
        const at = node.properties ? `${path}.${key}` : `${path}.*`;
        if (node.properties && typeof sub.description !== "string") undescribed.push(at);
        if (sub.type === "object") walk(sub, at);
      }
    };
    walk(schema, "");
    expect(required.sort()).toEqual([".models.*.cmd", ".peers.*.url"]);
    expect(undescribed).toEqual([]);
  });
});

describe("README", () => {
  const readme = read("README.md");
  const start = readme.indexOf("## Quick start");
  const quickStart = readme.slice(start, readme.indexOf("\n## ", start));

  test("the Quick start is two commands and names the Node.js that package.json requires", () => {
    const block = /```sh\n([\s\S]*?)```/.exec(quickStart)![1]!;
    expect(block.trim().split("\n").length).toBe(2);
    const pkg = JSON.parse(read("package.json")) as { engines: { node: string } };
    const major = /^>=(\d+)$/.exec(pkg.engines.node)?.[1];
    expect(quickStart).toContain(`Node.js ${major} or newer`);
  });

  // Node runs npm and the packages' install scripts (Bun's installer); everything else runs
  // under Bun, and scripts/ensure-deps.mjs keeps npm quiet about those packages' engines.
  test("that Node.js satisfies the engines of every package whose install script Node runs", () => {
    const lock = JSON.parse(read("package-lock.json")) as {
      packages: Record<string, { engines?: { node?: string }; hasInstallScript?: boolean }>;
    };
    const pkg = JSON.parse(read("package.json")) as { engines: { node: string } };
    const ours = Number(/^>=(\d+)$/.exec(pkg.engines.node)![1]);
    const installers = Object.entries(lock.packages).filter(([, p]) => p.hasInstallScript);
    expect(installers.map(([name]) => name)).toContain("node_modules/bun");
    for (const [name, p] of installers) {
      const need = p.engines?.node;
      if (!need) continue;
      // Every range pinned today is alternatives (`||`) of a lower bound (">=18", ">= 14.16")
      // or a caret on a major ("^18"); another form fails here.
      const alternatives = need
        .split("||")
        .map((a) => /^(>=|\^)\s*(\d+)(?:\.\d+){0,2}$/.exec(a.trim()));
      const known = alternatives.every((a) => a !== null);
      expect({ name, need, known }).toEqual({ name, need, known: true });
      const met = alternatives.some((a) =>
        a![1] === ">=" ? ours >= Number(a![2]) : ours === Number(a![2]),
      );
      expect({ name, need, met }).toEqual({ name, need, met: true });
    }
  });

  test("links every doc, and nothing sends readers to a DESIGN.md", () => {
    for (const doc of [
      "docs/config.md",
      "docs/api.md",
      "docs/architecture.md",
      "docs/security.md",
    ]) {
      expect(readme).toContain(`](${doc})`);
    }
    for (const file of ["README.md", "quartermaster.toml", "docs/config.md", "docs/api.md"]) {
      expect({ file, mentions: read(file).includes("DESIGN.md") }).toEqual({
        file,
        mentions: false,
      });
    }
  });
});
