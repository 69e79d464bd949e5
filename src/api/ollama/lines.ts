/**
 * The objects of an Ollama answer (docs/api.md, "Generate a chat completion" and "Generate a
 * completion"): a chat line carries `message`, a generate line `response`; the last line has
 * `done: true`, `done_reason` and the counts and durations, all durations in nanoseconds.
 */
import type { OllamaToolCall } from "./tool-calls.ts";

export type Kind = "chat" | "generate";

/** Milliseconds on one monotonic clock (`performance.now()` in production). */
export interface Timing {
  /** The request arrived. */
  start: number;
  /** The model was granted (its load, if any, is over). */
  granted: number;
  /** The request went upstream. */
  sent: number;
}

/** What the upstream said it did (`usage`, and llama.cpp's `timings`); undefined = not said. */
export interface Counts {
  promptTokens?: number | undefined;
  evalTokens?: number | undefined;
  promptMs?: number | undefined;
  evalMs?: number | undefined;
}

export interface Clock {
  /** Monotonic milliseconds. */
  now(): number;
  /** Wall-clock time as `created_at` (RFC 3339). */
  iso(): string;
}

export const realClock: Clock = {
  now: () => performance.now(),
  iso: () => new Date().toISOString(),
};

const ns = (ms: number) => Math.max(0, Math.round(ms * 1e6));

/** Ollama's `done_reason` for an OpenAI `finish_reason` (tool calls end with "stop"). */
export function doneReason(finish: string | null): string {
  return finish === "length" ? "length" : "stop";
}

/** The counts and durations of the last line. */
export function stats(t: Timing, c: Counts, firstToken: number | null, end: number) {
  const first = firstToken ?? end;
  return {
    total_duration: ns(end - t.start),
    load_duration: ns(t.granted - t.start),
    prompt_eval_count: c.promptTokens ?? 0,
    prompt_eval_duration: ns(c.promptMs ?? first - t.sent),
    eval_count: c.evalTokens ?? 0,
    eval_duration: ns(c.evalMs ?? end - first),
  };
}

export interface Piece {
  content: string;
  thinking?: string | undefined;
  toolCalls?: OllamaToolCall[] | undefined;
}

/** The body of a line, between the fixed head and `done` (chat: `message`; generate: `response`). */
export function pieceJson(kind: Kind, p: Piece): Record<string, unknown> {
  if (kind === "generate") {
    const out: Record<string, unknown> = { response: p.content };
    if (p.thinking) out.thinking = p.thinking;
    return out;
  }
  const message: Record<string, unknown> = { role: "assistant", content: p.content };
  if (p.thinking) message.thinking = p.thinking;
  if (p.toolCalls && p.toolCalls.length > 0) message.tool_calls = p.toolCalls;
  return { message };
}

/** One line's object: `{model, created_at, …piece, done}` (+ final fields). */
export function lineObject(
  model: string,
  createdAt: string,
  kind: Kind,
  p: Piece,
  final: Record<string, unknown> | null,
): Record<string, unknown> {
  return {
    model,
    created_at: createdAt,
    ...pieceJson(kind, p),
    done: final !== null,
    ...(final ?? {}),
  };
}

/** An upstream number, if it is one. */
export const num = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) ? v : undefined;

/** `usage` and llama.cpp's `timings` of a chunk or an answer, into `c`. */
export function readCounts(c: Counts, u: unknown, t: unknown): void {
  if (typeof u === "object" && u !== null) {
    const usage = u as Record<string, unknown>;
    c.promptTokens = num(usage.prompt_tokens) ?? c.promptTokens;
    c.evalTokens = num(usage.completion_tokens) ?? c.evalTokens;
  }
  if (typeof t === "object" && t !== null) {
    const tm = t as Record<string, unknown>;
    c.promptTokens ??= num(tm.prompt_n);
    c.evalTokens ??= num(tm.predicted_n);
    c.promptMs = num(tm.prompt_ms) ?? c.promptMs;
    c.evalMs = num(tm.predicted_ms) ?? c.evalMs;
  }
}
