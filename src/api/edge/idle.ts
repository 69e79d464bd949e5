/**
 * Bun closes a connection that is idle for `idleTimeout` seconds even while its handler is
 * still working; inference routes switch that off for their request (a model load can take
 * minutes). The switch must name the request Bun received, which the edge may have re-addressed
 * before routing: this maps the routed request back to it.
 */
export type IdleServer = { timeout(request: Request, seconds: number): void };

const received = new WeakMap<Request, { original: Request; server: IdleServer }>();

export function rememberOriginal(routed: Request, original: Request, server: IdleServer): void {
  received.set(routed, { original, server });
}

/** No idle timeout for this request's connection while it is being answered. */
export function noIdleTimeout(request: Request): void {
  const r = received.get(request);
  r?.server.timeout(r.original, 0);
}
