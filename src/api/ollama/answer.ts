/**
 * A whole OpenAI answer (`stream: false`) → Ollama's one object: the `done` line of a stream
 * with the whole message in it (docs/api.md, "Chat request (No streaming)").
 */
import { contentText, finishReason, reasoningText } from "../chat/chunk.ts";
import type { OaiToolCallDelta } from "../chat/wire.ts";
import {
  type Counts,
  doneReason,
  type Kind,
  lineObject,
  readCounts,
  stats,
  type Timing,
} from "./lines.ts";
import type { Think } from "./options.ts";
import { ollamaCall } from "./tool-calls.ts";

export interface WholeShape {
  kind: Kind;
  model: string;
  think: Think;
  timing: Timing;
  createdAt: string;
  /** When the answer was read (monotonic ms). */
  end: number;
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null;

/** The Ollama object, and whether it ended in tool calls. */
export function fromCompletion(json: unknown, s: WholeShape): { body: Rec; toolCalls: boolean } {
  const o = isRec(json) ? json : {};
  const choice = Array.isArray(o.choices) && isRec(o.choices[0]) ? o.choices[0] : {};
  const m = isRec(choice.message) ? choice.message : null;
  const content = contentText(m ? m.content : choice.text);
  const thinking = m ? reasoningText(m) : "";
  const raw = m && Array.isArray(m.tool_calls) ? (m.tool_calls as OaiToolCallDelta[]) : [];
  const calls = raw.map(ollamaCall);
  const counts: Counts = {};
  readCounts(counts, o.usage, o.timings);
  const finish = finishReason(choice);
  // Without token timings, the whole answer's time is all generation: no first token is seen.
  const final = {
    done_reason: doneReason(finish),
    ...stats(s.timing, counts, s.timing.sent, s.end),
  };
  const body = lineObject(
    s.model,
    s.createdAt,
    s.kind,
    {
      content,
      thinking: thinking !== "" && s.think !== false ? thinking : undefined,
      toolCalls: calls,
    },
    final,
  );
  return { body, toolCalls: calls.length > 0 };
}
