/**
 * OpenAI `chat.completion` → Anthropic `Message` (docs/translation.md §3.5). Blocks go in Anthropic's
 * order, thinking → text → tool_use. Reasoning is read from `reasoning_content` (llama.cpp,
 * mistral.rs) or `reasoning` (vLLM since the rename, vllm #50624). Every thinking block carries
 * a `signature` string: a local model has none to give, and a missing one crashes clients.
 * An answer with nothing at all is `content: []`, never an empty text block, which would come
 * back in the history and be rejected ("text content blocks must be non-empty").
 */
import { QmError } from "../../../shared/errors.ts";
import { contentText, finishReason, reasoningText } from "../../chat/chunk.ts";
import { type ToolInput, toolInput } from "../../chat/tool-json.ts";
import type { OaiToolCallDelta, OaiUsage } from "../../chat/wire.ts";
import { sanitizeToolId } from "../ids.ts";
import type { ResponseBlock, ResponseMessage } from "../wire.ts";
import { anthropicUsage, ending, estimateOutput } from "./finish.ts";
import { firstMatch } from "./stop-match.ts";

export interface ResponseOptions {
  id: string;
  /** The model name the client asked for (echoed back, as Anthropic does). */
  model: string;
  stopSequences: readonly string[];
  /** Prompt tokens to report when the server sent no usage. */
  /** Prompt tokens when the answer has no usage: the upstream's count, else the estimate. */
  inputTokens: number;
  /** Told about tool arguments that had to be repaired or replaced (for the log). */
  onToolInput?: (name: string, how: ToolInput["how"]) => void;
}

interface OaiChoice {
  message?: {
    content?: unknown;
    reasoning_content?: unknown;
    reasoning?: unknown;
    tool_calls?: OaiToolCallDelta[] | null;
    function_call?: { name?: unknown; arguments?: unknown } | null;
  };
  finish_reason?: string | null;
  stop_reason?: unknown;
}

interface OaiCompletion {
  choices?: OaiChoice[];
  usage?: OaiUsage | null;
  timings?: { cache_n?: unknown };
}

export function fromOpenAI(body: unknown, opts: ResponseOptions): ResponseMessage {
  const completion = (body ?? {}) as OaiCompletion;
  const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
  if (!choice) {
    throw new QmError("upstream_failed", `model "${opts.model}" answered without any choices`);
  }
  const msg = choice.message ?? {};
  const content: ResponseBlock[] = [];
  let chars = 0;
  const reasoning = reasoningText(msg);
  if (reasoning !== "") {
    content.push({ type: "thinking", thinking: reasoning, signature: "" });
    chars += reasoning.length;
  }
  let text = contentText(msg.content);
  // Stop sequences are qm's to apply (`stop-match.ts`): the text ends before the first one.
  const hit = firstMatch(text, opts.stopSequences);
  if (hit) text = text.slice(0, hit.at);
  if (text !== "") {
    content.push({ type: "text", text });
    chars += text.length;
  }
  // Generation ends at the stop sequence: no call after it was made.
  const calls: OaiToolCallDelta[] = hit ? [] : [...(msg.tool_calls ?? [])];
  if (msg.function_call && !hit)
    calls.push({ function: msg.function_call as OaiToolCallDelta["function"] });
  for (const call of calls) {
    const name = call.function?.name;
    if (typeof name !== "string" || name === "") continue;
    const args = call.function?.arguments;
    const parsed = toolInput(args);
    if (parsed.how !== "ok") opts.onToolInput?.(name, parsed.how);
    chars += typeof args === "string" ? args.length : 0;
    content.push({ type: "tool_use", id: sanitizeToolId(call.id), name, input: parsed.input });
  }
  const hasTools = content.some((b) => b.type === "tool_use");
  const end = hit
    ? { stop_reason: "stop_sequence" as const, stop_sequence: hit.stop }
    : ending(finishReason(choice), choice.stop_reason, opts.stopSequences, hasTools);
  return {
    id: opts.id,
    type: "message",
    role: "assistant",
    model: opts.model,
    content,
    ...end,
    usage: anthropicUsage(completion.usage, completion.timings?.cache_n, {
      input: opts.inputTokens,
      output: estimateOutput(chars),
    }),
  };
}
