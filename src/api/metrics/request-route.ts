/**
 * `GET /api/requests/{id}`: one record of the activity log, with what was captured of its
 * request and answer (`[activity] capture`; `capture: null` when off or dropped since). The
 * list (`GET /api/requests`) and `event: request` never carry captured text.
 */
import { Elysia } from "elysia";
import { QmError } from "../../shared/errors.ts";
import type { Gateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";
import { badRequest } from "../request/body.ts";

export function requestRoute(gw: Gateway) {
  return new Elysia().get("/api/requests/:id", ({ params }) => {
    const text = params.id;
    if (!/^[1-9]\d{0,15}$/.test(text)) {
      return openaiError(
        badRequest(`id must be a request's number (1, 2, …), got ${JSON.stringify(text)}`, "id"),
      );
    }
    const found = gw.activity.get(Number(text));
    if (found === null) {
      return openaiError(
        new QmError(
          "not_found",
          `no request ${text} in the activity log (it keeps the latest ${gw.activity.size}; [activity] size)`,
        ),
      );
    }
    return Response.json(found);
  });
}
