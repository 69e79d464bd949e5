/**
 * Whether a request carries a tool result — the evidence that its conversation is an agent loop
 * that runs its tools (src/scheduler/design.md, "Evidence of a loop"). A tool result is a
 * message with role `tool` (OpenAI chat, Ollama; `function`, the older form), an Anthropic
 * `tool_result` block, or a Responses `function_call_output` / `custom_tool_call_output` item.
 *
 * `toolResultIn` reads the body the API parsed anyway: the newest messages (or items) first, so a
 * loop's turn, whose tool result is near the end, is found in a step or two, and a request
 * without one costs a walk over its messages, not a search of its bytes. `carriesToolResult`
 * searches the raw bytes, for a body no API parsed: these markers are JSON syntax (a quote, a key, a
 * colon), which text inside a JSON string cannot contain unescaped, so a prompt that merely
 * mentions them does not count. Both spacings clients write are searched (`"k":"v"` from
 * JavaScript, `"k": "v"` from Python's json.dumps).
 */

const MARKERS = [
  '"role":"tool"',
  '"role": "tool"',
  '"role":"function"',
  '"role": "function"',
  '"tool_result"',
  '"function_call_output"',
  '"custom_tool_call_output"',
].map((m) => Buffer.from(m));

/** True when the JSON body has a tool result anywhere; false for none (or no body). */
export function carriesToolResult(body: Uint8Array | null | undefined): boolean {
  if (!body || body.length === 0) return false;
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return MARKERS.some((m) => bytes.includes(m));
}

/**
 * True when a parsed request body carries a tool result: a chat message with role `tool` or
 * `function`, a message content block of type `tool_result`, or a Responses input item of type
 * `function_call_output` / `custom_tool_call_output`.
 */
export function toolResultIn(body: Readonly<Record<string, unknown>>): boolean {
  return (
    someNewestFirst(body.messages, isToolResultMessage) || someNewestFirst(body.input, isOutputItem)
  );
}

type Json = Readonly<Record<string, unknown>>;

function someNewestFirst(list: unknown, test: (x: Json) => boolean): boolean {
  if (!Array.isArray(list)) return false;
  for (let i = list.length - 1; i >= 0; i--) {
    const x: unknown = list[i];
    if (typeof x === "object" && x !== null && test(x as Json)) return true;
  }
  return false;
}

function isToolResultMessage(m: Json): boolean {
  return m.role === "tool" || m.role === "function" || someNewestFirst(m.content, isResultBlock);
}

function isResultBlock(b: Json): boolean {
  return b.type === "tool_result";
}

function isOutputItem(i: Json): boolean {
  return i.type === "function_call_output" || i.type === "custom_tool_call_output";
}
