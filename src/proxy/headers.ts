/**
 * Hop-by-hop headers describe one connection, not the message (RFC 9110 §7.6.1), so a proxy
 * must not forward them; nor any header the `Connection` header names.
 */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function connectionListed(headers: Headers): Set<string> {
  const listed = new Set<string>();
  const value = headers.get("connection");
  if (value) for (const token of value.split(",")) listed.add(token.trim().toLowerCase());
  return listed;
}

/**
 * Headers to send upstream. `host` is rewritten by fetch, `content-length` is recomputed from the
 * body we send (it may have been rewritten), and the client's credentials for qm are not the
 * upstream's business.
 */
export function upstreamRequestHeaders(
  incoming: Headers,
  extraDrop: readonly string[] = [],
): Headers {
  const listed = connectionListed(incoming);
  const out = new Headers();
  incoming.forEach((value, key) => {
    if (HOP_BY_HOP.has(key) || listed.has(key)) return;
    if (
      key === "host" ||
      key === "content-length" ||
      key === "authorization" ||
      key === "x-api-key"
    ) {
      return;
    }
    if (key.startsWith("x-qm-")) return; // qm's own request controls are not the upstream's
    if (extraDrop.includes(key)) return;
    out.append(key, value);
  });
  return out;
}

/**
 * Headers to return to the client. Bodies are relayed still encoded (fetch runs with
 * `decompress: false`), so `content-encoding` stays true; the server sets the framing
 * (content-length or chunked) for the body it sends.
 */
export function clientResponseHeaders(upstream: Headers): Headers {
  const listed = connectionListed(upstream);
  const out = new Headers();
  upstream.forEach((value, key) => {
    if (HOP_BY_HOP.has(key) || listed.has(key) || key === "content-length") return;
    if (key === "date" || key === "server") return;
    out.append(key, value);
  });
  return out;
}
