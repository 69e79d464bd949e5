/**
 * How a response ended and what it cost, shared by the streaming and non-streaming
 * translations (docs/translation.md §3.5).
 */

import type { OaiUsage } from "../../chat/wire.ts";
import type { StopReason, Usage } from "../wire.ts";

export interface Ending {
  stop_reason: StopReason;
  stop_sequence: string | null;
}

/**
 * `finish_reason` → `stop_reason`. OpenAI does not say which stop string matched; vLLM does in
 * its non-standard `stop_reason` (string or token id), so a string that is one of the request's
 * `stop_sequences` gives `stop_sequence`. Tool blocks in the answer mean `tool_use` whatever the
 * server said (vLLM reports "stop" for a forced tool), unless the answer was cut by the limit.
 */
export function ending(
  finish: string | null,
  upstreamStop: unknown,
  stopSequences: readonly string[],
  hasTools: boolean,
): Ending {
  if (finish === "length") return { stop_reason: "max_tokens", stop_sequence: null };
  if (finish === "content_filter") return { stop_reason: "refusal", stop_sequence: null };
  if (hasTools || finish === "tool_calls" || finish === "function_call") {
    return { stop_reason: "tool_use", stop_sequence: null };
  }
  if (typeof upstreamStop === "string" && stopSequences.includes(upstreamStop)) {
    return { stop_reason: "stop_sequence", stop_sequence: upstreamStop };
  }
  return { stop_reason: "end_turn", stop_sequence: null };
}

function count(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.round(v) : null;
}

export interface UsageFallback {
  input: number;
  output: number;
}

/**
 * OpenAI usage → Anthropic usage. Anthropic's `input_tokens` excludes tokens read from the
 * prompt cache, which it reports apart as `cache_read_input_tokens` (LiteLLM and CCR map it
 * the same way). The cached count comes from `prompt_tokens_details.cached_tokens` (vLLM,
 * newer llama.cpp), else llama.cpp's `timings.cache_n`. Local servers never write a cache
 * entry the way Anthropic bills it, so `cache_creation_input_tokens` is 0. Missing counts
 * fall back to the caller's estimate.
 */
export function anthropicUsage(
  usage: OaiUsage | null | undefined,
  cacheN: unknown,
  fallback: UsageFallback,
): Usage {
  const prompt = count(usage?.prompt_tokens);
  const cached = Math.min(
    count(usage?.prompt_tokens_details?.cached_tokens) ?? count(cacheN) ?? 0,
    prompt ?? Number.POSITIVE_INFINITY,
  );
  return {
    input_tokens: prompt === null ? fallback.input : Math.max(prompt - cached, 0),
    output_tokens: count(usage?.completion_tokens) ?? fallback.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: prompt === null ? 0 : cached,
  };
}

/** Rough tokens of generated text when the server reported none (~4 characters a token). */
export function estimateOutput(chars: number): number {
  return Math.ceil(chars / 4);
}
