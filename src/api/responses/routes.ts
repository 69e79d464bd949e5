/**
 * The OpenAI Responses API routes: `POST /v1/responses`, and the kept responses
 * (`GET`/`DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items`); errors in
 * OpenAI's envelope.
 */
import { Elysia } from "elysia";
import { asQmError, QmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import type { Gateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";
import { handleResponses, type ResponsesOptions } from "./responses.ts";
import { deleteResponse, getResponse, listInputItems } from "./stored.ts";

const notAllowed = (method: string, path: string, allow: string) =>
  openaiError(
    new QmError("method_not_allowed", `${method} is not allowed on ${path}; use ${allow}`),
    { allow },
  );

/** Runs a handler of the kept responses, its failures in OpenAI's envelope. */
function answer(run: () => Response): Response {
  try {
    return run();
  } catch (err) {
    return openaiError(asQmError(err));
  }
}

export function responsesRoutes(
  gw: Gateway,
  log: Logger,
  options: Partial<Omit<ResponsesOptions, "log">> = {},
) {
  // As the Anthropic routes: a keep-alive within Bun's 10 s idle limit.
  const opts: ResponsesOptions = { pingMs: 10_000, log, ...options };
  return new Elysia()
    .all(
      "/v1/responses",
      ({ request }) => {
        if (request.method !== "POST") return notAllowed(request.method, "/v1/responses", "POST");
        return handleResponses(gw, request, opts);
      },
      { parse: "none" },
    )
    .all(
      "/v1/responses/:id",
      ({ request, params }) => {
        const id = params.id;
        if (request.method === "GET") return answer(() => getResponse(gw, id, request));
        if (request.method === "DELETE") return answer(() => deleteResponse(gw, id, request));
        return notAllowed(request.method, `/v1/responses/${id}`, "GET, DELETE");
      },
      { parse: "none" },
    )
    .all(
      "/v1/responses/:id/input_items",
      ({ request, params }) => {
        const id = params.id;
        const path = `/v1/responses/${id}/input_items`;
        if (request.method !== "GET") return notAllowed(request.method, path, "GET");
        return answer(() => listInputItems(gw, id, request));
      },
      { parse: "none" },
    );
}
