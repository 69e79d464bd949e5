/**
 * The playground's conversation: turns, and how one streamed chunk of `/v1/chat/completions`
 * (OpenAI's `chat.completion.chunk`) changes the answer being written. Reasoning models send
 * their thinking as `reasoning_content` (llama.cpp, vLLM) or `reasoning` (some others); it is
 * kept apart from the answer. Pure.
 */
import { errorText } from "./errors.ts";
export interface Turn {
  role: "user" | "assistant";
  content: string;
  reasoning: string;
  /** `finish_reason` once stated; `"aborted"` when the user stopped it. */
  finish: string | null;
  error: string | null;
  usage: { prompt: number; completion: number } | null;
}

export function userTurn(content: string): Turn {
  return { role: "user", content, reasoning: "", finish: null, error: null, usage: null };
}

export function answerTurn(): Turn {
  return { role: "assistant", content: "", reasoning: "", finish: null, error: null, usage: null };
}

/** The messages to send: the finished turns' text (failed answers and reasoning left out). */
export function messagesOf(turns: readonly Turn[]): { role: string; content: string }[] {
  return turns
    .filter((t) => t.role === "user" || (t.error === null && t.content !== ""))
    .map((t) => ({ role: t.role, content: t.content }));
}

/** One `data:` payload applied to the answer; `"done"` for `[DONE]`. */
export function applyChunk(t: Turn, data: string): Turn | "done" {
  if (data.trim() === "[DONE]") return "done";
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    return t;
  }
  if (!isObject(chunk)) return t;
  if (chunk.error !== undefined) return { ...t, error: errorText(chunk) ?? "the stream failed" };
  let next = t;
  const usage = chunk.usage;
  if (isObject(usage) && typeof usage.completion_tokens === "number") {
    next = {
      ...next,
      usage: {
        prompt: typeof usage.prompt_tokens === "number" ? usage.prompt_tokens : 0,
        completion: usage.completion_tokens,
      },
    };
  }
  const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
  if (!isObject(choice)) return next;
  const delta = isObject(choice.delta) ? choice.delta : {};
  const thought = delta.reasoning_content ?? delta.reasoning;
  if (typeof thought === "string" && thought !== "") {
    next = { ...next, reasoning: next.reasoning + thought };
  }
  if (typeof delta.content === "string" && delta.content !== "") {
    next = { ...next, content: next.content + delta.content };
  }
  if (typeof choice.finish_reason === "string") next = { ...next, finish: choice.finish_reason };
  return next;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
