/**
 * A token estimate for when no tokenizer can be asked (count_tokens without upstream support,
 * usage a server did not report). ~3.5 UTF-8 bytes a token is the usual figure for English
 * and code with BPE vocabularies (CCR and LiteLLM estimate similarly); it errs a little high,
 * which is the safe side for a client deciding when to compact its context. Images count a
 * flat 768 tokens (a typical vision-encoder tile budget) instead of their base64 length.
 */
import type { OaiMessage } from "./openai-types.ts";
import type { Prompt } from "./request.ts";

const encoder = new TextEncoder();
const IMAGE_TOKENS = 768;
/** Role markers and separators a chat template adds around each message. */
const PER_MESSAGE = 4;

export function estimateText(text: string): number {
  return Math.ceil(encoder.encode(text).byteLength / 3.5);
}

function messageTokens(m: OaiMessage): number {
  let n = PER_MESSAGE;
  if (typeof m.content === "string") n += estimateText(m.content);
  else if (Array.isArray(m.content)) {
    for (const p of m.content) n += p.type === "text" ? estimateText(p.text) : IMAGE_TOKENS;
  }
  if (m.reasoning_content) n += estimateText(m.reasoning_content);
  else if (m.reasoning) n += estimateText(m.reasoning);
  for (const c of m.tool_calls ?? []) n += estimateText(c.function.name + c.function.arguments);
  return n;
}

export function estimatePrompt(prompt: Prompt): number {
  let n = 0;
  for (const m of prompt.messages) n += messageTokens(m);
  if (prompt.tools.tools) n += estimateText(JSON.stringify(prompt.tools.tools));
  return Math.max(1, n);
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
