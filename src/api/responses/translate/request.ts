/**
 * A Responses API request → a chat completions request for the upstream (docs/translation.md
 * §4). The body is checked against its schema first (`../wire.ts`): unknown fields are ignored
 * (clients send `store`, `include`, `prompt_cache_key`, `client_metadata`, …); a field that is
 * there but malformed is a 400 naming it.
 */
import type { OaiChatRequest, OaiMessage } from "../../chat/wire.ts";
import { check, JsonSchemaFormat, type ResponsesRequest, ResponsesRequestSchema } from "../wire.ts";
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

/** A request body, checked against the Responses schema (or the 400 naming its first problem). */
export function checkRequest(body: Obj): ResponsesRequest {
  return check<ResponsesRequest>(ResponsesRequestSchema, body);
}

export function toChat(raw: Obj, opts: RequestOptions): Translated {
  const body = checkRequest(raw);
  const tools = toTools(body.tools);
  // `instructions` apply to this turn only: a continued conversation does not carry them.
  const system = toMessages([], body.instructions);
  const turn = toMessages(body.input, undefined);
  const chat: OaiChatRequest = {
    model: opts.upstreamModel,
    messages: [...system, ...(opts.history ?? []), ...turn],
    max_tokens: body.max_output_tokens ?? DEFAULT_MAX_TOKENS,
    stream: body.stream === true,
  };
  if (chat.stream) chat.stream_options = { include_usage: true };
  if (typeof body.temperature === "number") chat.temperature = body.temperature;
  if (typeof body.top_p === "number") chat.top_p = body.top_p;
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
  const format = body.text?.format;
  if (format) chat.response_format = responseFormat(format);
  return { chat, dropped: tools.dropped, turn, namespaces: tools.namespaces };
}

/** `text.format` → chat's `response_format`; the Responses form is flat, chat's nested. */
function responseFormat(f: Obj & { type: string }): Record<string, unknown> {
  if (f.type === "json_schema") {
    const { schema } = check<{ schema: Obj }>(JsonSchemaFormat, f, "text.format");
    const js: Obj = { name: typeof f.name === "string" ? f.name : "response", schema };
    if (typeof f.strict === "boolean") js.strict = f.strict;
    if (typeof f.description === "string") js.description = f.description;
    return { type: "json_schema", json_schema: js };
  }
  return { type: f.type };
}
