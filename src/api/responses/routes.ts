/** The OpenAI Responses API route (`POST /v1/responses`); errors in OpenAI's envelope. */
import { Elysia } from "elysia";
import { QmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import type { Gateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";
import { handleResponses, type ResponsesOptions } from "./responses.ts";

export function responsesRoutes(
  gw: Gateway,
  log: Logger,
  options: Partial<Omit<ResponsesOptions, "log">> = {},
) {
  // As the Anthropic routes: a keep-alive within Bun's 10 s idle limit.
  const opts: ResponsesOptions = { pingMs: 10_000, log, ...options };
  return new Elysia().all(
    "/v1/responses",
    ({ request }) => {
      if (request.method !== "POST") {
        return openaiError(
          new QmError(
            "method_not_allowed",
            `${request.method} is not allowed on /v1/responses; use POST`,
          ),
          { allow: "POST" },
        );
      }
      return handleResponses(gw, request, opts);
    },
    { parse: "none" },
  );
}
