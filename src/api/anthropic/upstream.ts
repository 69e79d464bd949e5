/**
 * What qm asks a running upstream besides chat completions: its context size (to clamp
 * `max_tokens`) and the exact token count of a prompt (count_tokens, the clamp). Both are
 * best effort — a server that cannot answer gets `null` and the caller falls back — and
 * neither may hang a request: each call has its own deadline.
 *
 * - llama-server: `GET /props` → `default_generation_settings.n_ctx` (the per-slot context),
 *   `POST /apply-template` {messages, tools} → {prompt}, `POST /tokenize` {content} → {tokens}.
 * - vLLM: `GET /v1/models` → `data[].max_model_len`, `POST /tokenize` {model, messages, tools}
 *   → {count} (vLLM's TokenizeChatRequest).
 */
import type { ModelConfig } from "../../config/types.ts";
import { realTimers, setTimeoutSignal, type Timers } from "../../shared/timer.ts";
import type { Profile } from "../chat/profile.ts";
import { badRequest } from "../request/body.ts";
import { estimatePrompt, promptUpperBound } from "./translate/estimate.ts";
import type { Prompt } from "./translate/request.ts";

/** How long one of these calls may take, its answer read included. */
export const DEADLINE_MS = 10_000;

type Json = Record<string, unknown>;

/**
 * Runs `work` with a signal that aborts when `signal` does or `ms` pass on `timers` (a
 * `TimeoutError`), whichever is first; the timer goes with it.
 */
export async function withDeadline<T>(
  signal: AbortSignal,
  ms: number,
  timers: Timers,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const limit = setTimeoutSignal(timers, ms);
  try {
    return await work(AbortSignal.any([signal, limit.signal]));
  } finally {
    limit.cancel();
  }
}

function call(
  model: ModelConfig,
  path: string,
  signal: AbortSignal,
  timers: Timers,
  body?: unknown,
): Promise<{ status: number; json: Json | null }> {
  return withDeadline(signal, DEADLINE_MS, timers, async (deadline) => {
    const res = await fetch(model.proxy + path, {
      method: body === undefined ? "GET" : "POST",
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? null : JSON.stringify(body),
      signal: deadline,
      // A loopback upstream must never go through an HTTP proxy from the environment.
      proxy: false,
    } as RequestInit);
    const text = await res.text();
    let json: Json | null = null;
    try {
      const parsed = JSON.parse(text);
      if (typeof parsed === "object" && parsed !== null) json = parsed as Json;
    } catch {
      // not JSON: the caller treats it as "cannot answer"
    }
    return { status: res.status, json };
  });
}

const num = (v: unknown): number | null =>
  typeof v === "number" && Number.isFinite(v) && v > 0 ? v : null;

/** Keyed by what determines the answer: the same command serves the same context. */
const contexts = new Map<string, number | null>();
const countWays = new Map<string, "llama" | "vllm" | "none">();
const keyOf = (m: ModelConfig) => `${m.id}\u0000${m.cmd}\u0000${m.proxy}`;

/** The upstream's context size in tokens, or null when it does not say. Cached per command. */
export async function contextSize(
  model: ModelConfig,
  signal: AbortSignal,
  timers: Timers = realTimers,
): Promise<number | null> {
  // A peer's model is not asked here: its own server (a qm peer) clamps what it is sent.
  if (model.peer) return null;
  const key = keyOf(model);
  if (contexts.has(key)) return contexts.get(key) ?? null;
  let size: number | null = null;
  try {
    const props = await call(model, "/props", signal, timers);
    const dgs = props.json?.default_generation_settings as Json | undefined;
    size = props.status === 200 ? (num(dgs?.n_ctx) ?? num(props.json?.n_ctx)) : null;
    if (size === null) {
      const models = await call(model, "/v1/models", signal, timers);
      const data = Array.isArray(models.json?.data) ? (models.json.data as Json[]) : [];
      size = data.map((d) => num(d.max_model_len)).find((n) => n !== null) ?? null;
    }
  } catch {
    return null; // unreachable now: ask again next time
  }
  contexts.set(key, size);
  return size;
}

/** How to ask a model to count, in order: the way that worked, else both by its dialect. */
function waysToTry(model: ModelConfig, profile: Profile): ("llama" | "vllm")[] {
  if (model.peer) return [];
  const known = countWays.get(keyOf(model));
  if (known === "none") return [];
  if (known) return [known];
  return profile === "vllm" ? ["vllm", "llama"] : ["llama", "vllm"];
}

/**
 * Exact prompt tokens as the upstream's own template and tokenizer see them, or null. The way
 * that worked is remembered per model; a server with neither way is not asked again.
 */
