/**
 * A Responses API request → a chat completions request for the upstream. Unknown fields are
 * ignored (clients send `store`, `include`, `prompt_cache_key`, `client_metadata`, …); a field
 * that is there but malformed is a 400 naming it.
 */
import type { OaiChatRequest, OaiMessage } from "../../chat/wire.ts";
import { badRequest } from "../../request/body.ts";
import { toMessages } from "./input.ts";
import { toToolChoice, toTools } from "./tools.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Asked for when the request has no `max_output_tokens` (the chat request carries a number). */
export const DEFAULT_MAX_TOKENS = 4096;

export interface RequestOptions {
  /** The model name sent upstream. */
  upstreamModel: string;
  /** The conversation a `previous_response_id` continues, replayed before this turn. */
  history?: OaiMessage[];
}

export interface Translated {
  chat: OaiChatRequest;
  /** The built-in tools left out (for the log line). */
  dropped: string[];
  /** This turn's input as chat messages, without `instructions` (what a store keeps). */
  turn: OaiMessage[];
  /** Functions offered from inside `namespace` tools → their namespace. */
  namespaces: Map<string, string>;
}

function num(body: Obj, key: string, min: number, max: number): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max) {
    throw badRequest(`${key} must be a number from ${min} to ${max}`, key);
  }
  return v;
}

export function toChat(body: Obj, opts: RequestOptions): Translated {
  if (body.input === undefined) throw badRequest("input is required", "input");
  const tools = toTools(body.tools);
  const max = num(body, "max_output_tokens", 1, Number.MAX_SAFE_INTEGER);
  if (max !== undefined && !Number.isInteger(max)) {
    throw badRequest("max_output_tokens must be an integer", "max_output_tokens");
  }
  // `instructions` apply to this turn only: a continued conversation does not carry them.
  const system = toMessages([], body.instructions);
  const turn = toMessages(body.input, undefined);
  const chat: OaiChatRequest = {
    model: opts.upstreamModel,
    messages: [...system, ...(opts.history ?? []), ...turn],
    max_tokens: max ?? DEFAULT_MAX_TOKENS,
    stream: body.stream === true,
  };
  if (chat.stream) chat.stream_options = { include_usage: true };
  const temperature = num(body, "temperature", 0, 2);
  if (temperature !== undefined) chat.temperature = temperature;
  const topP = num(body, "top_p", 0, 1);
  if (topP !== undefined) chat.top_p = topP;
  if (tools.tools.length > 0) {
    chat.tools = tools.tools;
    const choice = toToolChoice(body.tool_choice);
    if (choice !== undefined) chat.tool_choice = choice;
    if (typeof body.parallel_tool_calls === "boolean") {
      chat.parallel_tool_calls = body.parallel_tool_calls;
    }
  }
  const reasoning = body.reasoning;
  if (isObj(reasoning) && typeof reasoning.effort === "string") {
    // OpenAI's efforts include "minimal" and "xhigh"; chat servers know low/medium/high.
    const e = reasoning.effort;
    chat.reasoning_effort = e === "minimal" || e === "none" ? "low" : e === "xhigh" ? "high" : e;
  }
  const format = isObj(body.text) ? body.text.format : undefined;
  if (isObj(format)) chat.response_format = responseFormat(format);
  return { chat, dropped: tools.dropped, turn, namespaces: tools.namespaces };
}

/** `text.format` → chat's `response_format`; the Responses form is flat, chat's nested. */
function responseFormat(f: Obj): Record<string, unknown> {
  if (f.type === "json_schema") {
    if (!isObj(f.schema))
      throw badRequest("text.format.schema must be an object", "text.format.schema");
    const js: Obj = { name: typeof f.name === "string" ? f.name : "response", schema: f.schema };
    if (typeof f.strict === "boolean") js.strict = f.strict;
    if (typeof f.description === "string") js.description = f.description;
    return { type: "json_schema", json_schema: js };
  }
  if (f.type === "json_object") return { type: "json_object" };
  if (f.type === "text") return { type: "text" };
  throw badRequest(
    'text.format.type must be "text", "json_object" or "json_schema"',
    "text.format.type",
  );
}
