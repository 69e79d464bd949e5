/**
 * Writing TOML by hand, for a file people will read and edit: keys bare where TOML 1.0 allows
 * ("Keys": A–Z a–z 0–9 _ -), text over several lines as a multi-line literal string, anything
 * nested as inline tables and arrays. Comments are the caller's to place.
 */
import { tomlString } from "../../gpu/gguf/toml-entry.ts";

const BARE = /^[A-Za-z0-9_-]+$/;

export function tomlKey(key: string): string {
  return BARE.test(key) ? key : tomlString(key);
}

/** `a.b."c.d"`: a dotted table name. */
export function tomlPath(...keys: string[]): string {
  return keys.map(tomlKey).join(".");
}

/**
 * A string; one with line breaks as `'''…'''` (a multi-line literal: nothing is escaped in
 * it, and the line break right after the opening quotes is not part of the text) when the
 * text allows it, else as an escaped basic string.
 */
export function tomlText(s: string): string {
  const literal = s.includes("\n") && !s.includes("'''") && !s.endsWith("'") && !hasControl(s);
  return literal ? `'''\n${s}'''` : tomlString(s);
}

/** A character a literal string cannot hold: a control character other than tab and newline. */
function hasControl(s: string): boolean {
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a) || c === 0x7f) return true;
  }
  return false;
}

/** Any JSON-like value as TOML; null/undefined have no TOML form (the caller comments them). */
export function tomlValue(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === "string") return tomlText(v);
  if (typeof v === "boolean") return String(v);
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "nan";
    if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
    return String(v);
  }
  if (typeof v === "bigint") return String(v);
  if (Array.isArray(v)) {
    const items = v.map(tomlValue);
    return items.some((i) => i === null) ? null : `[${items.join(", ")}]`;
  }
  if (typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>).map(
      ([k, x]) => [k, tomlValue(x)] as const,
    );
    if (entries.some(([, x]) => x === null)) return null;
    return entries.length === 0
      ? "{}"
      : `{ ${entries.map(([k, x]) => `${tomlKey(k)} = ${x}`).join(", ")} }`;
  }
  return null;
}

/** `# text`, each line of it. */
export function comment(text: string): string[] {
  return text.split("\n").map((l) => (l === "" ? "#" : `# ${l}`));
}
