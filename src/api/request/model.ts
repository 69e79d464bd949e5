import { parseVariantName } from "../../config/index.ts";
import type { ModelConfig } from "../../config/types.ts";
import { QmError } from "../../shared/errors.ts";
import { keyOf } from "../edge/caller.ts";
import { visible } from "../edge/visible.ts";
import type { InferenceGateway } from "../gateway.ts";
import { badRequest } from "./body.ts";

/**
 * The model a request names, for every API: its `model` field (a multipart field for audio).
 * Plain names and aliases resolve synchronously (no promise); only `model?ctx=N` variants may
 * need minting. A model the request's key may not use is not found, exactly as a name that
 * names nothing (the same error, before any other step; a variant of it is never minted).
 * `field` prefixes messages the Anthropic way (`model: …`) where that API's wording wants it.
 */
export function resolveModel(
  gw: InferenceGateway,
  name: unknown,
  request: Request,
  field: "" | "model: " = "",
): ModelConfig | Promise<ModelConfig> {
  if (name === undefined || name === null || name === "") {
    throw badRequest(`${field}the request has no "model" field`, "model");
  }
  if (typeof name !== "string") throw badRequest(`${field}"model" must be a string`, "model");
  const key = keyOf(request);
  // A local model always wins; then a peer that serves the name (`PEER/MODEL` picks one).
  const model = gw.resolve(name) ?? gw.peers?.resolve(name);
  if (model) {
    if (visible(gw, key, model)) return model;
    throw notFound(name, field);
  }
  if (!key.allModels) {
    const variant = parseVariantName(name);
    const base = variant ? gw.resolve(variant.base) : undefined;
    if (!base || !visible(gw, key, base)) throw notFound(name, field);
  }
  return minted(gw, name, field);
}

function notFound(name: string, field: string): QmError {
  return new QmError(
    "model_not_found",
    `${field === "" ? "model " : field}"${name}" not found; GET /v1/models lists the models this server has`,
    { param: "model" },
  );
}

async function minted(gw: InferenceGateway, name: string, field: string): Promise<ModelConfig> {
  const model = await gw.resolveModel(name);
  if (!model) throw notFound(name, field);
  return model;
}
