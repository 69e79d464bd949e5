/**
 * A chat completion → a Response object
 * (https://platform.openai.com/docs/api-reference/responses/object): output items in the
 * order a model produces them (reasoning, the message, function calls), `status` completed or
 * incomplete (`max_output_tokens` on a `length` finish), usage in the Responses names.
 */

import { contentText, finishReason, reasoningText } from "../../chat/chunk.ts";
import { estimateText } from "../../chat/estimate-text.ts";
import type { OaiUsage } from "../../chat/wire.ts";
import { itemId } from "./ids.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

export interface Shape {
  id: string;
  /** The model name the client asked for. */
  model: string;
  createdAt: number;
  /** Echoed request fields (`instructions`, `tools`, `temperature`, …), as OpenAI does. */
  echo: Obj;
  /** The `namespace` tool each namespaced function belongs to: its calls name it, as OpenAI's. */
  namespaces?: ReadonlyMap<string, string>;
}

export type OutputItem = Obj & { type: string; id: string };

export function messageItem(text: string, status = "completed", id = itemId("msg")): OutputItem {
  return {
    type: "message",
    id,
    status,
    role: "assistant",
    content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
  };
}

export function callItem(
  callId: string,
  name: string,
  args: string,
  status = "completed",
  id = itemId("fc"),
  namespace?: string,
): OutputItem {
  const item: OutputItem = {
    type: "function_call",
    id,
    status,
    call_id: callId,
    name,
    arguments: args,
  };
  if (namespace !== undefined) item.namespace = namespace;
  return item;
}

export function reasoningItem(text: string, id = itemId("rs")): OutputItem {
  return { type: "reasoning", id, summary: [{ type: "summary_text", text }] };
}

const count = (v: unknown) =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.round(v) : 0;

/** Output tokens qm counted itself, for when the upstream reports none. */
export interface OutputCount {
  output: number;
  reasoning: number;
}

const NONE: OutputCount = { output: 0, reasoning: 0 };
const given = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0;

/**
 * Usage in the Responses shape. What the upstream reports wins; what it leaves out comes from
 * `counted`: the output tokens of an answer cut before its usage, and `reasoning_tokens`, which
 * llama.cpp never reports (vLLM and OpenAI do, in `completion_tokens_details`). Reasoning is
 * part of the output, so it is never counted above it.
 */
export function usageOf(u: (OaiUsage & Obj) | null | undefined, counted = NONE): Obj {
  const input = count(u?.prompt_tokens);
  const output = given(u?.completion_tokens) ? count(u?.completion_tokens) : counted.output;
  const details = isObj(u?.completion_tokens_details) ? u.completion_tokens_details : {};
  const reasoning = given(details.reasoning_tokens)
    ? count(details.reasoning_tokens)
    : Math.min(counted.reasoning, output);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: count(u?.prompt_tokens_details?.cached_tokens) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: input + output,
  };
}

/** The Response object around finished output. */
export function responseObject(
  shape: Shape,
  status: "in_progress" | "completed" | "incomplete" | "failed",
  output: OutputItem[],
  usage: Obj | null,
  extra: Obj = {},
): Obj {
  return {
    id: shape.id,
    object: "response",
    created_at: shape.createdAt,
    status,
    error: null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    model: shape.model,
    output,
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: [],
    ...shape.echo,
    usage,
    ...extra,
  };
}

/** The function calls the answer ended with (the agent-loop hold). */
export const hasCalls = (output: OutputItem[]) => output.some((o) => o.type === "function_call");

/** A whole chat completion → a Response object. */
export function fromChat(json: unknown, shape: Shape): Obj {
  const choice = isObj(json) && Array.isArray(json.choices) ? json.choices[0] : undefined;
  const msg: Obj = isObj(choice) && isObj(choice.message) ? choice.message : {};
  const output: OutputItem[] = [];
  const thought = reasoningText(msg);
  if (thought !== "") output.push(reasoningItem(thought));
  const text = contentText(msg.content);
  if (text !== "") output.push(messageItem(text));
  if (Array.isArray(msg.tool_calls)) {
    msg.tool_calls.forEach((c, i) => {
      if (!isObj(c) || !isObj(c.function)) return;
      const f = c.function;
      const args =
        typeof f.arguments === "string" ? f.arguments : JSON.stringify(f.arguments ?? {});
      const callId = typeof c.id === "string" && c.id !== "" ? c.id : `call_${i}`;
      const name = typeof f.name === "string" ? f.name : "";
      output.push(
        callItem(callId, name, args, "completed", itemId("fc"), shape.namespaces?.get(name)),
      );
    });
  }
  const finish = isObj(choice) ? finishReason(choice) : null;
  // A whole answer has no deltas to count: its reasoning is estimated from its text.
  const reasoning = thought === "" ? 0 : estimateText(thought);
  const usage = usageOf(isObj(json) ? (json.usage as OaiUsage & Obj) : null, {
    output: reasoning + (text === "" ? 0 : estimateText(text)),
    reasoning,
  });
  return responseObject(shape, finish === "length" ? "incomplete" : "completed", output, usage);
}
