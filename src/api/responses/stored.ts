/**
 * The kept Responses (`store.ts`) as OpenAI serves them: `GET /v1/responses/{id}` (the final
 * Response object), `DELETE /v1/responses/{id}`, and `GET /v1/responses/{id}/input_items` (a
 * list page: `order` asc|desc, default desc; `limit` 1–100, default 20; `after` an item id).
 */
import { QmError } from "../../shared/errors.ts";
import { keyOf } from "../edge/caller.ts";
import type { Gateway } from "../gateway.ts";
import { badRequest } from "../request/body.ts";
import { storeOf } from "./store.ts";

const json = (body: unknown) =>
  new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });

/** A kept response: only for the key that made it, or an admin key (others: not found). */
export function getResponse(gw: Gateway, id: string, request: Request): Response {
  const store = storeOf(gw);
  const asker = keyOf(request);
  const kept = store.get(id, asker);
  if (!kept) throw store.missing(id, asker);
  return json(kept.response);
}

export function deleteResponse(gw: Gateway, id: string, request: Request): Response {
  const store = storeOf(gw);
  const asker = keyOf(request);
  if (!store.delete(id, asker)) throw store.missing(id, asker);
  return json({ id, object: "response", deleted: true });
}

export function listInputItems(gw: Gateway, id: string, request: Request): Response {
  const store = storeOf(gw);
  const asker = keyOf(request);
  const kept = store.get(id, asker);
  if (!kept) throw store.missing(id, asker);
  const query = new URL(request.url).searchParams;
  const order = query.get("order") ?? "desc";
  if (order !== "asc" && order !== "desc")
    throw badRequest('order must be "asc" or "desc"', "order");
  const limitText = query.get("limit") ?? "20";
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > 100) {
    throw badRequest("limit must be an integer from 1 to 100", "limit");
  }
  let items = order === "asc" ? kept.inputItems : [...kept.inputItems].reverse();
  const after = query.get("after");
  if (after !== null) {
    const at = items.findIndex((i) => i.id === after);
    if (at === -1)
      throw new QmError("not_found", `no input item "${after}" in response "${id}"`, {
        param: "after",
      });
    items = items.slice(at + 1);
  }
  const data = items.slice(0, limit);
  return json({
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: items.length > limit,
  });
}