export async function countPromptTokens(
  model: ModelConfig,
  profile: Profile,
  prompt: Prompt,
  signal: AbortSignal,
  timers: Timers = realTimers,
): Promise<number | null> {
  const key = keyOf(model);
  const known = countWays.get(key);
  const order = waysToTry(model, profile);
  if (order.length === 0) return null;
  let missing = 0;
  try {
    for (const way of order) {
      const n =
        way === "llama"
          ? await llamaCount(model, prompt, signal, timers)
          : await vllmCount(model, prompt, signal, timers);
      if (n === MISSING) missing++;
      else if (n !== null) {
        countWays.set(key, way);
        return n;
      }
    }
  } catch {
    return null; // unreachable or too slow now: not a verdict on the server
  }
  // Only a server without the routes is never asked again; one prompt's failure is no verdict.
  if (missing === order.length && !known) countWays.set(key, "none");
  return null;
}

const MISSING = -1;
const missingRoute = (status: number) => status === 404 || status === 405;

async function llamaCount(
  model: ModelConfig,
  prompt: Prompt,
  signal: AbortSignal,
  timers: Timers,
): Promise<number | null> {
  const templ = await call(model, "/apply-template", signal, timers, {
    messages: prompt.messages,
    ...(prompt.tools.tools ? { tools: prompt.tools.tools } : {}),
    ...prompt.template,
  });
  if (missingRoute(templ.status)) return MISSING;
  const text = templ.json?.prompt;
  if (templ.status !== 200 || typeof text !== "string") return null;
  const tok = await call(model, "/tokenize", signal, timers, { content: text });
  const tokens = tok.json?.tokens;
  return tok.status === 200 && Array.isArray(tokens) ? tokens.length : null;
}

async function vllmCount(
  model: ModelConfig,
  prompt: Prompt,
  signal: AbortSignal,
  timers: Timers,
): Promise<number | null> {
  const res = await call(model, "/tokenize", signal, timers, {
    model: model.useModelName || model.id,
    messages: prompt.messages,
    add_generation_prompt: true,
    ...(prompt.tools.tools ? { tools: prompt.tools.tools } : {}),
    ...prompt.template,
  });
  if (missingRoute(res.status)) return MISSING;
  const n = res.json?.count;
  return res.status === 200 && typeof n === "number" ? n : null;
}

/**
 * Tokens of a text (an answer, not a prompt: no template, no special tokens) as the upstream's
 * tokenizer makes them, or null.
 */
export async function countTextTokens(
  model: ModelConfig,
  profile: Profile,
  text: string,
  signal: AbortSignal,
  timers: Timers = realTimers,
): Promise<number | null> {
  try {
    for (const way of waysToTry(model, profile)) {
      const res =
        way === "llama"
          ? await call(model, "/tokenize", signal, timers, { content: text })
          : await call(model, "/tokenize", signal, timers, {
              model: model.useModelName || model.id,
              prompt: text,
              add_special_tokens: false,
            });
      const tokens = res.json?.tokens;
      const n = way === "llama" && Array.isArray(tokens) ? tokens.length : res.json?.count;
      if (res.status === 200 && typeof n === "number") return n;
    }
  } catch {
    // unreachable or too slow: the caller estimates
  }
  return null;
}

/**
 * The most `max_tokens` the upstream's context leaves for the answer, or null for "send as
 * asked". Claude Code asks for 20–32k tokens whatever the model; vLLM refuses prompt +
 * max_tokens > max_model_len. Counting costs two small calls, so it is skipped when even an
 * upper bound of the prompt leaves room. A prompt that alone fills the context is refused in
 * Anthropic's wording ("prompt is too long: N tokens > M maximum"), which Claude Code answers
 * by compacting.
 */
export async function answerCap(
  model: ModelConfig,
  profile: Profile,
  prompt: Prompt,
  maxTokens: number,
  signal: AbortSignal,
  timers: Timers = realTimers,
  /**
   * The prompt's exact count when the caller is counting it already (`undefined`: count if need
   * be); read only when the prompt's upper bound does not fit.
   */
  known?: Promise<number | null> | number | null,
): Promise<number | null> {
  const ctx = await contextSize(model, signal, timers);
  if (ctx === null || promptUpperBound(prompt) + maxTokens <= ctx) return null;
  const counted = await (known === undefined
    ? countPromptTokens(model, profile, prompt, signal, timers)
    : known);
  if (counted === null) {
    // Only an estimate: clamp by it, but leave a refusal to the upstream, which can count.
    const est = estimatePrompt(prompt);
    return est < ctx ? ctx - est : null;
  }
  if (counted >= ctx) throw badRequest(`prompt is too long: ${counted} tokens > ${ctx} maximum`);
  return ctx - counted;
}
