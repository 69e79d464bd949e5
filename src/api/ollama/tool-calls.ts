/**
 * Tool calls, OpenAI → Ollama. OpenAI streams a call in pieces (an `index`, then the id and
 * name, then `arguments` as string fragments); Ollama sends each call whole, with `arguments`
 * an object (docs/api.md, "Chat request (with tools)"). The assembly collects the pieces per
 * index and hands the calls over once the answer says they are complete.
 */

import { toolInput } from "../chat/tool-json.ts";
import type { OaiToolCallDelta } from "../chat/wire.ts";

export interface OllamaToolCall {
  id?: string;
  function: { index: number; name: string; arguments: Record<string, unknown> };
}

interface Pending {
  id: string;
  name: string;
  args: string[];
  /** `arguments` arrived as an object (some servers send it so). */
  object: Record<string, unknown> | null;
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

export class ToolCallAssembly {
  private readonly calls: Pending[] = [];
  private readonly byIndex = new Map<number, Pending>();

  add(deltas: readonly OaiToolCallDelta[]): void {
    for (const d of deltas) {
      // Servers that send each call whole leave `index` out: each is then a call of its own.
      const index = typeof d.index === "number" ? d.index : -1 - this.calls.length;
      let p = this.byIndex.get(index);
      if (!p) {
        p = { id: "", name: "", args: [], object: null };
        this.byIndex.set(index, p);
        this.calls.push(p);
      }
      if (typeof d.id === "string" && d.id !== "") p.id = d.id;
      const fn = d.function;
      if (!fn) continue;
      if (typeof fn.name === "string" && fn.name !== "") p.name += fn.name;
      const a = fn.arguments;
      if (typeof a === "string") p.args.push(a);
      else if (typeof a === "object" && a !== null) p.object = a as Record<string, unknown>;
    }
  }

  get size(): number {
    return this.calls.length;
  }

  /** The calls gathered so far, whole, and forgets them. */
  take(): OllamaToolCall[] {
    const out = this.calls.map((p, i) =>
      ollamaCall(
        { id: p.id, function: { name: p.name, arguments: p.object ?? p.args.join("") } },
        i,
      ),
    );
    this.calls.length = 0;
    this.byIndex.clear();
    return out;
  }
}
