/**
 * A TOML syntax error as a person can act on it: the key it is in (or the nearest table
 * above), smol-toml's sentence, and a hint for the usual slips — an unquoted string, a YAML
 * `key: value`, a model id with `:` in a table header, a string left open. The parser only
 * says where it stopped; the key and the hint are read from the text around that point.
 */
import type { ConfigIssue } from "./errors.ts";

const HEADER = /^\s*\[\[?\s*([^\]]*?)\s*\]?\]?\s*(?:#.*)?$/;
const BARE = /^[A-Za-z0-9_-]+$/;

/** The table a line belongs to: the nearest `[header]` at or above it, as written. */
function tableAt(lines: readonly string[], index: number): string {
  for (let i = index; i >= 0; i--) {
    const m = HEADER.exec(lines[i]!);
    if (m && lines[i]!.trimStart().startsWith("[")) return m[1]!;
  }
  return "";
}

/** The key of a `key = value` (or `key: value`) line, as written; "" when there is none. */
function keyOfLine(line: string): string {
  const m = /^\s*((?:"[^"]*"|'[^']*'|[^=:#"'\s[{])(?:[^=#]*?))\s*[=:]/.exec(line);
  return m ? m[1]!.trim() : "";
}

const join = (table: string, key: string) => (table && key ? `${table}.${key}` : table || key);

/** `models.llama:8b` → `models."llama:8b"`: each segment that is not a bare key, quoted. */
function quoteSegments(key: string): string {
  return key
    .split(".")
    .map((s) => s.trim())
    .map((s) => (BARE.test(s) || /^["'].*["']$/.test(s) ? s : JSON.stringify(s)))
    .join(".");
}

/** The line an open `[`/`{` started on, searching up from the error (an unclosed array). */
function openedAbove(lines: readonly string[], index: number): number {
  for (let i = index; i >= Math.max(0, index - 50); i--) {
    const line = lines[i]!.replace(/"[^"]*"|'[^']*'|#.*$/g, "");
    const opens = (line.match(/[[{]/g) ?? []).length;
    const closes = (line.match(/[\]}]/g) ?? []).length;
    if (opens > closes && keyOfLine(lines[i]!)) return i;
  }
  return index;
}

interface Located {
  key: string;
  hint: string;
}

function locate(lines: readonly string[], index: number, message: string): Located {
  const line = lines[index] ?? "";
  const header = line.trimStart().startsWith("[");
  if (header) {
    const name = HEADER.exec(line)?.[1] ?? "";
    if (/illegal character in key/.test(message)) {
      const closed = /\]\s*(?:#.*)?$/.test(line);
      return {
        key: name,
        hint: closed
          ? `a key with characters other than A-Z a-z 0-9 _ - is quoted: [${quoteSegments(name)}]`
          : "a table header ends with ]",
      };
    }
    if (/redefine/.test(message)) {
      return {
        key: name,
        hint: `[${name}] appears twice (or a key above already set it); keep one`,
      };
    }
    return { key: name, hint: "" };
  }
  const table = tableAt(lines, index);
  if (/expected comma or end of structure/.test(message)) {
    const start = openedAbove(lines, index);
    return {
      key: join(tableAt(lines, start), keyOfLine(lines[start]!)),
      hint: "an [array] or { inline table } is not closed, or two of its items have no comma between them",
    };
  }
  const key = keyOfLine(line);
  const full = join(table, key);
  const value = line.slice(line.search(/[=:]/) + 1).trim();
  if (/illegal character in key/.test(message)) {
    if (/^\s*[^=]*:/.test(line) && !line.includes("=")) {
      return {
        key: join(table, line.split(":")[0]!.trim()),
        hint: 'TOML sets a value with "=", not ":"',
      };
    }
    return {
      key: full,
      hint: `a key with characters other than A-Z a-z 0-9 _ - is quoted: ${quoteSegments(key || line.trim().split(/\s*=/)[0]!)} = …`,
    };
  }
  if (/invalid value/.test(message)) {
    if (value === "" || value.startsWith("#")) return { key: full, hint: "the value is missing" };
    if (/^(?:True|False|TRUE|FALSE|yes|no|on|off)\b/.test(value)) {
      return { key: full, hint: "true and false are written in lower case, without quotes" };
    }
    if (value.startsWith("[")) {
      return { key: full, hint: 'strings in an array need quotes too: ["sk-1", "sk-2"]' };
    }
    return {
      key: full,
      hint: `strings need quotes: ${key || "key"} = ${JSON.stringify(value.replace(/\s+#.*$/, ""))}`,
    };
  }
  const hints: [RegExp, string][] = [
    [
      /control characters are not allowed in strings|unfinished string/,
      'a string is not closed; text over several lines goes in """triple quotes"""',
    ],
    [/redefine/, `${full || "this key"} is set twice (or its table appears twice); keep one`],
    [
      /illegal character in numeric literal/,
      'numbers take no units and use "." for decimals: ttl_s = 600, est_vram_gb = 6.5',
    ],
    [
      /must be followed by an end-of-line/,
      'one key = value per line; a quote inside a string ends it early (write "it\'s", or escape it as \\")',
    ],
    [
      /unrecognised escape sequence/,
      "a backslash in a \"string\" starts an escape: write \\\\ for one, or use a 'literal string'",
    ],
    [/unexpected end of key/, "the key is missing before ="],
  ];
  const hint = hints.find(([re]) => re.test(message))?.[1] ?? "";
  return { key: full, hint };
}

/** smol-toml's error at (line, col) with its sentence → one issue with key and hint. */
export function syntaxIssue(
  text: string,
  file: string,
  err: { line: number; column: number; message: string },
): ConfigIssue {
  // smol-toml's message carries a code excerpt after a blank line; keep the sentence.
  const sentence = err.message.split("\n")[0]!.replace(/^Invalid TOML document: /, "");
  const lines = text.split(/\r?\n/);
  const { key, hint } = locate(lines, err.line - 1, sentence);
  return {
    file,
    line: err.line,
    col: err.column,
    key,
    message: hint ? `${sentence} (hint: ${hint})` : sentence,
  };
}
