/**
 * The request-target, parsed once. Routing, authorization and the host and origin checks all
 * read the path from here, so no two of them can disagree about which route a request is for.
 *
 * Bun hands us `request.url` as `http://` + the Host header + the target with its dot-segments
 * removed (an absolute-form target, RFC 9112 §3.2.2, arrives already reduced to its path). When
 * the Host header is not a valid authority Bun gives up and passes the bare target instead, so
 * a URL that does not start with `http://` means the Host was malformed.
 */
import { QmError } from "../../shared/errors.ts";
import { hostnameOf } from "../../shared/net.ts";

export interface Target {
  /** `host[:port]` as sent, or "" when the request had no Host (HTTP/1.0). */
  host: string;
  /** Host name alone, lower-case, brackets kept on IPv6 literals (`[::1]`). */
  hostname: string;
  /** The path, still percent-encoded, as the router matches it. */
  path: string;
  /** Index in `url` where the path starts. */
  pathAt: number;
}

/** RFC 9110 §7.2 / RFC 3986 §3.2: an IP-literal or reg-name, then an optional port. */
const AUTHORITY = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+=%-]+)(?::[0-9]{0,5})?$/;

/** Longest request-target accepted; longer ones get 414 (RFC 9112 §3 recommends ≥ 8000). */
export const MAX_TARGET_LENGTH = 16 * 1024;

/** The last valid Host header and its name: clients send the same one on every request. */
let lastHost: string | null = null;
let lastHostname = "";

export function parseTarget(url: string, hostHeader: string | null): Target | QmError {
  let hostname = "";
  if (hostHeader !== null) {
    if (hostHeader === lastHost) hostname = lastHostname;
    else if (!AUTHORITY.test(hostHeader)) {
      // Two Host headers arrive joined ("a, b"): RFC 9112 §3.2 requires a 400 for that too.
      return new QmError("bad_request", "the Host header is not a valid host[:port]");
    } else {
      hostname = hostnameOf(hostHeader);
      lastHost = hostHeader;
      lastHostname = hostname;
    }
  }
  let pathAt: number;
  if (url.startsWith("http://") || url.startsWith("https://")) {
    pathAt = url.indexOf("/", url.indexOf("//") + 2);
    if (pathAt < 0) return new QmError("bad_request", "the request-target has no path");
  } else if (url.startsWith("/")) {
    pathAt = 0; // no Host at all (HTTP/1.0): Bun passes the target as it came
  } else {
    return new QmError("bad_request", "the request-target must be an absolute path");
  }
  if (url.length - pathAt > MAX_TARGET_LENGTH) {
    return new QmError(
      "uri_too_long",
      `the request-target is longer than ${MAX_TARGET_LENGTH} bytes`,
    );
  }
  // A fragment is never sent on the wire (RFC 9110 §4.2.5); one that arrives is an attempt to
  // make two parsers see two different paths.
  if (url.indexOf("#", pathAt) >= 0) {
    return new QmError("bad_request", "the request-target must not contain a fragment (#)");
  }
  const q = url.indexOf("?", pathAt);
  const path = q < 0 ? url.slice(pathAt) : url.slice(pathAt, q);
  return { host: hostHeader ?? "", hostname, path, pathAt };
}
