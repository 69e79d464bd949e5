/**
 * The parts of an Ollama request that are the same on `/api/chat` and `/api/generate`:
 * `options` (Ollama's `api.Options`, docs/api.md "Valid Parameters and Values"), `format` and
 * `think`, each mapped to the fields an OpenAI-compatible server reads. Options a chat server
 * has no field for (`num_gpu`, `mirostat`, …) are ignored, as Ollama ignores unknown ones.
 * Each is as the body's schema checked it (`wire.ts`): a known option of the wrong type was a
 * 400 naming it already.
 */
import type { Profile } from "../chat/profile.ts";
import type { OptionsBody } from "./wire.ts";

export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Sampling options copied under the same name (llama.cpp and vLLM read them all). */
const SAME_NAME = [
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "seed",
  "repeat_penalty",
  "presence_penalty",
  "frequency_penalty",
] as const;

export interface Sampling {
  fields: Json;
  /** `options.num_ctx`: the context size asked for (a `model?ctx=N` variant). */
  numCtx: number | undefined;
}

/** `options` → sampling fields of the upstream request. */
export function sampling(raw: OptionsBody | null | undefined): Sampling {
  const fields: Json = {};
  if (!raw) return { fields, numCtx: undefined };
  for (const key of SAME_NAME) {
    const v = raw[key];
    if (typeof v === "number") fields[key] = v;
  }
  const predict = raw.num_predict;
  // -1 (no limit) and -2 (fill the context) are the upstream's default: no `max_tokens`.
  if (typeof predict === "number" && predict >= 0) fields.max_tokens = predict;
  const stop = raw.stop;
  if (stop !== undefined && stop !== null) {
    const list = typeof stop === "string" ? [stop] : stop;
    if (list.length > 0) fields.stop = list;
  }
  return { fields, numCtx: raw.num_ctx ?? undefined };
}

/** `format`: `"json"` → JSON mode; a JSON schema object → structured output; `""` → none. */
export function responseFormat(raw: "json" | "" | Json | null | undefined): Json | undefined {
  if (raw === undefined || raw === null || raw === "") return undefined;
  if (raw === "json") return { type: "json_object" };
  return { type: "json_schema", json_schema: { name: "format", schema: raw } };
}

export type Think = boolean | "high" | "medium" | "low" | undefined;

/**
 * `think` → the thinking switches (no OpenAI standard; the Anthropic route's mapping):
 * `chat_template_kwargs.enable_thinking` for Qwen3-style templates on llama.cpp and vLLM, a
 * zero thinking budget on llama.cpp to turn it off, `reasoning_effort` for a level.
 */
export function thinkFields(t: Think, profile: Profile): Json {
  if (t === undefined) return {};
  if (t === false) {
    const off: Json = { chat_template_kwargs: { enable_thinking: false } };
    if (profile === "llamacpp") off.thinking_budget_tokens = 0;
    return off;
  }
  const on: Json = { chat_template_kwargs: { enable_thinking: true } };
  if (typeof t === "string") on.reasoning_effort = t;
  return on;
}

/** Base64 images (Ollama sends them bare) → OpenAI `image_url` data URLs. */
export function imageParts(
  raw: readonly string[] | null | undefined,
): { type: "image_url"; image_url: { url: string } }[] {
  if (!raw) return [];
  return raw.map((data) => ({
    type: "image_url" as const,
    image_url: { url: data.startsWith("data:") ? data : `data:${imageType(data)};base64,${data}` },
  }));
}

/** The media type from the first bytes of base64 data (PNG, JPEG, GIF, WebP); JPEG otherwise. */
function imageType(b64: string): string {
  if (b64.startsWith("iVBOR")) return "image/png";
  if (b64.startsWith("R0lG")) return "image/gif";
  if (b64.startsWith("UklGR")) return "image/webp";
  return "image/jpeg";
}
