/**
 * Ollama `/api/chat` and `/api/generate` requests → the upstream's OpenAI chat completions
 * request (or, for a `raw` generate, its completions request). Pure: the body in, the upstream
 * body and what the route needs to know out; a malformed field is a 400 naming it.
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
  streamFlag,
  type Think,
  think,
  thinkFields,
} from "./options.ts";

export interface OllamaAsk {
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

const ROLES = new Set(["system", "user", "assistant", "tool"]);

function text(v: unknown, field: string): string {
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw badRequest(`"${field}" must be a string`, field);
  return v;
}

/** What both routes read the same way. */
function common(body: Json, profile: Profile, upstreamModel: string) {
  const stream = streamFlag(body.stream);
  const { fields, numCtx } = sampling(body.options);
  const t = think(body.think);
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
export function chatRequest(body: Json, profile: Profile, upstreamModel: string): OllamaAsk {
  const name = modelName(body);
  const c = common(body, profile, upstreamModel);
  const raw = body.messages;
  if (raw !== undefined && raw !== null && !Array.isArray(raw)) {
    throw badRequest('"messages" must be a list', "messages");
  }
  const messages = toMessages(raw ?? [], profile);
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
export function generateRequest(body: Json, profile: Profile, upstreamModel: string): OllamaAsk {
  const name = modelName(body);
  const c = common(body, profile, upstreamModel);
  const prompt = text(body.prompt, "prompt");
  const system = text(body.system, "system");
  if (text(body.suffix, "suffix") !== "") {
    throw badRequest(
      '"suffix" (fill-in-the-middle) is not supported; send the prompt alone',
      "suffix",
    );
  }
  const images = imageParts(body.images, "images");
  if (body.raw !== undefined && typeof body.raw !== "boolean") {
    throw badRequest('"raw" must be true or false', "raw");
  }
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

function toMessages(raw: unknown[], profile: Profile): OaiMessage[] {
  const out: OaiMessage[] = [];
  /** The latest assistant turn's calls not answered yet: a tool result takes its id from them. */
  let open: OaiToolCall[] = [];
  let nextId = 0;
  raw.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!isObject(m)) throw badRequest(`"${at}" must be an object`, at);
    const role = m.role;
    if (typeof role !== "string" || !ROLES.has(role)) {
      throw badRequest(
        `"${at}.role" must be "system", "user", "assistant" or "tool"`,
        `${at}.role`,
      );
    }
    const content = text(m.content, `${at}.content`);
    const images = imageParts(m.images, `${at}.images`);
    const parts: OaiPart[] | string =
      images.length > 0
        ? [...(content ? [{ type: "text" as const, text: content }] : []), ...images]
        : content;
    if (role === "tool") {
      const toolName = text(m.tool_name, `${at}.tool_name`);
      const given = text(m.tool_call_id, `${at}.tool_call_id`);
      const k = open.findIndex((c) =>
        given !== "" ? c.id === given : toolName === "" || c.function.name === toolName,
      );
      const id = k >= 0 ? open.splice(k, 1)[0]!.id : given || `call_${nextId++}`;
      out.push({ role: "tool", content, tool_call_id: id });
      return;
    }
    const msg: OaiMessage = { role: role as OaiMessage["role"], content: parts };
    if (role === "assistant") {
      const calls = toToolCalls(m.tool_calls, `${at}.tool_calls`, () => `call_${nextId++}`);
      if (calls.length > 0) {
        msg.tool_calls = calls;
        if (content === "") msg.content = null;
      }
      open = calls.slice();
      const thinking = text(m.thinking, `${at}.thinking`);
      if (thinking !== "") for (const f of reasoningFields(profile)) msg[f] = thinking;
    }
    out.push(msg);
  });
  return out;
}

/** Ollama's assistant tool calls (`arguments` an object) → OpenAI's (`arguments` a string). */
function toToolCalls(raw: unknown, field: string, id: () => string): OaiToolCall[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw badRequest(`"${field}" must be a list`, field);
  return raw.map((c, j) => {
    const f = isObject(c) ? c.function : undefined;
    if (!isObject(f) || typeof f.name !== "string" || f.name === "") {
      throw badRequest(`"${field}[${j}].function.name" must be a string`, `${field}[${j}]`);
    }
    const args = f.arguments ?? {};
    if (!isObject(args) && typeof args !== "string") {
      throw badRequest(`"${field}[${j}].function.arguments" must be an object`, `${field}[${j}]`);
    }
    const given = isObject(c) && typeof c.id === "string" && c.id !== "" ? c.id : null;
    return {
      id: given ?? id(),
      type: "function" as const,
      function: { name: f.name, arguments: typeof args === "string" ? args : JSON.stringify(args) },
    };
  });
}

/** Ollama's tools are OpenAI's shape already; checked, and passed on. */
function toTools(raw: unknown): Json[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw badRequest('"tools" must be a list', "tools");
  return raw.map((t, i) => {
    const f = isObject(t) ? t.function : undefined;
    if (!isObject(f) || typeof f.name !== "string" || f.name === "") {
      throw badRequest(`"tools[${i}].function.name" must be a string`, `tools[${i}]`);
    }
    const fn: Json = {
      name: f.name,
      parameters: isObject(f.parameters) ? f.parameters : { type: "object", properties: {} },
    };
    if (typeof f.description === "string") fn.description = f.description;
    return { type: "function", function: fn };
  });
}
