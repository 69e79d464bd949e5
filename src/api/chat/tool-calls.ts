/**
 * The tool calls of a streamed answer, put together from their pieces (`ToolDelta`). OpenAI
 * streams a call as an `index`, then its id and name, then `arguments` in fragments; servers
 * stray from that in known ways, each handled here once for every API:
 *
 * - no `index` (older mistral.rs): the call is keyed 0;
 * - every call on index 0 (LiteLLM #21331): the same index with a new id and a name is a new
 *   call (vLLM's converter uses the same rule); the same id, or no id and the same name, is
 *   the same call resent with each fragment;
 * - cumulative fragments, each repeating everything so far (openclaw #89070): the longer one
 *   replaces what came before;
 * - `arguments` as an object: it is all of them.
 */
import type { ToolDelta } from "./chunk.ts";

export interface ToolCall {
  /** The upstream's `index` for it (0 when it gave none). */
  key: number;
  id: string | null;
  name: string | null;
  args: string;
}

export class ToolCalls {
  /** Every call, in order of appearance. */
  readonly all: ToolCall[] = [];
  /** The latest call per upstream index. */
  private readonly byIndex = new Map<number, ToolCall>();
  /** The arguments text the last `add` appended to its call ("" when none, or replaced). */
  added = "";

  /** One piece; returns the call it belongs to (a new one when it starts one). */
  add(d: ToolDelta): ToolCall {
    const key = d.index ?? 0;
    let call = this.byIndex.get(key);
    // A name on a call that has one starts a new call, unless it repeats the same call.
    const another =
      d.name !== null && !!call?.name && (d.id ? d.id !== call.id : d.name !== call.name);
    if (!call || another) {
      call = { key, id: null, name: null, args: "" };
      this.byIndex.set(key, call);
      this.all.push(call);
    }
    call.id ??= d.id;
    call.name ??= d.name;
    const before = call.args;
    if (d.whole) {
      call.args = d.args;
      this.added = d.args.startsWith(before) ? d.args.slice(before.length) : "";
    } else if (before.length >= 2 && d.args.startsWith(before)) {
      call.args = d.args;
      this.added = d.args.slice(before.length);
    } else {
      call.args = before + d.args;
      this.added = d.args;
    }
    return call;
  }

  get size(): number {
    return this.all.length;
  }

  /** Forgets every call (they were sent). */
  clear(): void {
    this.all.length = 0;
    this.byIndex.clear();
  }
}
