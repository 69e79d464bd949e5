/**
 * Anthropic `system` + `messages` → OpenAI `messages` (docs/translation.md §3.1, §3.2).
 *
 * - Tool results become `tool` messages placed right after the assistant turn that called the
 *   tools, before the user's other content (strict templates require that order); a result
 *   whose call is not in that turn becomes plain user text (servers reject orphans).
 * - Claude Code's `x-anthropic-billing-header` system block changes on every request; sent on,
 *   it would defeat the upstream's prompt-prefix cache, so it is dropped.
 * - Mid-conversation system turns (SDK 1.x) join the leading system message; consecutive
 *   same-role turns are merged, as Anthropic itself does.
 */

import { type Profile, reasoningFields } from "../../chat/profile.ts";
import type { OaiMessage, OaiPart, OaiToolCall } from "../../chat/wire.ts";
import type { WireContent, WireMessage } from "../wire.ts";
import {
  type Block,
  documentText,
  imagePart,
  invalid,
  searchResultText,
  str,
  toolResultContent,
} from "./content.ts";

const BILLING_HEADER = "x-anthropic-billing-header";

/** The text of a system prompt (string or text blocks), billing header and empties dropped. */
export function systemTexts(system: WireContent | undefined, path = "system"): string[] {
  if (system === undefined) return [];
  if (typeof system === "string") return system === "" ? [] : [system];
  const out: string[] = [];
  system.forEach((raw, i) => {
    const b = raw as Block;
    if (b.type !== "text") return;
    const text = str(b, "text", `${path}.${i}`);
    if (text === "" || text.trimStart().startsWith(BILLING_HEADER)) return;
    out.push(text);
  });
  return out;
}

interface Turns {
  profile: Profile;
  /** Built messages; user content stays as parts until `finish`. */
  out: (OaiMessage & { parts?: OaiPart[] })[];
  system: string[];
  /** Tool call ids of the latest assistant turn that no result has answered yet. */
  open: Set<string>;
}

export interface TranslatedMessages {
  system: string[];
  messages: OaiMessage[];
}

export function translateMessages(messages: WireMessage[], profile: Profile): TranslatedMessages {
  const t: Turns = { profile, out: [], system: [], open: new Set() };
  messages.forEach((m, i) => {
    const path = `messages.${i}.content`;
    if (m.role === "system") t.system.push(...systemTexts(m.content, path));
    else if (m.role === "assistant") assistantTurn(t, m.content, path);
    else userTurn(t, m.content, path);
  });
  return { system: t.system, messages: t.out.map(finish) };
}

function finish(m: OaiMessage & { parts?: OaiPart[] }): OaiMessage {
  const { parts, ...msg } = m;
  if (!parts) return msg;
  // Text-only user content goes as one string: every chat template renders that.
  const texts = parts.every((p) => p.type === "text");
  msg.content = texts ? parts.map((p) => (p as { text: string }).text).join("\n") : parts;
  return msg;
}

function userParts(t: Turns, parts: OaiPart[]): void {
  if (parts.length === 0) return;
  const last = t.out.at(-1);
  if (last?.role === "user" && last.parts) last.parts.push(...parts);
  else t.out.push({ role: "user", content: null, parts });
}

function userTurn(t: Turns, content: WireContent, path: string): void {
  if (typeof content === "string") {
    userParts(t, content === "" ? [] : [{ type: "text", text: content }]);
    return;
  }
  const last = t.out.at(-1);
  const canAttach = last?.role === "tool" || (last?.role === "assistant" && !!last.tool_calls);
  const tools: OaiMessage[] = [];
  const toolImages: OaiPart[] = [];
  const parts: OaiPart[] = [];
  content.forEach((raw, i) => {
    const b = raw as Block;
    const p = `${path}.${i}`;
    switch (b.type) {
      case "tool_result": {
        const id = str(b, "tool_use_id", p);
        const r = toolResultContent(b, p);
        if (canAttach && t.open.has(id)) {
          t.open.delete(id);
          tools.push({ role: "tool", tool_call_id: id, content: r.text });
          toolImages.push(...r.images);
        } else {
          parts.push({ type: "text", text: `Tool result (${id}): ${r.text}` }, ...r.images);
        }
        break;
      }
      case "text": {
        const text = str(b, "text", p);
        // Anthropic rejects empty text blocks; forwarding them only spreads them.
        if (text !== "") parts.push({ type: "text", text });
        break;
      }
      case "image":
        parts.push(imagePart(b, p));
        break;
      case "document":
        parts.push({ type: "text", text: documentText(b) });
        break;
      case "search_result":
        parts.push({ type: "text", text: searchResultText(b) });
        break;
      // thinking, redacted_thinking and anything unknown in a user turn: nothing to send.
    }
  });
  t.out.push(...tools);
  // OpenAI tool messages carry text only: a tool's images follow as user content (vLLM).
  userParts(t, [...toolImages, ...parts]);
}

function assistantTurn(t: Turns, content: WireContent, path: string): void {
  const texts: string[] = [];
  const reasoning: string[] = [];
  const calls: OaiToolCall[] = [];
  const blocks: Block[] =
    typeof content === "string" ? [{ type: "text", text: content }] : (content as Block[]);
  blocks.forEach((b, i) => {
    const p = `${path}.${i}`;
    if (b.type === "text") {
      const text = str(b, "text", p);
      if (text !== "") texts.push(text);
    } else if (b.type === "thinking") {
      // The signature is Anthropic's; no local model can check it.
      if (typeof b.thinking === "string" && b.thinking !== "") reasoning.push(b.thinking);
    } else if (b.type === "tool_use") {
      const input = b.input ?? {};
      if (typeof input !== "object" || input === null) {
        throw invalid(`${p}.input`, "expected an object");
      }
      calls.push({
        id: str(b, "id", p),
        type: "function",
        function: { name: str(b, "name", p), arguments: JSON.stringify(input) },
      });
    }
    // redacted_thinking, server_tool_use and *_tool_result blocks: nothing a local model reads.
  });
  if (texts.length === 0 && reasoning.length === 0 && calls.length === 0) return;
  const msg: OaiMessage = { role: "assistant", content: texts.join("\n") };
  if (reasoning.length > 0) {
    for (const field of reasoningFields(t.profile)) msg[field] = reasoning.join("\n");
  }
  if (calls.length > 0) msg.tool_calls = calls;
  const last = t.out.at(-1);
  const target = last?.role === "assistant" ? last : msg;
  if (target === msg) t.out.push(msg);
  else merge(target, msg);
  t.open = new Set((target.tool_calls ?? []).map((c) => c.id));
}

function merge(into: OaiMessage, msg: OaiMessage): void {
  const join = (a: string | undefined, b: string | undefined) =>
    [a, b].filter((s) => s !== undefined && s !== "").join("\n");
  into.content = join(into.content as string, msg.content as string);
  for (const field of ["reasoning_content", "reasoning"] as const) {
    if (msg[field] !== undefined) into[field] = join(into[field], msg[field]);
  }
  if (msg.tool_calls) into.tool_calls = [...(into.tool_calls ?? []), ...msg.tool_calls];
}
