/**
 * Tool-call arguments → a `tool_use.input` object. Local tool parsers sometimes hand over
 * truncated or sloppy JSON; the SDKs and Claude Code silently turn unparsable input into `{}`
 * (claude-code #67765), so qm repairs what it can first: closes an open string, completes a
 * cut-off literal, drops a trailing comma, closes open brackets. What still fails is `{}`.
 */
export interface ToolInput {
  input: Record<string, unknown>;
  /** "ok", "repaired" (changed to parse), or "failed" (replaced by `{}`). */
  how: "ok" | "repaired" | "failed";
}

function asObject(v: unknown): Record<string, unknown> | null {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : null;
}

function tryParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function toolInput(raw: unknown): ToolInput {
  const direct = asObject(raw);
  if (direct) return { input: direct, how: "ok" };
  if (typeof raw !== "string" || raw.trim() === "") return { input: {}, how: "ok" };
  const parsed = tryParse(raw);
  const obj = asObject(parsed);
  if (obj) return { input: obj, how: "ok" };
  // Double-encoded arguments ("{\"a\":1}") are seen from some tool parsers.
  if (typeof parsed === "string") {
    const inner = asObject(tryParse(parsed));
    if (inner) return { input: inner, how: "repaired" };
  }
  const fixed = asObject(repair(raw));
  return fixed ? { input: fixed, how: "repaired" } : { input: {}, how: "failed" };
}

const LITERALS = ["true", "false", "null"];

/** Best-effort completion of JSON cut off at the end; undefined when that does not parse. */
export function repair(text: string): unknown {
  const stack: string[] = [];
  let inString = false;
  let escaped = false;
  for (const ch of text) {
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === "\\") escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") stack.push(ch);
    else if (ch === "}" || ch === "]") stack.pop();
  }
  let body = text;
  if (inString) body = `${escaped ? body.slice(0, -1) : body}"`;
  else {
    body = body.trimEnd();
    const m = /[a-z]+$/.exec(body);
    const word = m?.[0];
    const full = word ? LITERALS.find((l) => l.startsWith(word)) : undefined;
    if (word && full) body = body.slice(0, -word.length) + full;
    // A number cut after its sign, point or exponent marker.
    body = body.replace(/(\d)[.eE+-]+$/, "$1").replace(/-$/, "");
    body = body.replace(/[\s,]+$/, "");
    if (/:$/.test(body)) body += "null";
  }
  const closers = stack
    .reverse()
    .map((c) => (c === "{" ? "}" : "]"))
    .join("");
  return tryParse(body + closers);
}
