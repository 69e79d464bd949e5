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
  return contentText(m.reasoning_content) || contentText(m.reasoning);
}

/** `finish_reason` when it is a non-empty string. */
export function finishReason(choice: { finish_reason?: unknown }): string | null {
  const f = choice.finish_reason;
  return typeof f === "string" && f !== "" ? f : null;
}

function delta(
  reasoning: string,
  text: string,
  literal: string | null,
  tools: ToolDelta[] | null,
  finish: string | null,
  stopReason: unknown,
  usage: OaiUsage | null,
  timings: Rec | null,
): ChatDelta {
  return { kind: "delta", reasoning, text, literal, tools, finish, stopReason, usage, timings };
}

function errorStep(e: UpstreamError): ChatError {
  const m = e.message;
  return { kind: "error", message: typeof m === "string" && m !== "" ? m : NO_MESSAGE, error: e };
}

/** One event's data (and its `event:` name, when it had one) → a step, or null to skip it. */
export function readChunk(data: string, event?: string): ChatStep | null {
  // Chunks are objects: only data that is not one can be the terminator.
  if (data.charCodeAt(0) !== 123 && data.trim() === "[DONE]") return DONE;
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
  const usage = isRec(chunk.usage) ? (chunk.usage as OaiUsage) : null;
  const timings = isRec(chunk.timings) ? chunk.timings : null;
  const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
  if (!isRec(choice)) return delta("", "", null, null, null, null, usage, timings);
  const d = choice.delta;
  let reasoning = "";
  let text: string;
  let tools: ToolDelta[] | null = null;
  if (isRec(d)) {
    reasoning = reasoningText(d);
    text = contentText(d.content);
    if (Array.isArray(d.tool_calls) && d.tool_calls.length > 0) tools = toolDeltas(d.tool_calls);
  } else {
    text = contentText(choice.text);
  }
  const stop = choice.stop_reason;
  return delta(
    reasoning,
    text,
    null,
    tools,
    finishReason(choice),
    stop === undefined ? null : stop,
    usage,
    timings,
  );
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
  return kind === "text"
    ? delta("", text, literal, null, null, null, null, null)
    : delta(text, "", literal, null, null, null, null, null);
}
