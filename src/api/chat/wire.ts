/**
 * The parts of the OpenAI chat completions API (https://platform.openai.com/docs/api-reference/chat)
 * that the translator writes and reads, plus the non-standard fields local servers add
 * (`reasoning_content` / `reasoning`, `top_k`, `chat_template_kwargs`, vLLM's `stop_reason`).
 */
export type OaiPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } };

export interface OaiToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface OaiMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | OaiPart[] | null;
  tool_calls?: OaiToolCall[];
  tool_call_id?: string;
  reasoning_content?: string;
  reasoning?: string;
}

export interface OaiTool {
  type: "function";
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

export type OaiToolChoice =
  | "auto"
  | "none"
  | "required"
  | { type: "function"; function: { name: string } };

export interface OaiChatRequest {
  model: string;
  messages: OaiMessage[];
  max_tokens: number;
  stream: boolean;
  stream_options?: { include_usage: boolean };
  stop?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  tools?: OaiTool[];
  tool_choice?: OaiToolChoice;
  parallel_tool_calls?: boolean;
  reasoning_effort?: string;
  chat_template_kwargs?: Record<string, unknown>;
  thinking_budget_tokens?: number;
  response_format?: Record<string, unknown>;
  continue_final_message?: boolean;
  add_generation_prompt?: boolean;
}

/** Usage as the servers report it; every field may be missing. */
export interface OaiUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

/** A tool call in a response or a stream delta (`arguments` is sometimes already an object). */
export interface OaiToolCallDelta {
  index?: number;
  id?: string | null;
  type?: string;
  function?: { name?: string | null; arguments?: unknown } | null;
}
