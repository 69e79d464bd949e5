/**
 * A token estimate for when no tokenizer can be asked: count_tokens for a model that is not
 * running (or cannot count), `message_start.usage.input_tokens`, the `max_tokens` clamp when
 * the upstream cannot count. Clients budget their context from it, so it must never be below
 * the real count; it aims to stay within 1.5× of it.
 *
 * It mirrors what a chat template and a BPE tokenizer do: a fixed template overhead (Llama 3's
 * system header with its dates), a few tokens a message for role markers, a tool preamble plus
 * each tool's JSON as templates render it (Llama 3 pretty-prints it with `indent=4`), a tool
 * call's wrapper, reasoning only after the last user turn (where templates keep it), and text
 * costed by character class: an ASCII word a token per 5 letters, letters against digits (ids,
 * hashes) a token per 2, every digit a token (Qwen and Gemma split digits one by one), ASCII
 * symbols a token per 2, a line break a token (half after a symbol, which Llama and Qwen join),
 * a CJK character a token, a Hangul syllable one and a half, accented Latin and Cyrillic letters
 * half a token, other letters (Greek, Hebrew, Arabic, Devanagari, Thai, …) a token and a word
 * of them one more (Phi-3's SentencePiece splits its leading space off), emoji,
 * combining marks and other symbols a token per 2 UTF-8 bytes. Images count a flat 768 tokens (a typical vision-encoder tile budget): what an
 * image really costs depends on the projector, which no counted prompt shows.
 *
 * Calibrated on `tests/api/anthropic/fixtures/token-counts.json`: the requests of
 * `scripts/llama/corpus.ts` (plain, system, 1–6 tools with schemas, Codex CLI's tools,
 * multi-turn, tool turns, thinking, images, code, JSON, logs, digits, CJK, Cyrillic, Hangul,
 * Greek, Hebrew, Arabic, Devanagari, Thai, emoji) counted by a real
 * llama-server through qm's exact path, with the Llama 3.1 template + llama-3 BPE vocab and the
 * Qwen3 template + Qwen2 vocab, and checked on Gemma 4 and Phi-3.5 (template + vocab) too.
 * `estimate.test.ts` holds it to `exact ≤ estimate` for all four and `estimate ≤ 1.5 × exact`
 * of the largest. One family-blind estimate cannot be within 1.5× of every family on short
 * prompts: Llama 3's template alone costs ~30 tokens, Qwen's ~3, Phi's ~2.
 */
import { estimateText } from "../../chat/estimate-text.ts";
import type { OaiMessage, OaiTool } from "../../chat/wire.ts";
import type { Prompt } from "./request.ts";

export { estimateText };

const encoder = new TextEncoder();
export const IMAGE_TOKENS = 768;
/** BOS, Llama 3's system header ("Cutting Knowledge Date: …"), the generation prompt. */
const TEMPLATE = 30;
/** Role markers and separators around each message. */
const PER_MESSAGE = 5;
/** Extra for a tool result: `<tool_response>` tags, Llama's `ipython` header. */
const PER_TOOL_RESULT = 6;
/** The wrapper of one tool call: `<tool_call>{"name": "…", "arguments": …}</tool_call>`. */
const PER_TOOL_CALL = 16;
/** The instructions a template puts before the tool list (Qwen's "# Tools …" is ~100). */
const TOOL_PREAMBLE = 100;
/** Separators around each tool in the list. */
const PER_TOOL = 4;
/** An assistant turn's reasoning: `<think>` tags. */
const PER_REASONING = 6;
function contentTokens(content: OaiMessage["content"]): number {
  if (typeof content === "string") return estimateText(content);
  let n = 0;
  for (const p of content ?? []) n += p.type === "text" ? estimateText(p.text) : IMAGE_TOKENS;
  return n;
}

function messageTokens(m: OaiMessage, rendersReasoning: boolean): number {
  let n = PER_MESSAGE + contentTokens(m.content);
  if (m.role === "tool") n += PER_TOOL_RESULT;
  const reasoning = m.reasoning_content ?? m.reasoning;
  if (reasoning && rendersReasoning) n += PER_REASONING + estimateText(reasoning);
  for (const c of m.tool_calls ?? []) {
    n += PER_TOOL_CALL + estimateText(c.function.name) + estimateText(c.function.arguments);
  }
  return n;
}

/** A tool as templates render it: Llama 3 as JSON indented by 4, Qwen compact. */
function toolTokens(t: OaiTool): number {
  return PER_TOOL + estimateText(JSON.stringify(t, null, 4));
}

export function estimatePrompt(prompt: Prompt): number {
  let n = TEMPLATE;
  // Templates render an assistant turn's reasoning only after the last user turn (Qwen3,
  // DeepSeek-R1, gpt-oss drop it from earlier turns; Llama 3 renders none).
  const lastUser = prompt.messages.findLastIndex((m) => m.role === "user");
  prompt.messages.forEach((m, i) => {
    n += messageTokens(m, i > lastUser);
  });
  const tools = prompt.tools.tools ?? [];
  if (tools.length > 0) n += TOOL_PREAMBLE;
  for (const t of tools) n += toolTokens(t);
  return n;
}

/**
 * An upper bound on the prompt's tokens (a token is at least one byte; images get a generous
 * 4096), used to skip exact counting when the answer cannot overflow the context anyway.
 */
export function promptUpperBound(prompt: Prompt): number {
  let n = 64;
  for (const m of prompt.messages) {
    n += 16;
    if (typeof m.content === "string") n += encoder.encode(m.content).byteLength;
    else if (Array.isArray(m.content)) {
      for (const p of m.content) n += p.type === "text" ? encoder.encode(p.text).byteLength : 4096;
    }
    n += encoder.encode(m.reasoning_content ?? m.reasoning ?? "").byteLength;
    for (const c of m.tool_calls ?? []) n += encoder.encode(JSON.stringify(c)).byteLength;
  }
  if (prompt.tools.tools) n += encoder.encode(JSON.stringify(prompt.tools.tools)).byteLength;
  return n;
}
