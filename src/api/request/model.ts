import type { ModelConfig } from "../../config/types.ts";
import { QmError } from "../../shared/errors.ts";
import type { InferenceGateway } from "../gateway.ts";
import { badRequest } from "./body.ts";

/**
 * The model a request names, for every API: its `model` field (a multipart field for audio).
 * Plain names and aliases resolve synchronously (no promise); only `model?ctx=N` variants may
 * need minting.
 * `field` prefixes messages the Anthropic way (`model: …`) where that API's wording wants it.
 */
export function resolveModel(
  gw: InferenceGateway,
  name: unknown,
  field: "" | "model: " = "",
): ModelConfig | Promise<ModelConfig> {
  if (name === undefined || name === null || name === "") {
    throw badRequest(`${field}the request has no "model" field`, "model");
  }
  if (typeof name !== "string") throw badRequest(`${field}"model" must be a string`, "model");
  // A local model always wins; then a peer that serves the name (`PEER/MODEL` picks one).
  return gw.resolve(name) ?? gw.peers?.resolve(name) ?? minted(gw, name, field);
}

async function minted(gw: InferenceGateway, name: string, field: string): Promise<ModelConfig> {
  const model = await gw.resolveModel(name);
  if (!model) {
    throw new QmError(
      "model_not_found",
      `${field === "" ? "model " : field}"${name}" not found; GET /v1/models lists the models this server has`,
      { param: "model" },
    );
  }
  return model;
}
