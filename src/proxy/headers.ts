/**
 * Hop-by-hop headers describe one connection, not the message (RFC 9110 §7.6.1), so a proxy
 * must not forward them; nor any header the `Connection` header names.
 */
const HOP_BY_HOP = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
];

/**
 * Not the upstream's business: `host` is set by fetch, `content-length` is recomputed from the
 * body we send (it may have been rewritten), the client's credentials are for qm, and qm's own
 * request controls (`X-QM-Hold-Ms`, `X-QM-Patience-Ms`) stay in qm. So do the headers a
 * Gateway API inference gateway adds on its way to qm (docs/cluster.md): the model name its
 * body-based routing copies out of the body (`X-Gateway-Model-Name`) and the endpoint its
 * picker chose and the one that served (`x-gateway-destination-endpoint[-served]`, the
 * endpoint picker protocol, GIE proposal 004) — addresses inside the cluster, which a model
 * server neither needs nor should learn.
 */
const REQUEST_DROP = new Set([
  ...HOP_BY_HOP,
  "host",
  "content-length",
  "authorization",
  "x-api-key",
  "x-qm-hold-ms",
  "x-qm-patience-ms",
  "x-gateway-model-name",
  "x-gateway-destination-endpoint",
  "x-gateway-destination-endpoint-served",
]);

/**
 * Bodies are relayed still encoded (fetch runs with `decompress: false`), so
 * `content-encoding` stays true; the server sets framing (content-length or chunked) for the
 * body it sends, and its own `date`.
 */
const RESPONSE_DROP = new Set([...HOP_BY_HOP, "content-length", "date", "server"]);

/**
 * Copies natively, then deletes the few names present that must go: cheaper per request than
 * rebuilding header by header, or deleting every name on the list whether it is there or not.
 */
function without(headers: Headers, drop: ReadonlySet<string>): Headers {
  const out = new Headers(headers);
  for (const key of headers.keys()) {
    if (!drop.has(key)) continue;
    out.delete(key);
    if (key !== "connection") continue;
    const named = headers.get("connection");
    if (named) for (const token of named.split(",")) out.delete(token.trim());
  }
  return out;
}

export function upstreamRequestHeaders(incoming: Headers): Headers {
  return without(incoming, REQUEST_DROP);
}

export function clientResponseHeaders(upstream: Headers): Headers {
  return without(upstream, RESPONSE_DROP);
}
