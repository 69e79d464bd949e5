/**
 * Tool calls, OpenAI → Ollama. OpenAI streams a call in pieces (an `index`, then the id and
 * name, then `arguments` as string fragments); Ollama sends each call whole, with `arguments`
 * an object (docs/api.md, "Chat request (with tools)"). The pieces are put together by
 * `api/chat/tool-calls.ts`; the stream hands the calls over once the answer says they are
 * complete.
 */

import type { ToolCall } from "../chat/tool-calls.ts";
import { toolInput } from "../chat/tool-json.ts";
import type { OaiToolCallDelta } from "../chat/wire.ts";

export interface OllamaToolCall {
  id?: string;
  function: { index: number; name: string; arguments: Record<string, unknown> };
}

/** One complete OpenAI call (a whole answer's) → Ollama's. */
export function ollamaCall(c: OaiToolCallDelta, index: number): OllamaToolCall {
  const out: OllamaToolCall = {
    function: {
      index,
      name: c.function?.name ?? "",
      arguments: toolInput(c.function?.arguments).input,
    },
  };
  if (typeof c.id === "string" && c.id !== "") out.id = c.id;
  return out;
}

/** The calls a stream gathered (`api/chat/tool-calls.ts`), whole, as Ollama sends them. */
export function wholeCalls(calls: readonly ToolCall[]): OllamaToolCall[] {
  return calls.map((c, i) =>
    ollamaCall({ id: c.id, function: { name: c.name ?? "", arguments: c.args } }, i),
  );
}
