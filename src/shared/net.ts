/** Host names and loopback, as the edge (Host headers) and the port guard (proxy URLs) see them. */

/** The name of `host[:port]`, lower-case, without the port; IPv6 literals keep their brackets. */
export function hostnameOf(host: string): string {
  if (host.startsWith("[")) return host.slice(0, host.indexOf("]") + 1).toLowerCase();
  const colon = host.indexOf(":");
  return (colon < 0 ? host : host.slice(0, colon)).toLowerCase();
}

/**
 * A name only the local machine answers to: localhost, *.localhost (RFC 6761 §6.3),
 * 127.0.0.0/8 and ::1 (with or without brackets).
 */
export function isLoopbackName(name: string): boolean {
  const h = name.toLowerCase();
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (h === "[::1]" || h === "::1") return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}
