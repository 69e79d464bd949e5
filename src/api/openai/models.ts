/**
 * `GET /v1/models` and `GET /v1/models/{id}`, in the OpenAI shape, or in the Anthropic one
 * (docs.anthropic.com "Models API": `type`, `display_name`, `created_at` in RFC 3339, and
 * `has_more` / `first_id` / `last_id` on the list) when the request carries
 * `anthropic-version`, as the Anthropic SDKs always send.
 */
import type { ModelConfig } from "../../config/types.ts";
import { QmError } from "../../shared/errors.ts";
import { anthropicError } from "../anthropic/errors.ts";
import type { Gateway } from "../gateway.ts";
import { openaiError } from "./errors.ts";

const PREFIX = "/models/";

function anthropicShaped(request: Request): boolean {
  return request.headers.has("anthropic-version");
}

function openaiModel(gw: Gateway, m: ModelConfig, created: number) {
  return {
    id: m.id,
    object: "model",
    created,
    owned_by: "quartermaster",
    aliases: m.aliases,
    status: { value: gw.modelState(m.id) },
  };
}

function anthropicModel(m: ModelConfig, createdAt: string) {
  return { type: "model", id: m.id, display_name: m.id, created_at: createdAt };
}

/** A peer's model, by its `PEER/MODEL` id, marked with its peer and what the peer says of it. */
function peerEntry(m: ModelConfig, state: string, created: number) {
  const peer = m.peer?.peer ?? "";
  return {
    id: m.id,
    object: "model",
    created,
    owned_by: `peer:${peer}`,
    peer,
    aliases: [],
    status: { value: state },
  };
}

export function listModels(gw: Gateway, request: Request, now = Date.now()): Response {
  const models = Object.values(gw.config.models).filter((m) => !m.unlisted);
  const remote = gw.peers?.models() ?? [];
  if (anthropicShaped(request)) {
    const at = new Date(now).toISOString();
    const data = [...models, ...remote.map((r) => r.model)].map((m) => anthropicModel(m, at));
    return Response.json({
      data,
      has_more: false,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
    });
  }
  const created = Math.floor(now / 1000);
  const data: object[] = models.map((m) => openaiModel(gw, m, created));
  for (const r of remote) data.push(peerEntry(r.model, r.state, created));
  return Response.json({ object: "list", data });
}

/** One model by id or alias; ids may contain `/`, so everything after the prefix is the id. */
export function retrieveModel(gw: Gateway, request: Request, now = Date.now()): Response {
  const path = new URL(request.url).pathname;
  // `/v1/models/{id}` or its un-prefixed alias `/models/{id}`; ids may contain `/`.
  const raw = path.slice(path.indexOf(PREFIX) + PREFIX.length);
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    name = raw;
  }
  const model = name === "" ? undefined : gw.resolve(name);
  const anthropic = anthropicShaped(request);
  const remote = model ? undefined : gw.peers?.models().find((r) => r.model.id === name);
  if (remote) {
    if (anthropic) return Response.json(anthropicModel(remote.model, new Date(now).toISOString()));
    return Response.json(peerEntry(remote.model, remote.state, Math.floor(now / 1000)));
  }
  if (!model) {
    const err = new QmError(
      "model_not_found",
      `model "${name}" not found; GET /v1/models lists them`,
      { param: "model" },
    );
    return anthropic ? anthropicError(err) : openaiError(err);
  }
  if (anthropic) return Response.json(anthropicModel(model, new Date(now).toISOString()));
  return Response.json(openaiModel(gw, model, Math.floor(now / 1000)));
}
