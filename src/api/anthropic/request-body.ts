/**
 * Reads and checks an Anthropic request body once: size limit (413), JSON (400), the loose wire
 * schema (400, Anthropic's `field: message` wording), then the model (404).
 */
import type { TSchema } from "@sinclair/typebox";
import type { ModelConfig } from "../../config/types.ts";
import type { Gateway } from "../gateway.ts";
import { badRequest, parseJsonObject, readBody } from "../request/body.ts";
import { resolveModel } from "../request/model.ts";
import { checkWire } from "./wire.ts";

export interface ParsedRequest<T> {
  model: ModelConfig;
  body: T;
  /** The body as the client sent it. */
  bytes: Uint8Array;
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
  const model = await resolveModel(gw, (json as { model: unknown }).model, request, "model: ");
  return { model, body: json as T, bytes };
}
