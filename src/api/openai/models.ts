/**
 * `GET /v1/models` and `GET /v1/models/{id}`, in the OpenAI shape, or in another API's when
 * the request asks for it (`ModelsShape`: Anthropic's, for a request with `anthropic-version`).
 */
import type { ModelConfig } from "../../config/types.ts";
import { QmError } from "../../shared/errors.ts";
import { keyOf } from "../edge/caller.ts";
import { visible } from "../edge/visible.ts";
import type { Gateway } from "../gateway.ts";
import { openaiError } from "./errors.ts";

const PREFIX = "/models/";

/** Another API's shape of the model list, used for the requests that ask for it. */
export interface ModelsShape {
  wants(request: Request): boolean;
  list(models: ModelConfig[], now: number): Response;
  one(model: ModelConfig, now: number): Response;
  error(err: QmError): Response;
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

export function listModels(
  gw: Gateway,
  request: Request,
  now = Date.now(),
  other: ModelsShape | null = null,
): Response {
  const key = keyOf(request);
  const models = Object.values(gw.config.models).filter((m) => !m.unlisted && visible(gw, key, m));
  const remote = (gw.peers?.models() ?? []).filter((r) => visible(gw, key, r.model));
  if (other?.wants(request)) return other.list([...models, ...remote.map((r) => r.model)], now);
  const created = Math.floor(now / 1000);
  const data: object[] = models.map((m) => openaiModel(gw, m, created));
  for (const r of remote) data.push(peerEntry(r.model, r.state, created));
  return Response.json({ object: "list", data });
}

/** One model by id or alias; ids may contain `/`, so everything after the prefix is the id. */
export function retrieveModel(
  gw: Gateway,
  request: Request,
  now = Date.now(),
  other: ModelsShape | null = null,
): Response {
  const path = new URL(request.url).pathname;
  // `/v1/models/{id}` or its un-prefixed alias `/models/{id}`; ids may contain `/`.
  const raw = path.slice(path.indexOf(PREFIX) + PREFIX.length);
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    name = raw;
  }
  const key = keyOf(request);
  const found = name === "" ? undefined : gw.resolve(name);
  // A model the key may not use is not found, as a name that names nothing.
  const model = found && visible(gw, key, found) ? found : undefined;
  const shape = other?.wants(request) ? other : null;
  const remote = found
    ? undefined
    : gw.peers?.models().find((r) => r.model.id === name && visible(gw, key, r.model));
  if (remote) {
    if (shape) return shape.one(remote.model, now);
    return Response.json(peerEntry(remote.model, remote.state, Math.floor(now / 1000)));
  }
  if (!model) {
    const err = new QmError(
      "model_not_found",
      `model "${name}" not found; GET /v1/models lists them`,
      { param: "model" },
    );
    return shape ? shape.error(err) : openaiError(err);
  }
  if (shape) return shape.one(model, now);
  return Response.json(openaiModel(gw, model, Math.floor(now / 1000)));
}
