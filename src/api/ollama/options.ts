/**
 * The parts of an Ollama request that are the same on `/api/chat` and `/api/generate`:
 * `options` (Ollama's `api.Options`, docs/api.md "Valid Parameters and Values"), `format` and
 * `think`, each mapped to the fields an OpenAI-compatible server reads. Options a chat server
 * has no field for (`num_gpu`, `mirostat`, …) are ignored, as Ollama ignores unknown ones;
 * a known option of the wrong type is a 400 naming it.
 */
import type { Profile } from "../chat/profile.ts";
import { badRequest } from "../request/body.ts";

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

function numberOption(options: Json, key: string): number | undefined {
  const v = options[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw badRequest(`"options.${key}" must be a number`, `options.${key}`);
  }
  return v;
}

/** `options` → sampling fields of the upstream request. */
export function sampling(raw: unknown): Sampling {
  const fields: Json = {};
  if (raw === undefined || raw === null) return { fields, numCtx: undefined };
  if (!isObject(raw)) throw badRequest('"options" must be an object', "options");
  for (const key of SAME_NAME) {
    const v = numberOption(raw, key);
    if (v !== undefined) fields[key] = v;
  }
  const predict = numberOption(raw, "num_predict");
  if (predict !== undefined) {
    if (!Number.isInteger(predict) || predict < -2) {
      throw badRequest(
        '"options.num_predict" must be a whole number (-1: no limit)',
        "options.num_predict",
      );
    }
    // -1 (no limit) and -2 (fill the context) are the upstream's default: no `max_tokens`.
    if (predict >= 0) fields.max_tokens = predict;
  }
  const stop = raw.stop;
  if (stop !== undefined && stop !== null) {
    const list = typeof stop === "string" ? [stop] : stop;
    if (!Array.isArray(list) || !list.every((s) => typeof s === "string")) {
      throw badRequest('"options.stop" must be a list of strings', "options.stop");
    }
    if (list.length > 0) fields.stop = list;
  }
  const ctx = numberOption(raw, "num_ctx");
  if (ctx !== undefined && (!Number.isInteger(ctx) || ctx <= 0)) {
    throw badRequest('"options.num_ctx" must be a positive whole number', "options.num_ctx");
  }
  return { fields, numCtx: ctx };
}

/** `format`: `"json"` → JSON mode; a JSON schema object → structured output; `""` → none. */
export function responseFormat(raw: unknown): Json | undefined {
  if (raw === undefined || raw === null || raw === "") return undefined;
  if (raw === "json") return { type: "json_object" };
  if (isObject(raw)) return { type: "json_schema", json_schema: { name: "format", schema: raw } };
  throw badRequest('"format" must be "json" or a JSON schema object', "format");
}

export type Think = boolean | "high" | "medium" | "low" | undefined;

export function think(raw: unknown): Think {
  if (raw === undefined || raw === null) return undefined;
  if (raw === true || raw === false || raw === "high" || raw === "medium" || raw === "low") {
    return raw;
  }
  throw badRequest('"think" must be true, false, "high", "medium" or "low"', "think");
}

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

/** A `stream` flag: Ollama streams unless told `false`. */
export function streamFlag(raw: unknown): boolean {
  if (raw === undefined || raw === null) return true;
  if (typeof raw !== "boolean") throw badRequest('"stream" must be true or false', "stream");
  return raw;
}

/** Base64 images (Ollama sends them bare) → OpenAI `image_url` data URLs. */
export function imageParts(
  raw: unknown,
  field: string,
): { type: "image_url"; image_url: { url: string } }[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw) || !raw.every((s) => typeof s === "string" && s !== "")) {
    throw badRequest(`"${field}" must be a list of base64 strings`, field);
  }
  return raw.map((data: string) => ({
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
