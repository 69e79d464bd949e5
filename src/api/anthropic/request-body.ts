/**
 * Reads and checks an Anthropic request body once: size limit (413), JSON (400), the loose wire
 * schema (400, Anthropic's `field: message` wording), then the model (404).
 */
import type { TSchema } from "@sinclair/typebox";
import type { ModelConfig } from "../../config/types.ts";
import { QmError } from "../../shared/errors.ts";
import type { Gateway } from "../gateway.ts";
import { badRequest, parseJsonObject, readBody } from "../request/body.ts";
import { checkWire } from "./wire.ts";

export interface ParsedRequest<T> {
  model: ModelConfig;
  body: T;
}

export async function readRequest<T>(
  gw: Gateway,
  request: Request,
  schema: TSchema,
): Promise<ParsedRequest<T>> {
  const bytes = await readBody(request, gw.config.server.maxBodyBytes);
  const json = parseJsonObject(bytes);
  const problem = checkWire(schema, json);
  if (problem) throw badRequest(problem);
  const name = (json as { model: string }).model;
  // `resolveModel` also knows the `model?ctx=N` variants, minted on first use.
  const model = await gw.resolveModel(name);
  if (!model) {
    throw new QmError(
      "model_not_found",
      `model: "${name}" not found; GET /v1/models lists the models this server has`,
      { param: "model" },
    );
  }
  return { model, body: json as T };
}
