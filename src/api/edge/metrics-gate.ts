/**
 * The metrics listener's edge (`server.metrics_listen`): it serves one read-only path and needs
 * no key, but what it shows — model ids, counters, load times — is no business of a web page.
 * A page that rebinds its own DNS name to the listener's address (DNS rebinding) still sends its
 * name in `Host`, so the listener answers only the names `server.allowed_hosts` admits, by the
 * same policy as the API listeners (`hosts.ts`: a loopback listener admits loopback names).
 */
import { QmError } from "../../shared/errors.ts";
import { hostPolicy } from "./hosts.ts";
import { parseTarget } from "./target.ts";

export interface MetricsHosts {
  /** `server.allowed_hosts`. */
  allowedHosts: readonly string[];
  /** The listener is bound to a loopback address. */
  loopback: boolean;
}

/** The refusal of a request whose target or Host the listener does not take, or null. */
export function metricsGate(hosts: MetricsHosts): (request: Request) => QmError | null {
  const policy = hostPolicy(hosts.allowedHosts, hosts.loopback);
  return (request) => {
    const target = parseTarget(request.url, request.headers.get("host"));
    if (target instanceof QmError) return target;
    if (target.host === "" || policy.allows(target.hostname)) return null;
    return new QmError(
      "forbidden",
      `Host "${target.host}" is not allowed on this listener (it answers to ${policy.describe}); ` +
        "add it to server.allowed_hosts",
    );
  };
}
