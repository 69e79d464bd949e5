/**
 * Where a model name goes among the peers: a pure decision over a snapshot of the table (no
 * I/O, no clock of its own). Local models are the caller's first choice and never reach here.
 * See design.md for the decision tree; tests/peers/route.test.ts guards it.
 */

/** What one peer says of one model: loaded and ready, or only offered (it could serve it). */
export type Offer = "ready" | "offered";

export interface PeerView {
  id: string;
  /** Config order (the last tie-break). */
  order: number;
  weight: number;
  /** The breaker lets a request through now. */
  available: boolean;
  inflight: number;
  /** Models resident on the peer (a qm peer's status); 0 when unknown. */
  resident: number;
  /** The peer's models by the name it knows them by. */
  models: ReadonlyMap<string, Offer>;
  /**
   * What loading `remote` there would evict (a managed node's own admission); absent: the
   * resident count stands for it.
   */
  cost?: ((remote: string) => number) | undefined;
  /**
   * A qm peer's exact aliases (alias → its model's id there), from its status: a name routes
   * to the peer as its model does and is sent as the client wrote it (the peer resolves it).
   */
  aliases?: ReadonlyMap<string, string> | undefined;
}

/** What `p` says of `name`, a model id or an alias of one there; undefined: not offered. */
function offerOf(p: PeerView, name: string): Offer | undefined {
  const direct = p.models.get(name);
  if (direct !== undefined || p.aliases === undefined) return direct;
  const id = p.aliases.get(name);
  return id === undefined ? undefined : p.models.get(id);
}

export type Route =
  | { kind: "peer"; peer: string; remote: string }
  /** `PEER/MODEL` named a peer that does not offer the model. */
  | { kind: "not_offered"; peer: string; remote: string }
  /** `PEER/MODEL` named a peer that is down, or a bare name only down peers offer. */
  | { kind: "down"; peer: string; remote: string };

/**
 * `name` as `PEER/MODEL` (when PEER is a peer) or bare; `skip` lists peers already tried.
 * `undefined`: no peer serves it.
 */
export function route(
  name: string,
  peers: readonly PeerView[],
  skip: ReadonlySet<string> = new Set(),
): Route | undefined {
  const slash = name.indexOf("/");
  if (slash > 0) {
    const named = peers.find((p) => p.id === name.slice(0, slash));
    if (named) {
      const remote = name.slice(slash + 1);
      if (offerOf(named, remote) === undefined)
        return { kind: "not_offered", peer: named.id, remote };
      if (!named.available || skip.has(named.id)) return { kind: "down", peer: named.id, remote };
      return { kind: "peer", peer: named.id, remote };
    }
  }
  const open = peers.filter(
    (p) => p.available && !skip.has(p.id) && offerOf(p, name) !== undefined,
  );
  const ready = open.filter((p) => offerOf(p, name) === "ready");
  const best =
    ready.length > 0 ? ready.sort(byLoad)[0] : open.sort((a, b) => byRoom(a, b, name))[0];
  if (best) return { kind: "peer", peer: best.id, remote: name };
  // Offered only by peers that are down: say which (a first choice, not a failover's next).
  if (skip.size > 0) return undefined;
  const down = peers
    .filter((p) => offerOf(p, name) !== undefined)
    .sort((a, b) => a.order - b.order)[0];
  return down ? { kind: "down", peer: down.id, remote: name } : undefined;
}

/** Least in flight, then the highest weight, then config order. */
function byLoad(a: PeerView, b: PeerView): number {
  return a.inflight - b.inflight || b.weight - a.weight || a.order - b.order;
}

/** A peer that must load the model: the least to evict (or fewest resident), then load. */
function byRoom(a: PeerView, b: PeerView, name: string): number {
  const cost = (p: PeerView) => (p.cost ? p.cost(name) : p.resident);
  return cost(a) - cost(b) || byLoad(a, b);
}
