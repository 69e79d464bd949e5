/**
 * The key a request was authorized with (src/keys): set by the edge on the request it hands the
 * router, read by every route that must know who asks. Kept beside the request, never in it:
 * nothing a client sends can set it. A request the edge never saw (a test calling the routes
 * directly) is `anonymous`, as when no key is configured.
 */
import { ANONYMOUS_KEY_NAME } from "../../config/keys.ts";
import { type ApiKey, unrestricted } from "../../keys/api-key.ts";

const keys = new WeakMap<Request, ApiKey>();
const ANONYMOUS = unrestricted(ANONYMOUS_KEY_NAME);

export function rememberKey(request: Request, key: ApiKey): void {
  keys.set(request, key);
}

/** Who `request` is (`anonymous` for no request at all). */
export function keyOf(request: Request | undefined): ApiKey {
  return (request && keys.get(request)) ?? ANONYMOUS;
}
