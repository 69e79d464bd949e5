/**
 * Single content blocks → OpenAI message parts (docs/translation.md §3.2): images become `image_url`
 * data URIs, documents and search results become text, tool results are flattened to the text
 * an OpenAI `tool` message can carry (images travel separately, after the tool messages).
 */

import type { OaiPart } from "../../chat/wire.ts";
import { badRequest } from "../../request/body.ts";
import type { WireBlock } from "../wire.ts";

export type Block = WireBlock & Record<string, unknown>;

/** A malformed block of a known type: Anthropic answers 400 with the field's path. */
export function invalid(path: string, message: string) {
  return badRequest(`${path}: ${message}`, path.split(".")[0]);
}

export function str(b: Block, key: string, path: string): string {
  const v = b[key];
  if (typeof v !== "string") throw invalid(`${path}.${key}`, "Field required (a string)");
  return v;
}

function record(v: unknown): Record<string, unknown> | null {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : null;
}

export function imagePart(b: Block, path: string): OaiPart {
  const src = record(b.source);
  if (!src) throw invalid(`${path}.source`, "Field required");
  if (src.type === "base64" && typeof src.data === "string") {
    const media = typeof src.media_type === "string" ? src.media_type : "image/png";
    return { type: "image_url", image_url: { url: `data:${media};base64,${src.data}` } };
  }
  if (src.type === "url" && typeof src.url === "string") {
    return { type: "image_url", image_url: { url: src.url } };
  }
  // `file` sources point into Anthropic's Files API, which a local server cannot reach.
  return { type: "text", text: `[image omitted: ${String(src.type)} sources are not supported]` };
}

/** Text blocks of a nested content list (documents with a `content` source, search results). */
function nestedText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const texts: string[] = [];
  for (const c of content) {
    const r = record(c);
    if (r?.type === "text" && typeof r.text === "string" && r.text !== "") texts.push(r.text);
  }
  return texts.join("\n");
}

export function documentText(b: Block): string {
  const src = record(b.source);
  let body: string;
  if (src?.type === "text" && typeof src.data === "string") body = src.data;
  else if (src?.type === "content") body = nestedText(src.content);
  else {
    // Base64 / URL / file PDFs: local chat servers read no PDFs. A placeholder keeps the
    // conversation going where a 400 would fail every later turn that still carries it.
    const media = typeof src?.media_type === "string" ? src.media_type : "application/pdf";
    body = `[document omitted: ${media} documents are not supported by this model]`;
  }
  const head = [b.title, b.context].filter((s): s is string => typeof s === "string" && s !== "");
  return [...head, body].join("\n");
}

export function searchResultText(b: Block): string {
  const head = [b.title, b.source].filter((s): s is string => typeof s === "string" && s !== "");
  return [...head, nestedText(b.content)].join("\n");
}

export interface ToolResultContent {
  text: string;
  images: OaiPart[];
}

/**
 * A `tool_result`'s content: a string or blocks. Texts are joined with "\n" (as vLLM does);
 * `is_error` has no OpenAI field, so the text says it.
 */
export function toolResultContent(b: Block, path: string): ToolResultContent {
  const texts: string[] = [];
  const images: OaiPart[] = [];
  const content = b.content;
  if (typeof content === "string") {
    if (content !== "") texts.push(content);
  } else if (Array.isArray(content)) {
    content.forEach((raw, i) => {
      const c = record(raw) as Block | null;
      if (!c) return;
      const p = `${path}.content.${i}`;
      if (c.type === "text") {
        const t = str(c, "text", p);
        if (t !== "") texts.push(t);
      } else if (c.type === "image") {
        const part = imagePart(c, p);
        if (part.type === "text") texts.push(part.text);
        else images.push(part);
      } else if (c.type === "document") {
        texts.push(documentText(c));
      } else if (c.type === "search_result") {
        texts.push(searchResultText(c));
      } else if (c.type === "tool_reference" && typeof c.tool_name === "string") {
        texts.push(`[tool reference: ${c.tool_name}]`);
      }
    });
  } else if (content !== undefined && content !== null) {
    throw invalid(`${path}.content`, "expected a string or a list of content blocks");
  }
  let text = texts.join("\n");
  if (b.is_error === true) text = text === "" ? "Error" : `Error: ${text}`;
  return { text, images };
}
