/**
 * Ollama `/api/chat` and `/api/generate` requests → the upstream's OpenAI chat completions
 * request (or, for a `raw` generate, its completions request), docs/translation.md §5. Pure:
 * the body in, the upstream body and what the route needs to know out. The body is checked
 * against its schema first (`wire.ts`): a malformed field is a 400 naming it.
 */

import { type Profile, reasoningFields } from "../chat/profile.ts";
import type { OaiMessage, OaiPart, OaiToolCall } from "../chat/wire.ts";
import { badRequest } from "../request/body.ts";
import { keepAliveMs } from "./keep-alive.ts";
import {
  imageParts,
  isObject,
  type Json,
  responseFormat,
  sampling,
  type Think,
  thinkFields,
} from "./options.ts";
import { ChatBody, check, GenerateBody, type MessageBody } from "./wire.ts";

/** One Ollama chat or generate request, read, and the chat request it becomes upstream. */
export interface OllamaRequest {
  /** The model as the client named it (echoed in every answer). */
  name: string;
  stream: boolean;
  numCtx: number | undefined;
  /** `keep_alive` in ms (`0` unload after, `-1` for ever), or undefined. */
  keepAliveMs: number | undefined;
  think: Think;
  /** Nothing to answer: the request only loads (or, with `keep_alive: 0`, unloads) the model. */
  loadOnly: boolean;
  /** The upstream path and body. */
  path: "/v1/chat/completions" | "/v1/completions";
  upstream: Json;
  /** Tools were offered: only then can the answer end in tool calls. */
  offersTools: boolean;
}

/** What both routes read the same way. */
function common(body: ChatBody | GenerateBody, profile: Profile, upstreamModel: string) {
  // Ollama streams unless told `false`.
  const stream = body.stream ?? true;
  const { fields, numCtx } = sampling(body.options);
  const t = body.think ?? undefined;
  const upstream: Json = { model: upstreamModel, ...fields, ...thinkFields(t, profile) };
  const format = responseFormat(body.format);
  if (format) upstream.response_format = format;
  upstream.stream = stream;
  // Token counts for the final line come from the usage chunk (llama.cpp, vLLM).
  if (stream) upstream.stream_options = { include_usage: true };
  return { stream, numCtx, think: t, keepAliveMs: keepAliveMs(body.keep_alive), upstream };
}

export function modelName(body: Json): string {
  const m = body.model;
  if (m === undefined || m === null || m === "") {
    throw badRequest('the request has no "model" field', "model");
  }
  if (typeof m !== "string") throw badRequest('"model" must be a string', "model");
  return m;
}

/** `/api/chat`. */
export function chatRequest(raw: Json, profile: Profile, upstreamModel: string): OllamaRequest {
  const name = modelName(raw);
  const body = check<ChatBody>(ChatBody, raw);
  const c = common(body, profile, upstreamModel);
  const messages = toMessages(body.messages ?? [], profile);
  const tools = toTools(body.tools);
  if (tools.length > 0) c.upstream.tools = tools;
  c.upstream.messages = messages;
  return {
    name,
    ...c,
    loadOnly: messages.length === 0,
    path: "/v1/chat/completions",
    offersTools: tools.length > 0,
  };
}

/** `/api/generate`: the prompt as a user turn (after `system`), or as it is when `raw`. */
export function generateRequest(raw: Json, profile: Profile, upstreamModel: string): OllamaRequest {
  const name = modelName(raw);
  const body = check<GenerateBody>(GenerateBody, raw);
  const c = common(body, profile, upstreamModel);
  const prompt = body.prompt ?? "";
  const system = body.system ?? "";
  if ((body.suffix ?? "") !== "") {
    throw badRequest(
      '"suffix" (fill-in-the-middle) is not supported; send the prompt alone',
      "suffix",
    );
  }
  const images = imageParts(body.images);
  const base = { name, ...c, offersTools: false, loadOnly: prompt === "" && images.length === 0 };
  if (body.raw === true) {
    if (images.length > 0) throw badRequest('"images" cannot be sent with "raw"', "images");
    // The prompt is already templated: the completions endpoint takes it as it is.
    const { chat_template_kwargs: _k, reasoning_effort: _e, ...rest } = c.upstream;
    return { ...base, path: "/v1/completions", upstream: { ...rest, prompt } };
  }
  const messages: OaiMessage[] = [];
  if (system !== "") messages.push({ role: "system", content: system });
  messages.push({
    role: "user",
    content: images.length > 0 ? [{ type: "text", text: prompt }, ...images] : prompt,
  });
  c.upstream.messages = messages;
  return { ...base, path: "/v1/chat/completions", upstream: c.upstream };
}

function toMessages(raw: readonly MessageBody[], profile: Profile): OaiMessage[] {
  const out: OaiMessage[] = [];
  /** The latest assistant turn's calls not answered yet: a tool result takes its id from them. */
  let open: OaiToolCall[] = [];
  let nextId = 0;
  raw.forEach((m) => {
    const role = m.role;
    const content = m.content ?? "";
    const images = imageParts(m.images);
    const parts: OaiPart[] | string =
      images.length > 0
        ? [...(content ? [{ type: "text" as const, text: content }] : []), ...images]
        : content;
    if (role === "tool") {
      const toolName = m.tool_name ?? "";
      const given = m.tool_call_id ?? "";
      const k = open.findIndex((c) =>
        given !== "" ? c.id === given : toolName === "" || c.function.name === toolName,
      );
      const id = k >= 0 ? open.splice(k, 1)[0]!.id : given || `call_${nextId++}`;
      out.push({ role: "tool", content, tool_call_id: id });
      return;
    }
    const msg: OaiMessage = { role, content: parts };
    if (role === "assistant") {
      const calls = toToolCalls(m.tool_calls ?? [], () => `call_${nextId++}`);
      if (calls.length > 0) {
        msg.tool_calls = calls;
        if (content === "") msg.content = null;
      }
      open = calls.slice();
      const thinking = m.thinking ?? "";
      if (thinking !== "") for (const f of reasoningFields(profile)) msg[f] = thinking;
    }
    out.push(msg);
  });
  return out;
}

/** Ollama's assistant tool calls (`arguments` an object) → OpenAI's (`arguments` a string). */
function toToolCalls(raw: NonNullable<MessageBody["tool_calls"]>, id: () => string): OaiToolCall[] {
  return raw.map((c) => {
    const f = c.function;
    const args = f.arguments ?? {};
    const id0 = (c as { id?: unknown }).id;
    const given = typeof id0 === "string" && id0 !== "" ? id0 : null;
    return {
      id: given ?? id(),
      type: "function" as const,
      function: { name: f.name, arguments: typeof args === "string" ? args : JSON.stringify(args) },
    };
  });
}

/** Ollama's tools are OpenAI's shape already (their names checked by the schema): passed on. */
function toTools(raw: ChatBody["tools"]): Json[] {
  if (!raw) return [];
  return raw.map((t) => {
    const f = t.function as Json & { name: string };
    const fn: Json = {
      name: f.name,
      parameters: isObject(f.parameters) ? f.parameters : { type: "object", properties: {} },
    };
    if (typeof f.description === "string") fn.description = f.description;
    return { type: "function", function: fn };
  });
}
