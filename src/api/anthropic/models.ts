/**
 * `GET /v1/models` and `GET /v1/models/{id}` in Anthropic's shape (docs.anthropic.com "Models
 * API": `type`, `display_name`, `created_at` in RFC 3339, and `has_more` / `first_id` /
 * `last_id` on the list), for a request that carries `anthropic-version`, as the Anthropic
 * SDKs always send. The routes are the OpenAI ones (`api/openai/models.ts`), which use this
 * shape when the request asks for it.
 */
import type { ModelConfig } from "../../config/types.ts";
import type { QmError } from "../../shared/errors.ts";
import { anthropicError } from "./errors.ts";

function anthropicModel(m: ModelConfig, now: number) {
  return { type: "model", id: m.id, display_name: m.id, created_at: new Date(now).toISOString() };
}

export const ANTHROPIC_MODELS = {
  wants: (request: Request) => request.headers.has("anthropic-version"),
  list(models: ModelConfig[], now: number): Response {
    const data = models.map((m) => anthropicModel(m, now));
    return Response.json({
      data,
      has_more: false,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
    });
  },
  one: (model: ModelConfig, now: number) => Response.json(anthropicModel(model, now)),
  error: (err: QmError) => anthropicError(err),
};
