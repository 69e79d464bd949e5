/**
 * Whether a request carries a tool result — the evidence that its conversation is an agent loop
 * that runs its tools (src/scheduler/design.md, "Evidence of a loop"). A tool result is a
 * message with role `tool` (OpenAI chat, Ollama; `function`, the older form), an Anthropic
 * `tool_result` block, or a Responses `function_call_output` / `custom_tool_call_output` item.
 *
 * The raw body is searched, not parsed: these markers are JSON syntax (a quote, a key, a
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
