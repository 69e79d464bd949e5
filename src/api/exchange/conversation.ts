/**
 * Which conversation a request belongs to, without the client's help: the scheduler's cost
 * policy learns each conversation's tool gaps (src/scheduler/design.md, "Hold or yield by
 * cost"). A client's own session id is used where it sends one; otherwise the conversation is
 * its opening — the messages up to and including its first user message (and a system prompt
 * sent before them) — which every later turn repeats byte for byte.
 *
 * The opening is found by a scan of the raw body that stops at the end of that first user
 * message: an agent's long history is never walked, and nothing is parsed into objects.
 */

/**
 * Session headers, in order of preference: Claude Code's `x-claude-code-session-id` and Codex
 * CLI's `session-id` (both sent on every request of a session).
 */
export const SESSION_HEADERS = ["x-claude-code-session-id", "session-id"] as const;

/** The longest session id kept (a longer one is cut: it still tells sessions apart). */
const MAX_SESSION_ID = 200;
/** Messages looked at for the first user message. */
const MAX_OPENING = 4;

/** The conversation key of a request, or undefined when neither a session nor an opening shows. */
export function conversationKey(
  headers: Headers,
  body: Uint8Array | null | undefined,
): string | undefined {
  for (const name of SESSION_HEADERS) {
    const id = headers.get(name)?.trim();
    if (id) return `session:${id.slice(0, MAX_SESSION_ID)}`;
  }
  if (!body || body.length === 0) return undefined;
  const opening = openingOf(body);
  return opening === null ? undefined : `opening:${Bun.hash(opening).toString(36)}`;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const CLOSE_OBJ = 0x7d;
const OPEN_ARR = 0x5b;
const CLOSE_ARR = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

const decoder = new TextDecoder();
/** Top-level keys holding the messages (chat, Anthropic, Ollama) or items (Responses). */
const LISTS = new Set(["messages", "input"]);
/** Top-level keys of a system prompt sent apart from the messages (Anthropic, Responses). */
const SYSTEMS = new Set(["system", "instructions"]);
const USER = /"role"\s*:\s*"user"/;
/** Anthropic's prompt-caching marks move from turn to turn: they are not the conversation. */
const CACHE_CONTROL = /,?\s*"cache_control"\s*:\s*\{[^{}]*\}/g;

/**
 * The conversation's opening in a JSON request body: a system prompt that comes before the
 * messages, then the messages through the first user one; null when the body is not a JSON
 * object with such a list.
 */
export function openingOf(body: Uint8Array): string | null {
  let i = skipSpace(body, 0);
  if (body[i] !== OPEN_OBJ) return null;
  i++;
  let system = "";
  for (;;) {
    i = skipSpace(body, i);
    if (body[i] === COMMA) i = skipSpace(body, i + 1);
    if (body[i] !== QUOTE) return null;
    const keyEnd = stringEnd(body, i);
    if (keyEnd < 0) return null;
    const key = keyEnd - i < 20 ? decoder.decode(body.subarray(i + 1, keyEnd - 1)) : "";
    i = skipSpace(body, keyEnd);
    if (body[i] !== COLON) return null;
    i = skipSpace(body, i + 1);
    if (LISTS.has(key) && body[i] === OPEN_ARR) {
      const list = firstThroughUser(body, i);
      if (list === null) return null;
      return (system + list).replace(CACHE_CONTROL, "");
    }
    const end = valueEnd(body, i);
    if (end < 0) return null;
    if (SYSTEMS.has(key)) system = decoder.decode(body.subarray(i, end));
    i = end;
  }
}

/** The elements of the array at `at`, up to and including the first with role "user". */
function firstThroughUser(body: Uint8Array, at: number): string | null {
  const parts: string[] = [];
  let i = at + 1;
  for (let n = 0; n < MAX_OPENING; n++) {
    i = skipSpace(body, i);
    if (body[i] === COMMA) i = skipSpace(body, i + 1);
    if (body[i] === CLOSE_ARR || i >= body.length) break;
    const end = valueEnd(body, i);
    if (end < 0) return null;
    const element = decoder.decode(body.subarray(i, end));
    parts.push(element);
    i = end;
    if (USER.test(element)) break;
  }
  return parts.length === 0 ? null : parts.join(",");
}

/** Past the JSON value starting at `i`; -1 when it does not end. */
function valueEnd(body: Uint8Array, i: number): number {
  const first = body[i];
  if (first === QUOTE) return stringEnd(body, i);
  if (first !== OPEN_OBJ && first !== OPEN_ARR) {
    // A number, true, false or null: up to the next delimiter.
    while (i < body.length && !isDelimiter(body[i]!)) i++;
    return i;
  }
  let depth = 0;
  while (i < body.length) {
    const b = body[i]!;
    if (b === QUOTE) {
      i = stringEnd(body, i);
      if (i < 0) return -1;
      continue;
    }
    if (b === OPEN_OBJ || b === OPEN_ARR) depth++;
    else if (b === CLOSE_OBJ || b === CLOSE_ARR) {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return -1;
}

/** Past the closing quote of the string whose opening quote is at `i`; -1 when unclosed. */
function stringEnd(body: Uint8Array, i: number): number {
  for (let j = i + 1; j < body.length; j++) {
    const b = body[j];
    if (b === BACKSLASH) j++;
    else if (b === QUOTE) return j + 1;
  }
  return -1;
}

function skipSpace(body: Uint8Array, i: number): number {
  while (i < body.length) {
    const b = body[i]!;
    if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) break;
    i++;
  }
  return i;
}

function isDelimiter(b: number): boolean {
  return (
    b === COMMA ||
    b === CLOSE_OBJ ||
    b === CLOSE_ARR ||
    b === 0x20 ||
    b === 0x09 ||
    b === 0x0a ||
    b === 0x0d
  );
}
