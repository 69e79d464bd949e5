/**
 * A model's request filters (`strip_params`, `set_params`), applied to the body every API
 * sends upstream — as the client sent it (OpenAI, native Anthropic and Responses) or as qm
 * translated it (Anthropic, Responses, Ollama) — so a model gets the same fields whichever
 * API it was asked through. Top-level fields only: `strip` removes them, then `set` puts its
 * values in (replacing what was there). `model` and `stream` are refused at config load.
 */
import type { ModelConfig } from "../../config/types.ts";

/** Applies `model`'s filters to `body` in place; false when it has none. */
export function applyParams(model: ModelConfig, body: Record<string, unknown>): boolean {
  const p = model.params;
  if (p === null) return false;
  for (const name of p.strip) delete body[name];
  for (const name in p.set) body[name] = p.set[name];
  return true;
}

/** A body qm built, with `model`'s filters applied (the same object when it has none). */
export function filtered<T extends object>(model: ModelConfig, body: T): T {
  if (model.params === null) return body;
  const copy = { ...body } as Record<string, unknown>;
  applyParams(model, copy);
  return copy as T;
}

/** The same for a multipart form: a value that is not a string goes as its JSON text. */
export function applyFormParams(
  model: ModelConfig,
  form: { delete(name: string): void; set(name: string, value: string): void },
): boolean {
  const p = model.params;
  if (p === null) return false;
  for (const name of p.strip) form.delete(name);
  for (const name in p.set) {
    const v = p.set[name];
    form.set(name, typeof v === "string" ? v : JSON.stringify(v));
  }
  return true;
}
