/**
 * Anthropic Messages request → OpenAI chat completions request (docs/translation.md §3.1). Only fields
 * with an OpenAI meaning are written; everything else (`metadata`, `cache_control`,
 * `container`, `context_management`, `service_tier`, `mcp_servers`, …) is dropped rather
 * than forwarded, because strict servers reject unknown fields.
 */

import type { Profile } from "../../chat/profile.ts";
import type { OaiChatRequest, OaiMessage } from "../../chat/wire.ts";
import type { CountTokensRequest, MessagesRequest } from "../wire.ts";
import { systemTexts, translateMessages } from "./messages.ts";
import { translateTools } from "./tools.ts";

export interface RequestOptions {
  profile: Profile;
  /** `model` as the upstream should see it (`use_model_name`, else the requested name). */
  upstreamModel: string;
  /** Tokens the context leaves for the answer; null when nothing tells (then no clamp). */
  maxTokensCap?: number | null;
}

/** The fields besides messages and tools that change what the chat template renders. */
export type TemplateFields = Pick<OaiChatRequest, "reasoning_effort" | "chat_template_kwargs">;

/**
 * The prompt part of a request: what the chat template renders (and count_tokens counts).
 * `/v1/messages` and `count_tokens` both build it here, so a count templates exactly what the
 * request would send — thinking switches included (`count-tokens.test.ts` "thinking").
 */
export interface Prompt {
  messages: OaiMessage[];
  tools: Pick<OaiChatRequest, "tools" | "tool_choice" | "parallel_tool_calls">;
  template: TemplateFields;
}

export function translatePrompt(req: CountTokensRequest, profile: Profile): Prompt {
  const tools = translateTools(req.tools, req.tool_choice, profile);
  const { system: mid, messages } = translateMessages(req.messages, profile);
  const system = [...systemTexts(req.system), ...mid];
  // One leading system message: many templates reject a system turn after index 0.
  if (system.length > 0) messages.unshift({ role: "system", content: system.join("\n") });
  const { thinking_budget_tokens: _budget, ...template } = thinkingFields(req, profile);
  return { messages, tools, template };
}

/** `prompt` is `translatePrompt(req, opts.profile)`, passed when the caller needs it too. */
export function toOpenAI(
  req: MessagesRequest,
  opts: RequestOptions,
  prompt: Prompt = translatePrompt(req, opts.profile),
): OaiChatRequest {
  const { messages, tools, template } = prompt;
  const cap = opts.maxTokensCap;
  const out: OaiChatRequest = {
    model: opts.upstreamModel,
    messages,
    max_tokens: cap == null ? req.max_tokens : Math.max(1, Math.min(req.max_tokens, cap)),
    stream: req.stream === true,
    ...tools,
  };
  // Usage arrives in a last `choices: []` chunk only when asked for (OpenAI `stream_options`).
  if (out.stream) out.stream_options = { include_usage: true };
  // `stop_sequences` are not sent: qm applies them to the answer (stop-match.ts), since no
  // OpenAI server says which stop string matched.
  if (req.temperature !== undefined) out.temperature = req.temperature;
  if (req.top_p !== undefined) out.top_p = req.top_p;
  // Not OpenAI, but llama.cpp, vLLM and mistral.rs all read it.
  if (req.top_k !== undefined) out.top_k = req.top_k;
  Object.assign(out, template);
  // llama.cpp's thinking budget acts while sampling; it does not change the template.
  const budget = thinkingFields(req, opts.profile).thinking_budget_tokens;
  if (budget !== undefined) out.thinking_budget_tokens = budget;
  const format = req.output_config?.format ?? req.output_format;
  if (format?.type === "json_schema" && typeof format.schema === "object" && format.schema) {
    out.response_format = {
      type: "json_schema",
      json_schema: { name: "response", schema: format.schema },
    };
  }
  const last = messages.at(-1);
  if (opts.profile === "vllm" && last?.role === "assistant" && !last.tool_calls) {
    // A trailing assistant turn is a prefill: vLLM continues it only when told to.
    out.continue_final_message = true;
    out.add_generation_prompt = false;
  }
  return out;
}

type ThinkingFields = Pick<
  OaiChatRequest,
  "reasoning_effort" | "chat_template_kwargs" | "thinking_budget_tokens"
>;

/**
 * Thinking has no OpenAI standard (docs/translation.md §3.4). `chat_template_kwargs.enable_thinking` switches
 * Qwen3-style templates on llama.cpp and vLLM; llama.cpp reads `thinking_budget_tokens`;
 * gpt-oss-style models read `reasoning_effort`, bucketed from the budget as LiteLLM does.
 */
function thinkingFields(req: CountTokensRequest, profile: Profile): ThinkingFields {
  const out: ThinkingFields = {};
  const effort = req.output_config?.effort;
  // OpenAI knows low/medium/high; Anthropic adds "max".
  if (typeof effort === "string") out.reasoning_effort = effort === "max" ? "high" : effort;
  const thinking = req.thinking;
  if (!thinking) return out;
  if (thinking.type === "disabled") {
    out.chat_template_kwargs = { enable_thinking: false };
    if (profile === "llamacpp") out.thinking_budget_tokens = 0;
    return out;
  }
  out.chat_template_kwargs = { enable_thinking: true };
  const budget = thinking.budget_tokens;
  if (thinking.type === "enabled" && typeof budget === "number") {
    if (profile === "llamacpp") out.thinking_budget_tokens = budget;
    else out.reasoning_effort ??= budget < 4096 ? "low" : budget < 16384 ? "medium" : "high";
  }
  return out;
}
