/**
 * A signal for work done on a client's behalf — waiting for a model, calling the upstream —
 * that aborts when the client disconnects (`request.signal`) or when we cancel it ourselves
 * (a placeholder stream the client stopped reading). `detach` drops the link once the
 * exchange is over, so a finished request holds no listener.
 */
export interface ClientLink {
  readonly signal: AbortSignal;
  abort(): void;
  detach(): void;
}

export function linkToClient(request: Request): ClientLink {
  const aborter = new AbortController();
  const onClientGone = () => aborter.abort();
  request.signal.addEventListener("abort", onClientGone, { once: true });
  return {
    signal: aborter.signal,
    abort: () => aborter.abort(),
    detach: () => request.signal.removeEventListener("abort", onClientGone),
  };
}
