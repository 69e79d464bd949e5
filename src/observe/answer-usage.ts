/**
 * What an answer states about itself: its token counts (`usage`) and how it ended
 * (`finish_reason`). Read from whatever
 * the answer carries — OpenAI `usage` (`prompt_tokens`, `completion_tokens`,
 * `prompt_tokens_details.cached_tokens`; https://platform.openai.com/docs/api-reference/chat/object),
 * the Responses and Anthropic names (`input_tokens`, `output_tokens`,
 * `input_tokens_details.cached_tokens`, `cache_read_input_tokens`), and llama.cpp's `timings`
 * (`prompt_n` evaluated, `cache_n` reused from the cache, `predicted_n` generated) — and the
 * finish reason (`finish_reason`, or `stop_reason` in a native Anthropic answer). What the
 * answer does not say stays null: nothing is estimated.
 */

type Obj = Record<string, unknown>;

function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null;
}

function obj(v: unknown): Obj | null {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : null;
}

/**
 * Finish reasons are a handful of words: each is kept as one shared string, so the records that
 * the activity log holds do not each keep a copy (bounded: past it, a reason is kept as it is).
 */
const REASONS = new Map<string, string>();
const MAX_REASONS = 64;

function interned(reason: string): string {
  const known = REASONS.get(reason);
  if (known !== undefined) return known;
  if (REASONS.size < MAX_REASONS && reason.length <= 64) REASONS.set(reason, reason);
  return reason;
}

export class AnswerUsage {
  promptTokens: number | null = null;
  completionTokens: number | null = null;
  cachedTokens: number | null = null;
  finishReason: string | null = null;
  /** llama.cpp's counts, used where `usage` said nothing. */
  private timed: {
    prompt: number | null;
    completion: number | null;
    cached: number | null;
  } | null = null;

  /** A `usage` object; later ones add to or replace what earlier ones said (Anthropic sends two). */
  readUsage(value: unknown): void {
    const u = obj(value);
    if (!u) return;
    const completion = num(u.completion_tokens) ?? num(u.output_tokens);
    if (completion !== null) this.completionTokens = completion;
    const details = obj(u.prompt_tokens_details) ?? obj(u.input_tokens_details);
    const cacheRead = num(u.cache_read_input_tokens);
    const cached = num(details?.cached_tokens) ?? cacheRead;
    if (cached !== null) this.cachedTokens = cached;
    let prompt = num(u.prompt_tokens);
    if (prompt === null) {
      prompt = num(u.input_tokens);
      // Anthropic counts cache reads and writes apart from `input_tokens`; the others include them.
      if (prompt !== null && (cacheRead !== null || "cache_creation_input_tokens" in u)) {
        prompt += (cacheRead ?? 0) + (num(u.cache_creation_input_tokens) ?? 0);
      }
    }
    if (prompt !== null) this.promptTokens = prompt;
  }

  /** llama.cpp's `timings`. */
  readTimings(value: unknown): void {
    const t = obj(value);
    if (!t) return;
    const evaluated = num(t.prompt_n);
    const cached = num(t.cache_n);
    this.timed = {
      prompt: evaluated === null ? null : evaluated + (cached ?? 0),
      completion: num(t.predicted_n),
      cached,
    };
  }

  /** A finish reason; null (every chunk before the last says so) changes nothing. */
  readFinishReason(value: unknown): void {
    if (typeof value === "string" && value !== "") this.finishReason = interned(value);
  }

  /** An OpenAI chat or completion answer, or one chunk of its stream, as parsed JSON. */
  readAnswer(value: unknown): void {
    const o = obj(value);
    if (!o) return;
    if (o.usage !== undefined) this.readUsage(o.usage);
    if (o.timings !== undefined) this.readTimings(o.timings);
    const choices = o.choices;
    if (Array.isArray(choices) && choices.length > 0)
      this.readFinishReason(obj(choices[0])?.finish_reason);
  }

  get prompt(): number | null {
    return this.promptTokens ?? this.timed?.prompt ?? null;
  }

  get completion(): number | null {
    return this.completionTokens ?? this.timed?.completion ?? null;
  }

  get cached(): number | null {
    return this.cachedTokens ?? this.timed?.cached ?? null;
  }
}
