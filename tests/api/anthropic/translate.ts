/** Translates a request after checking it against the wire schema, as the route does. */
import { expect } from "bun:test";
import { toOpenAI } from "../../../src/api/anthropic/translate/request.ts";
import {
  checkWire,
  type MessagesRequest,
  MessagesRequestSchema,
} from "../../../src/api/anthropic/wire.ts";
import type { Profile } from "../../../src/api/chat/profile.ts";
import type { OaiChatRequest } from "../../../src/api/chat/wire.ts";

export function tr(req: Record<string, unknown>, profile: Profile = "generic"): OaiChatRequest {
  const full = { model: "m", max_tokens: 100, ...req } as MessagesRequest;
  expect(checkWire(MessagesRequestSchema, full)).toBeNull();
  return toOpenAI(full, { profile, upstreamModel: "up" });
}

export const weather = { name: "get_weather", input_schema: { type: "object", properties: {} } };
