/**
 * Responses `input` (a string or a list of items) → chat `messages`
 * (https://platform.openai.com/docs/api-reference/responses/create). Item kinds: `message`
 * (roles user/assistant/system/developer; `input_text`, `input_image`, `output_text`,
 * `refusal` parts), `function_call`, `function_call_output`, `reasoning`. Consecutive
 * `function_call` items become one assistant turn with several `tool_calls`, as chat servers
 * expect. Anything malformed is a 400 naming the field.
 */

import type { OaiMessage, OaiPart, OaiToolCall } from "../../chat/wire.ts";
import { badRequest } from "../../request/body.ts";

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function str(v: unknown, field: string): string {
  if (typeof v !== "string") throw badRequest(`${field} must be a string`, field);
  return v;
}

/** A message's content: a string, or parts. Returns plain text when every part is text. */
function content(v: unknown, field: string): string | OaiPart[] {
  if (typeof v === "string") return v;
  if (!Array.isArray(v)) throw badRequest(`${field} must be a string or an array of parts`, field);
  const parts: OaiPart[] = [];
  v.forEach((p, i) => {
    const f = `${field}[${i}]`;
    if (!isObj(p)) throw badRequest(`${f} must be an object`, f);
    switch (p.type) {
      case "input_text":
      case "output_text":
      case "text":
        parts.push({ type: "text", text: str(p.text, `${f}.text`) });
        return;
      case "refusal":
        parts.push({ type: "text", text: str(p.refusal, `${f}.refusal`) });
        return;
      case "input_image": {
        const url = p.image_url;
        if (typeof url !== "string" || url === "") {
          // `file_id` images live in OpenAI's file store, which qm does not have.
          throw badRequest(`${f}.image_url must be a URL or a data: URL`, `${f}.image_url`);
        }
        parts.push({ type: "image_url", image_url: { url } });
        return;
      }
      default:
        throw badRequest(
          `${f}.type ${JSON.stringify(p.type)} is not a supported part`,
          `${f}.type`,
        );
    }
  });
  if (parts.every((p) => p.type === "text")) {
    return parts.map((p) => (p as { text: string }).text).join("");
  }
  return parts;
}

/** Output text of a `function_call_output`: a string, or input_text parts joined. */
function outputText(v: unknown, field: string): string {
  if (typeof v === "string") return v;
  const c = content(v, field);
  if (typeof c === "string") return c;
  return c.map((p) => (p.type === "text" ? p.text : "")).join("");
}

/** `instructions` first as a system message, then the input's turns. */
export function toMessages(input: unknown, instructions: unknown): OaiMessage[] {
  const out: OaiMessage[] = [];
  if (instructions !== undefined && instructions !== null) {
    out.push({ role: "system", content: str(instructions, "instructions") });
  }
  if (typeof input === "string") {
    out.push({ role: "user", content: input });
    return out;
  }
  if (!Array.isArray(input))
    throw badRequest("input must be a string or an array of items", "input");
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
    if (!isObj(item)) throw badRequest(`${f} must be an object`, f);
    const type = item.type ?? (item.role !== undefined ? "message" : undefined);
    if (type !== "function_call") calls = null;
    switch (type) {
      case "message": {
        const role = item.role;
        const c = content(item.content, `${f}.content`);
        if (role === "user") out.push({ role: "user", content: c });
        else if (role === "system" || role === "developer") {
          out.push({ role: "system", content: typeof c === "string" ? c : textOf(c) });
        } else if (role === "assistant") {
          const m: OaiMessage = {
            role: "assistant",
            content: typeof c === "string" ? c : textOf(c),
          };
          if (reasoning) m.reasoning_content = reasoning;
          reasoning = null;
          out.push(m);
        } else
          throw badRequest(`${f}.role must be user, assistant, system or developer`, `${f}.role`);
        return;
      }
      case "function_call": {
        const call: OaiToolCall = {
          id: str(item.call_id, `${f}.call_id`),
          type: "function",
          function: {
            name: str(item.name, `${f}.name`),
            arguments: str(item.arguments, `${f}.arguments`),
          },
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
          tool_call_id: str(item.call_id, `${f}.call_id`),
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
