/**
 * One upstream SSE event of an OpenAI chat stream → one `ChatStep`: the end (`[DONE]`), an
 * error the upstream reports inside the stream, or a delta (reasoning, text, tool-call pieces,
 * finish reason, usage, llama.cpp's timings). Every rule of reading a chunk is here, once, and
 * the three translators (Anthropic, Responses, Ollama) only ever see steps:
 *
 * - `[DONE]` ends the answer, surrounding whitespace allowed (OpenAI's terminator,
 *   https://platform.openai.com/docs/api-reference/chat-streaming).
 * - An event named `error`, or a chunk with an `error` field, is the upstream's failure, with
 *   its message when it gave one (llama.cpp and vLLM write `{"error":{…}}` mid-stream; some
 *   servers name the event `error`). Data that is not JSON under `event: error` is the message.
 * - Reasoning is `reasoning_content` (llama.cpp, mistral.rs) or `reasoning` (vLLM since its
 *   rename): an empty `reasoning_content` says nothing, so `reasoning` is read then (`||`, not
 *   `??`: a server that sends both fields, one of them empty, would otherwise lose the text;
 *   one of the two is read, never both, so nothing is doubled).
 * - Text is `delta.content`, a string or text parts; a chunk without `delta` is a completions
 *   chunk (`raw` generate), whose text is `choices[0].text`.
 * - `finish_reason` counts only as a non-empty string: servers that send `""` on every chunk
 *   have not finished, and a stream cut after them must not look complete.
 * - Anything else that is not a JSON object is skipped (`null`): servers interleave odd lines.
 *
 * One `JSON.parse` per event, nothing re-encoded.
 */
import { type UpstreamError, upstreamError } from "./refusal.ts";
import type { OaiUsage } from "./wire.ts";

/** One piece of one tool call (`delta.tool_calls[i]`), as it came. */
export interface ToolDelta {
  /** The call's `index`; null when the server left it out (older mistral.rs). */
  index: number | null;
  /** A non-empty id, or null. */
  id: string | null;
  /** A non-empty name, or null. */
  name: string | null;
  /** An arguments fragment ("" when none). */
  args: string;
  /** `arguments` came as an object (some servers send it so): `args` is all of them. */
  whole: boolean;
}

export interface ChatDelta {
  kind: "delta";
  /** Reasoning text ("" when none). */
  reasoning: string;
  /** Answer text ("" when none). */
  text: string;
  /**
   * A piece of a huge line (`readPiece`): the reasoning's or text's JSON string literal as the
   * upstream escaped it, quotes included, to be written out as it is. Null otherwise.
   */
  literal: string | null;
  tools: ToolDelta[] | null;
  /** `finish_reason` when it is a non-empty string, else null. */
  finish: string | null;
  /** vLLM's non-standard `stop_reason` (the stop string or token id that matched), or null. */
  stopReason: unknown;
  usage: OaiUsage | null;
  /** llama.cpp's `timings` (`prompt_n`, `cache_n`, `predicted_n`, `prompt_ms`, …), or null. */
  timings: Record<string, unknown> | null;
}

export interface ChatError {
  kind: "error";
  /** The upstream's message, or a plain one when it gave none. */
  message: string;
  /** The upstream's error object (type, code, context sizes), for the APIs that map them. */
  error: UpstreamError;
}

export type ChatStep = { kind: "done" } | ChatError | ChatDelta;

export const DONE: ChatStep = { kind: "done" };

/** The message of an error event that carries none. */
export const NO_MESSAGE = "the model failed mid-answer";

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v);

/** `content` as a string, or the text parts of a content array concatenated. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let out = "";
  for (const p of content) if (isRec(p) && typeof p.text === "string") out += p.text;
  return out;
}

/** A message's or delta's reasoning: `reasoning_content`, or `reasoning` when that says nothing. */
export function reasoningText(m: { reasoning_content?: unknown; reasoning?: unknown }): string {
  const rc = m.reasoning_content;
  // The common cases first, without a call: a string, or neither field.
  if (typeof rc === "string" && rc !== "") return rc;
  const r = m.reasoning;
  if (r === undefined && (rc === undefined || rc === null)) return "";
  return contentText(rc) || contentText(r);
}

