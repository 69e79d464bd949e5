/**
 * The edge: everything a request must pass before any route sees it, decided from one parse of
 * the request-target (`target.ts`) — method, target, Host, Origin, body size, API key — in that
 * order, each refusal in the envelope of the API the path belongs to. The router is then handed
 * a request whose URL it cannot misread, so the path that was authorized is the path routed.
 */
import type { ApiKey } from "../../keys/api-key.ts";
import { KeyTable } from "../../keys/table.ts";
import { QmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import { UI_ASSET_PATHS } from "../../ui/paths.ts";
import { anthropicError } from "../anthropic/errors.ts";
import { isAnthropicPath } from "../anthropic/routes.ts";
import type { Gateway } from "../gateway.ts";
import { ollamaError } from "../ollama/errors.ts";
import { isOllamaPath } from "../ollama/routes.ts";
import { openaiError } from "../openai/errors.ts";
import { tooLarge } from "../request/body.ts";
import { isAdminRoute } from "./admin-routes.ts";
import { rememberKey } from "./caller.ts";
import { checkOrigin, corsHeaders, preflight } from "./cors.ts";
import { hostPolicy } from "./hosts.ts";
import type { IdleServer } from "./idle.ts";
import { parseTarget } from "./target.ts";

export interface EdgeOptions {
  /** The listener is bound to a loopback address (the default host policy depends on it). */
  loopback: boolean;
  log: Logger;
}

/**
 * Routes a request the edge let through; `path` is the one it authorized. `received` is the
 * request Bun received (`request` may be it re-addressed) and `server` its listener (null
 * without a socket): what the idle-timeout switch acts on (`idle.ts`).
 */
type Handler = (
  request: Request,
  path: string,
  received: Request,
  server: IdleServer | null,
) => Response | Promise<Response>;

/** Methods any route may use; TRACE, CONNECT and inventions get 405 here. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
/**
 * Paths open without a key: `/health` and `/ready` (load balancers and orchestrators — kubelet,
 * systemd — probe them and send none; neither answer says more than up / ready or not) and, to
 * GET and HEAD, the dashboard's static files, which hold no data (the page asks for the key and
 * sends it on every data call). Exact paths only.
 */
const PROBE_PATHS: ReadonlySet<string> = new Set(["/health", "/ready"]);

function isOpenPath(path: string, method: string, openMetrics: boolean): boolean {
  if (PROBE_PATHS.has(path)) return true;
  if (method !== "GET" && method !== "HEAD") return false;
  // `metrics_on_api = "open"`: an endpoint picker scrapes `/metrics` on the inference port and
  // sends no key (docs/cluster.md). Exactly that path; the Host check above still applies.
  return UI_ASSET_PATHS.has(path) || (openMetrics && path === "/metrics");
}

/**
 * Elysia finds the path at the first `/` from index 11 of the URL, which assumes a host of at
 * least four characters after `http://`. A shorter one (`Host: qm`) would make it route a
 * different path than the one authorized; such requests are re-addressed before routing.
 */
const ROUTER_PATH_FROM = 11;

export function createEdge(gw: Gateway, route: Handler, opts: EdgeOptions) {
  const { server } = gw.config;
  // The keys are read per request: a config reload replaces them, and the table follows.
  const keys = KeyTable.of(gw.config);
  const hosts = hostPolicy(server.allowedHosts, opts.loopback);
  // Clients send the same Host on every request: the last one's verdict is kept.
  let lastHostname: string | null = null;
  let lastAllowed = false;
  const origins = server.corsOrigins;
  const limit = server.maxBodyBytes;
  const openMetrics = server.metricsOnApi === "open";

  return async function edge(request: Request, srv: IdleServer | null): Promise<Response> {
    const url = request.url;
    const target = parseTarget(url, request.headers.get("host"));
    if (target instanceof QmError) return envelopeFor(roughPath(url))(target);
    const { path } = target;
    const method = request.method;
    if (!METHODS.has(method)) {
      return refuse(
        path,
        new QmError("method_not_allowed", `${method} is not allowed on ${path}`),
        {
          allow: [...METHODS].join(", "),
        },
      );
    }
    if (path.includes("%") && !WELL_ENCODED.test(path)) {
      return refuse(path, new QmError("bad_request", "the path has a malformed %-escape"));
    }
    if (target.host !== "") {
      if (target.hostname !== lastHostname) {
        lastAllowed = hosts.allows(target.hostname);
        lastHostname = target.hostname;
      }
      if (!lastAllowed) {
        return refuse(
          path,
          new QmError(
            "forbidden",
            `Host "${target.host}" is not allowed on this listener (it answers to ${hosts.describe}); ` +
              "add it to server.allowed_hosts",
          ),
        );
      }
    }
    const origin = checkOrigin(
      request.headers.get("origin"),
      request.headers.get("sec-fetch-site"),
      target.host,
      origins,
    );
    if (!origin.ok) {
      return refuse(
        path,
        new QmError(
          "forbidden",
          `requests from origin ${request.headers.get("origin") ?? "(cross-site)"} are not allowed; ` +
            "add it to server.cors_origins",
        ),
      );
    }
    if (method === "OPTIONS") return preflight(origin.allowOrigin, request);
    const declared = request.headers.get("content-length");
    if (declared !== null && Number(declared) > limit) {
      return refuse(path, tooLarge(limit));
    }
    let key: ApiKey = keys.anonymous;
    // An open path is open to every caller, an admin route among them (`/metrics` when open).
    const open = isOpenPath(path, method, openMetrics);
    if (keys.required) {
      if (open) key = keys.nobody;
      else {
        const presented = presentedKey(request.headers);
        const found = presented ? keys.lookup(presented) : null;
        if (!found) {
          return withCors(
            refuse(
              path,
              new QmError(
                "unauthorized",
                presented
                  ? "invalid API key"
                  : "an API key is required: send Authorization: Bearer KEY or x-api-key: KEY",
              ),
            ),
            origin.allowOrigin,
          );
        }
        key = found;
      }
    }
    if (!key.admin && !open && isAdminRoute(path)) {
      opts.log.debug(`${method} ${path}: refused to key ${key.name} (an admin route)`);
      return withCors(
        refuse(
          path,
          new QmError(
            "forbidden",
            `key "${key.name}" may not ${method} ${path}: it is an admin route ([keys.${key.name}] admin = true)`,
          ),
        ),
        origin.allowOrigin,
      );
    }
    let routed = request;
    if (target.pathAt < ROUTER_PATH_FROM || method === "HEAD") {
      // HEAD is routed as the GET it mirrors (RFC 9110 §9.3.2), its body dropped below: the
      // router would otherwise read the whole body to count it, for ever on /api/events.
      const at =
        target.pathAt < ROUTER_PATH_FROM ? `http://localhost${url.slice(target.pathAt)}` : url;
      routed =
        method === "HEAD"
          ? new Request(at, { method: "GET", headers: request.headers, signal: request.signal })
          : new Request(at, request);
    }
    rememberKey(routed, key);
    let response: Response;
    try {
      response = await route(routed, path, request, srv);
    } catch (err) {
      opts.log.error(
        `${method} ${path} (key ${key.name}): ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
      );
      response = refuse(
        path,
        new QmError("internal", "qm failed to handle this request (see its log)"),
      );
    }
    if (method === "HEAD" && response.body) {
      // HEAD is GET without the body (RFC 9110 §9.3.2); an endless stream (/api/events) must
      // not keep its headers waiting.
      void response.body.cancel().catch(() => {});
      response = new Response(null, response);
    }
    return withCors(response, origin.allowOrigin);
  };
}

/** A refusal in the envelope of the API `path` belongs to (worked out only for a refusal). */
function refuse(path: string, err: QmError, headers?: Record<string, string>): Response {
  return envelopeFor(path)(err, headers);
}

function envelopeFor(path: string) {
  if (isOllamaPath(path)) return ollamaError;
  return isAnthropicPath(path) ? anthropicError : openaiError;
}

/** The path of a target that did not parse, good enough to pick the API's envelope. */
function roughPath(url: string): string {
  const at = url.startsWith("/") ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  if (at < 0) return "/";
  const end = url.slice(at).search(/[?#]/);
  return end < 0 ? url.slice(at) : url.slice(at, at + end);
}

/** Every `%` starts a two-digit hex escape (RFC 3986 §2.1). */
const WELL_ENCODED = /^(?:[^%]|%[0-9A-Fa-f]{2})*$/;

function withCors(response: Response, allowOrigin: string | null): Response {
  if (allowOrigin === null) return response;
  try {
    corsHeaders(allowOrigin, response.headers);
    return response;
  } catch {
    // Immutable headers (a fetched upstream response passed as is): copy them once.
    const copy = new Response(response.body, response);
    corsHeaders(allowOrigin, copy.headers);
    return copy;
  }
}

function presentedKey(headers: Headers): string | null {
  const auth = headers.get("authorization");
  if (auth?.toLowerCase().startsWith("bearer ")) return auth.slice(7).trim();
  return headers.get("x-api-key");
}
