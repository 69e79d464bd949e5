/**
 * Browsers and qm. Every cross-site request a browser makes with `fetch` or a form POST carries
 * `Origin` (WHATWG Fetch §3.1), so refusing unknown origins stops a web page from driving qm —
 * loading models, spending the GPU, reading answers — while clients that are not browsers (curl,
 * SDKs, agents) send no `Origin` and are unaffected. Listed origins get CORS headers and their
 * preflights answered; qm's own origin (its dashboard) is always allowed.
 */

export interface OriginVerdict {
  ok: boolean;
  /** Set when the origin may read the answer: the value for Access-Control-Allow-Origin. */
  allowOrigin: string | null;
}

const SAME: OriginVerdict = { ok: true, allowOrigin: null };
const REFUSED: OriginVerdict = { ok: false, allowOrigin: null };

/**
 * `origins` is `server.cors_origins` (lower-case, no trailing slash; `*` = any). `host` is the
 * request's Host header, already checked against the listener's host policy.
 */
export function checkOrigin(
  origin: string | null,
  fetchSite: string | null,
  host: string,
  origins: readonly string[],
): OriginVerdict {
  if (origin === null) {
    // Browsers that omit Origin (a no-cors GET) still say where the request comes from.
    if (fetchSite === "cross-site" || fetchSite === "same-site") {
      return origins.includes("*") ? SAME : REFUSED;
    }
    return SAME;
  }
  const o = origin.toLowerCase();
  if (isOwnOrigin(o, host)) return SAME;
  if (origins.includes(o) || origins.includes("*")) return { ok: true, allowOrigin: origin };
  return REFUSED;
}

/** `http(s)://host[:port]` naming exactly the authority the request was sent to. */
function isOwnOrigin(origin: string, host: string): boolean {
  if (host === "") return false;
  const h = host.toLowerCase();
  return origin === `http://${h}` || origin === `https://${h}`;
}

/** Response headers qm sets that a page may read (Fetch §3.2.6 hides the rest). */
const EXPOSED = "x-qm-model, x-qm-model-loaded, x-qm-wait-ms, request-id, retry-after";
const METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS";

export function corsHeaders(allowOrigin: string, headers: Headers): void {
  headers.set("access-control-allow-origin", allowOrigin);
  headers.set("access-control-expose-headers", EXPOSED);
  headers.append("vary", "Origin");
}

/** The answer to `OPTIONS` (a CORS preflight when it names a method to come). */
export function preflight(allowOrigin: string | null, request: Request): Response {
  const headers = new Headers({ allow: METHODS });
  if (allowOrigin !== null) {
    corsHeaders(allowOrigin, headers);
    headers.set("access-control-allow-methods", METHODS);
    const requestedHeaders = request.headers.get("access-control-request-headers");
    if (requestedHeaders) headers.set("access-control-allow-headers", requestedHeaders);
    headers.set("access-control-max-age", "600");
  }
  return new Response(null, { status: 204, headers });
}
