/**
 * Which Host names a listener answers to. A web page can make a browser send requests to
 * 127.0.0.1 through a name the attacker controls (DNS rebinding): the browser then believes the
 * page and qm share an origin. The browser still sends the attacker's name in `Host`, so a
 * loopback listener that only answers to loopback names cannot be reached that way.
 */
import { hostnameOf, isLoopbackName } from "../../shared/net.ts";

export interface HostPolicy {
  allows(hostname: string): boolean;
  /** For the 403 message: what this listener accepts. */
  readonly describe: string;
}

/**
 * `allowed` is `server.allowed_hosts` (lower-case): exact names, `*.suffix` wildcards, or `*`.
 * Empty: a loopback listener admits loopback names only; any other listener admits any host.
 * Loopback names are always admitted on a loopback listener — only a local client sends them.
 */
export function hostPolicy(allowed: readonly string[], loopbackListener: boolean): HostPolicy {
  if (allowed.includes("*") || (allowed.length === 0 && !loopbackListener)) {
    return { allows: () => true, describe: "any host" };
  }
  const exact = new Set(allowed.filter((h) => !h.startsWith("*.")).map(hostnameOf));
  const suffixes = allowed.filter((h) => h.startsWith("*.")).map((h) => h.slice(1));
  const names = [...(loopbackListener ? ["localhost", "127.0.0.1", "[::1]"] : []), ...allowed];
  return {
    allows: (hostname) =>
      (loopbackListener && isLoopbackName(hostname)) ||
      exact.has(hostname) ||
      suffixes.some((s) => hostname.endsWith(s)),
    describe: names.join(", "),
  };
}