/** `finish_reason` when it is a non-empty string. */
export function finishReason(choice: { finish_reason?: unknown }): string | null {
  const f = choice.finish_reason;
  return typeof f === "string" && f !== "" ? f : null;
}

/** A delta with nothing in it, to be filled (`readChunk`'s `into`). */
export function emptyDelta(): ChatDelta {
  return {
    kind: "delta",
    reasoning: "",
    text: "",
    literal: null,
    tools: null,
    finish: null,
    stopReason: null,
    usage: null,
    timings: null,
  };
}

function errorStep(e: UpstreamError): ChatError {
  const m = e.message;
  return { kind: "error", message: typeof m === "string" && m !== "" ? m : NO_MESSAGE, error: e };
}

/**
 * One event's data (and its `event:` name, when it had one) → a step, or null to skip it. A
 * delta is written into `into` when given (a stream's one delta, refilled for each event:
 * no object per chunk), else into a new one.
 */
export function readChunk(data: string, event?: string, into?: ChatDelta): ChatStep | null {
  // (Measured: trimming first is no slower than looking at the first character, and it leaves
  // the event's text in one piece for the parse.)
  if (data.trim() === "[DONE]") return DONE;
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    if (event !== "error") return null;
    const text = data.trim().slice(0, 500);
    return errorStep({ message: text });
  }
  if (event === "error") return errorStep(upstreamError(chunk) ?? {});
  if (!isRec(chunk)) return null;
  if (chunk.error !== undefined) return errorStep(upstreamError(chunk) ?? {});
  const s = into ?? emptyDelta();
  const usage = chunk.usage;
  s.usage = isRec(usage) ? (usage as OaiUsage) : null;
  const timings = chunk.timings;
  s.timings = isRec(timings) ? timings : null;
  s.literal = null;
  const choices = chunk.choices;
  const choice = Array.isArray(choices) ? choices[0] : undefined;
  if (!isRec(choice)) {
    s.reasoning = "";
    s.text = "";
    s.tools = null;
    s.finish = null;
    s.stopReason = null;
    return s;
  }
  const d = choice.delta;
  if (isRec(d)) {
    s.reasoning = reasoningText(d);
    const content = d.content;
    s.text = typeof content === "string" ? content : contentText(content);
    const calls = d.tool_calls;
    s.tools = Array.isArray(calls) && calls.length > 0 ? toolDeltas(calls) : null;
  } else {
    s.reasoning = "";
    s.text = contentText(choice.text);
    s.tools = null;
  }
  s.finish = finishReason(choice);
  const stop = choice.stop_reason;
  s.stopReason = stop === undefined ? null : stop;
  return s;
}

function toolDeltas(raw: unknown[]): ToolDelta[] {
  const out: ToolDelta[] = [];
  for (const tc of raw) {
    if (!isRec(tc)) continue;
    const fn = isRec(tc.function) ? tc.function : {};
    const a = fn.arguments;
    out.push({
      index: typeof tc.index === "number" ? tc.index : null,
      id: typeof tc.id === "string" && tc.id !== "" ? tc.id : null,
      name: typeof fn.name === "string" && fn.name !== "" ? fn.name : null,
      args: typeof a === "string" ? a : isRec(a) ? JSON.stringify(a) : "",
      whole: isRec(a),
    });
  }
  return out;
}

/**
 * A piece of a huge line's `delta.content` (`text`) or reasoning (`thinking`), still
 * JSON-escaped as the upstream sent it (`DeltaScanner`): a delta with the text and its literal.
 */
export function readPiece(kind: "text" | "thinking", escaped: string): ChatDelta {
  const literal = `"${escaped}"`;
  const text = JSON.parse(literal) as string;
  const s = emptyDelta();
  if (kind === "text") s.text = text;
  else s.reasoning = text;
  s.literal = literal;
  return s;
}
