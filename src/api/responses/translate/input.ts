/**
 * Responses `input` (a string or a list of items) → chat `messages`
 * (https://platform.openai.com/docs/api-reference/responses/create). Item kinds: `message`
 * (roles user/assistant/system/developer; `input_text`, `input_image`, `output_text`,
 * `refusal` parts), `function_call`, `function_call_output`, `reasoning`. Consecutive
 * `function_call` items become one assistant turn with several `tool_calls`, as chat servers
 * expect. Each item and part is checked by its schema (`../wire.ts`): anything malformed is a
 * 400 naming the field.
 */

import type { OaiMessage, OaiPart, OaiToolCall } from "../../chat/wire.ts";
import { badRequest } from "../../request/body.ts";
import {
  Content,
  check,
  FunctionCallItem,
  FunctionCallOutputItem,
  ImagePart,
  MessageItem,
  RefusalPart,
  TextPart,
} from "../wire.ts";

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** A message's content: a string, or parts. Returns plain text when every part is text. */
function content(v: unknown, field: string): string | OaiPart[] {
  const c = check<string | Obj[]>(Content, v, field);
  if (typeof c === "string") return c;
  const parts = c.map((p, i) => part(p, `${field}[${i}]`));
  if (parts.every((p) => p.type === "text")) {
    return parts.map((p) => (p as { text: string }).text).join("");
  }
  return parts;
}

function part(p: Obj, f: string): OaiPart {
  switch (p.type) {
    case "input_text":
    case "output_text":
    case "text":
      return { type: "text", text: check<{ text: string }>(TextPart, p, f).text };
    case "refusal":
      return { type: "text", text: check<{ refusal: string }>(RefusalPart, p, f).refusal };
    case "input_image":
      return {
        type: "image_url",
        image_url: { url: check<{ image_url: string }>(ImagePart, p, f).image_url },
      };
    default:
      throw badRequest(`${f}.type ${JSON.stringify(p.type)} is not a supported part`, `${f}.type`);
  }
}

/** Output text of a `function_call_output`: a string, or input_text parts joined. */
function outputText(v: unknown, field: string): string {
  if (typeof v === "string") return v;
  const c = content(v, field);
  if (typeof c === "string") return c;
  return c.map((p) => (p.type === "text" ? p.text : "")).join("");
}

/**
 * `instructions` first as a system message, then the input's turns. Both as the request's
 * schema checked them (`../wire.ts`), or output items qm made.
 */
export function toMessages(
  input: string | readonly unknown[],
  instructions: string | null | undefined,
): OaiMessage[] {
  const out: OaiMessage[] = [];
  if (typeof instructions === "string") out.push({ role: "system", content: instructions });
  if (typeof input === "string") {
    out.push({ role: "user", content: input });
    return out;
  }
  let calls: OaiToolCall[] | null = null;
  /** Reasoning text from a `reasoning` item, for the assistant turn that follows it. */
  let reasoning: string | null = null;
  const assistant = (): OaiMessage => {
    const last = out.at(-1);
    if (last?.role === "assistant" && calls === null) return last;
    const m: OaiMessage = { role: "assistant", content: null };
    if (reasoning) m.reasoning_content = reasoning;
    reasoning = null;
    out.push(m);
    return m;
  };
  input.forEach((item, i) => {
    const f = `input[${i}]`;
    if (!isObj(item)) return;
    const type = item.type ?? (item.role !== undefined ? "message" : undefined);
    if (type !== "function_call") calls = null;
    switch (type) {
      case "message": {
        const { role } = check<{ role: string }>(MessageItem, item, f);
        const c = content(item.content, `${f}.content`);
        if (role === "user") out.push({ role: "user", content: c });
        else if (role === "assistant") {
          const m: OaiMessage = {
            role: "assistant",
            content: typeof c === "string" ? c : textOf(c),
          };
          if (reasoning) m.reasoning_content = reasoning;
          reasoning = null;
          out.push(m);
        } else out.push({ role: "system", content: typeof c === "string" ? c : textOf(c) });
        return;
      }
      case "function_call": {
        const fc = check<{ call_id: string; name: string; arguments: string }>(
          FunctionCallItem,
          item,
          f,
        );
        const call: OaiToolCall = {
          id: fc.call_id,
          type: "function",
          function: { name: fc.name, arguments: fc.arguments },
        };
        if (calls === null) {
          const m = assistant();
          m.tool_calls = [];
          calls = m.tool_calls;
        }
        calls.push(call);
        return;
      }
      case "function_call_output":
        out.push({
          role: "tool",
          tool_call_id: check<{ call_id: string }>(FunctionCallOutputItem, item, f).call_id,
          content: outputText(item.output, `${f}.output`),
        });
        return;
      case "reasoning":
        // Summaries the client got back; encrypted content means nothing to a local model.
        reasoning = summaryText(item.summary) || reasoning;
        return;
      case "item_reference":
        throw badRequest(
          `${f}: item_reference needs stored items, which qm does not keep`,
          `${f}.type`,
        );
      default:
        // Built-in tool calls and their outputs (web_search_call, …) have no chat form.
        return;
    }
  });
  return out;
}

function textOf(parts: OaiPart[]): string {
  return parts.map((p) => (p.type === "text" ? p.text : "")).join("");
}

function summaryText(v: unknown): string {
  if (!Array.isArray(v)) return "";
  return v
    .map((s) => (isObj(s) && typeof s.text === "string" ? s.text : ""))
    .filter((t) => t !== "")
    .join("\n");
}

/**
 * The input as a list of items, each with an `id` (`GET /v1/responses/{id}/input_items`): a
 * string is one user message; items without an id get one.
 */
export function inputItems(input: unknown, newId: () => string): Obj[] {
  if (typeof input === "string") {
    return [
      {
        id: newId(),
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: input }],
      },
    ];
  }
  if (!Array.isArray(input)) return [];
  return input.filter(isObj).map((item) => {
    const typed = item.type === undefined && item.role !== undefined ? { type: "message" } : {};
    return typeof item.id === "string" ? { ...typed, ...item } : { id: newId(), ...typed, ...item };
  });
}
