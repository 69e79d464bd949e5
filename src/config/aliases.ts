/**
 * The names a client may send as `model`: a model's id, one of its aliases, or a name one of
 * its alias patterns matches. An alias with a `*` is a pattern (`claude-*`): `*` stands for
 * any run of characters, `/` included, and every other character is literal. So clients
 * whose model names are built in (Claude Code asks for `claude-…` names) land on a
 * configured model.
 *
 * Resolution, first hit wins: a model id; an exact alias; then the patterns in the order the
 * config file lists them. Ids and exact aliases are unique (checked at load), so only patterns
 * can overlap, and then the first listed wins. A `name?ctx=N` variant request is never matched
 * by a pattern as a whole — its base is resolved instead — so `claude-x?ctx=8192` is a
 * variant of the model `claude-x` resolves to.
 */
import type { Issues } from "./issues.ts";
import type { ConfigFile } from "./schema.ts";
import type { AliasPattern, Config } from "./types.ts";
import { parseVariantName } from "./variant.ts";

export function isPattern(alias: string): boolean {
  return alias.includes("*");
}

/**
 * True when `pattern` (an alias with `*`) matches `name`. No regular expression: the literal
 * parts between the stars are found in order, each at its leftmost place (which is always
 * right when `*` is the only wildcard), so a long hostile name costs linear searches, never
 * backtracking.
 */
export function matchesPattern(pattern: string, name: string): boolean {
  const parts = pattern.split("*");
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (name.length < first.length + last.length) return false;
  if (!name.startsWith(first) || !name.endsWith(last)) return false;
  let at = first.length;
  const end = name.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    if (part === "") continue;
    const found = name.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** The id of the model `name` names, or undefined. */
export function modelIdFor(
  config: Pick<Config, "models" | "aliases" | "aliasPatterns">,
  name: string,
): string | undefined {
  if (Object.hasOwn(config.models, name)) return name;
  if (Object.hasOwn(config.aliases, name)) return config.aliases[name];
  const patterns = config.aliasPatterns;
  if (patterns.length === 0 || parseVariantName(name)) return undefined;
  for (const p of patterns) if (matchesPattern(p.pattern, name)) return p.id;
  return undefined;
}

/**
 * alias → model id, and the alias patterns in file order. Aliases are unique and never shadow
 * a model id, so an exact name always resolves to exactly one model.
 */
export function buildAliases(
  file: ConfigFile,
  order: readonly string[],
  issues: Issues,
): { aliases: Record<string, string>; aliasPatterns: AliasPattern[] } {
  const aliases: Record<string, string> = {};
  const owners: Record<string, string> = {};
  const aliasPatterns: AliasPattern[] = [];
  for (const id of order) {
    if (issues.within(["models", id, "aliases"])) continue;
    file.models[id]!.aliases.forEach((alias, i) => {
      const at = ["models", id, "aliases", i];
      const owner = Object.hasOwn(owners, alias) ? owners[alias] : undefined;
      if (alias === "") issues.at(at, "an alias must not be empty");
      else if (Object.hasOwn(file.models, alias))
        issues.at(at, `alias "${alias}" is already a model id`);
      else if (owner === id) issues.at(at, `alias "${alias}" is listed twice`);
      else if (owner !== undefined)
        issues.at(at, `alias "${alias}" is already used by model "${owner}"`);
      else if (isPattern(alias) && alias.includes("?ctx=")) {
        issues.at(
          at,
          `alias pattern "${alias}" must not contain "?ctx=" (that asks for a variant)`,
        );
      } else {
        owners[alias] = id;
        if (isPattern(alias)) aliasPatterns.push({ pattern: alias, id });
        else aliases[alias] = id;
      }
    });
  }
  return { aliases, aliasPatterns };
}
