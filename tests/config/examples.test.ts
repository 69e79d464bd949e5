// biome-ignore-all lint/suspicious/noTemplateCurlyInString: templates keep ${PORT} etc. as literal text
/**
 * Every config a reader may copy — the shipped quartermaster.toml (its commented-out entries
 * too) and each ```toml block of the README and docs/ — passes the shipped JSON Schema and
 * loads through the real loader; and on schema mistakes the two agree.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parse } from "smol-toml";
import { ConfigError } from "../../src/config/index.ts";
import { fromJsonSchema, violations } from "./json-schema.ts";
import { load } from "./support.ts";

const ROOT = resolve(import.meta.dir, "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const schema = fromJsonSchema(JSON.parse(read("docs/quartermaster.schema.json")));

/** The ```toml blocks of a Markdown file. */
function tomlBlocks(path: string): { name: string; text: string }[] {
  const blocks = [...read(path).matchAll(/^```toml\n([\s\S]*?)^```$/gm)];
  return blocks.map((m, i) => ({ name: `${path} block ${i + 1}`, text: m[1]! }));
}

/**
 * The commented-out entries at the end of quartermaster.toml, uncommented: only lines that are
 * TOML (table headers, `key = …`, the inside of a `"""` string), not the prose around them.
 */
function commentedEntries(text: string): string {
  const from = text.indexOf("Real model servers");
  const out: string[] = [];
  let inString = false;
  for (const line of text.slice(from).split("\n")) {
    const body = line.replace(/^# ?/, "");
    if (inString || /^\[models\.[\w-]+\]$/.test(body) || /^[a-z_]+ = /.test(body)) {
      out.push(body);
    }
    if ((body.match(/"""/g) ?? []).length % 2 === 1) inString = !inString;
  }
  return out.join("\n");
}

const shipped = read("quartermaster.toml");
const EXAMPLES = [
  { name: "quartermaster.toml", text: shipped },
  { name: "quartermaster.toml, commented-out entries", text: commentedEntries(shipped) },
  ...tomlBlocks("README.md"),
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .flatMap((f) => tomlBlocks(`docs/${f}`)),
];

function loaderRejects(text: string): boolean {
  try {
    load(text);
    return false;
  } catch (err) {
    if (err instanceof ConfigError) return true;
    throw err;
  }
}

describe("the shipped example configs", () => {
  test("there are examples to check, commented-out model servers included", () => {
    expect(EXAMPLES.length).toBeGreaterThanOrEqual(5);
    const entries = parse(commentedEntries(shipped)) as { models: Record<string, unknown> };
    expect(Object.keys(entries.models)).toEqual(["qwen-7b", "llama-8b", "mistral-small"]);
  });

  for (const { name, text } of EXAMPLES) {
    test(`${name} passes the JSON Schema and the loader`, () => {
      expect({ name, violations: violations(schema, parse(text)) }).toEqual({
        name,
        violations: [],
      });
      expect(() => load(text)).not.toThrow();
    });
  }
});

describe("the JSON Schema and the loader agree", () => {
  const cases: [string, string, boolean][] = [
    ["an empty file", "", true],
    ["a fractional body limit", "[server]\nmax_body_mb = 0.5", true],
    [
      "macros of every kind",
      '[macros]\nctx = 8192\nfast = true\n[models.m]\ncmd = "x ${ctx}"',
      true,
    ],
    ["a string where an array belongs", '[server]\nlisten = "127.0.0.1:8080"', false],
    ["an unknown key", "[server]\nport = 8080", false],
    ["an unknown section", "[serverz]\nlisten = []", false],
    ["a model without cmd", "[models.m]\nttl_s = 5", false],
    ["a duration no timer can hold", '[models.m]\ncmd = "x"\nttl_s = 2592000', false],
    ["a value outside an enum", '[scheduler]\nhold_on = "always"', false],
    ["a queue bound of 0", "[scheduler]\nmax_queue = 0", false],
    ["a probe interval under 100 ms", "[resources]\ngpu_probe_interval_ms = 50", false],
    ["an empty API key", '[server]\napi_keys = [""]', false],
    ["a port past 65535", "[server]\nstart_port = 70000", false],
    ["a fractional concurrency limit", '[models.m]\ncmd = "x"\nconcurrency_limit = 1.5', false],
    ["a number in env", '[models.m]\ncmd = "x"\nenv = { A = 1 }', false],
    ["a negative evict cost", '[models.m]\ncmd = "x"\n[matrix]\nevict_cost = { m = -1 }', false],
    ["an unknown group key", "[groups.g]\nmembers = []\nswap_all = true", false],
    ["a peer without url", '[peers.p]\nkind = "qm"', false],
  ];
  for (const [name, text, valid] of cases) {
    test(`${name}: ${valid ? "both accept" : "both refuse"}`, () => {
      expect(violations(schema, parse(text)).length === 0).toBe(valid);
      expect(loaderRejects(text)).toBe(!valid);
    });
  }
});
