/**
 * The routing table: each peer's models (listed in its config, or discovered from a qm peer),
 * their state, the requests in flight to it and its breaker. `resolve` turns a name into a
 * peer's model (`target.ts`) by the pure `route`; the exchange tells the table how each call
 * went (`begin` / `end`). Time is the injected clock's.
 */

import { namedNodeModels } from "../config/node-models.ts";
import type { ModelConfig, PeerConfig } from "../config/types.ts";
import { QmError } from "../shared/errors.ts";
import { Breaker, type PeerHealth } from "./breaker.ts";
import { MAX_PEER_MODELS } from "./limits.ts";
import { type Offer, type PeerView, route } from "./route.ts";
import { peerModel, shownUrl } from "./target.ts";

export interface PeerStatusJson {
  name: string;
  /** The peer's URL, a password in it shown as `***` (`shownUrl`). */
  url: string;
  kind: PeerConfig["kind"];
  state: PeerHealth;
  models: { id: string; state: Offer }[];
  inflight: number;
  last_error: string | null;
  /** Wall-clock epoch ms until which the peer is not tried, or null when up. */
  down_until_ms: number | null;
}

/** What the runtime says of its managed nodes' models (`PeerTable.managed`). */
export interface ManagedLookup {
  /** The scheduler's model for `remote` on `node`, or undefined when it has none. */
  model(node: string, remote: string): ModelConfig | undefined;
  /** Requests in flight on the node's models. */
  inflight(node: string): number;
  /** How many models loading `remote` would unload there now (unloadable: a large number). */
  cost(node: string, remote: string): number;
}

/** A peer's models named in its config (a node's: `models`, `est_vram_gb`'s keys, `pinned`). */
function namedOf(config: PeerConfig): string[] {
  return config.kind === "mistralrs" ? namedNodeModels(config) : config.models;
}

/** How a call to a peer went: answered (any status below 500), or failed before any byte. */
export type PeerOutcome = { ok: true } | { ok: false; error: string };

class Peer {
  readonly breaker = new Breaker();
  inflight = 0;
  resident = 0;
  models: Map<string, Offer>;
  /** A qm peer's exact aliases (alias → model id), from its status; none until then. */
  aliases: ReadonlyMap<string, string> = new Map();
  constructor(
    readonly config: PeerConfig,
    readonly order: number,
  ) {
    // An openai peer's listed models are always there to serve; a qm peer's listed ones are
    // offered until its own status says more; a node's named ones until the scheduler loads them.
    this.models = new Map(namedOf(config).map((m) => [m, "offered" as Offer]));
  }
}

export class PeerTable {
  private readonly peers = new Map<string, Peer>();

  constructor(
    configs: Record<string, PeerConfig>,
    /** Milliseconds on the injected clock. */
    private readonly now: () => number,
    /** Told when a peer's health, or the state of one of its models, changes (`event: peer`). */
    private readonly onChange: (s: PeerStatusJson) => void = () => {},
    /** Wall-clock ms at clock `now()`, for `down_until_ms`. */
    private readonly wall: () => number = Date.now,
  ) {
    let order = 0;
    for (const c of Object.values(configs)) this.peers.set(c.id, new Peer(c, order++));
  }

  /**
   * Managed mistral.rs nodes' models are this box's scheduler's (src/peers/mistralrs.md): the
   * runtime says which model a name routes to, and what is in flight and would be evicted there.
   */
  managed: ManagedLookup | null = null;

  get size(): number {
    return this.peers.size;
  }

  /**
   * The peer model `name` routes to, or undefined when no peer serves it. `PEER/MODEL` for a
   * peer that lacks the model, or is down, throws naming the peer; so does a bare name that
   * only down peers offer. `skip`: peers already tried (then none left is undefined).
   */
  resolve(name: string, skip?: ReadonlySet<string>): ModelConfig | undefined {
    const r = route(name, this.views(), skip);
    if (r === undefined) return undefined;
    const peer = this.peers.get(r.peer)!;
    if (r.kind === "not_offered") {
      throw new QmError(
        "model_not_found",
        `peer "${r.peer}" does not offer model "${r.remote}"; GET /v1/models lists the models of every peer`,
        { param: "model" },
      );
    }
    if (r.kind === "down") {
      const b = peer.breaker;
      const inS = Math.max(1, Math.ceil((b.downUntil - this.now()) / 1000));
      throw new QmError(
        "upstream_failed",
        `peer "${r.peer}" is down (${b.lastError ?? "failed"}); it is tried again in ${inS} s`,
        { retryAfterS: inS },
      );
    }
    if (peer.config.kind === "mistralrs") return this.managed?.model(r.peer, r.remote);
    const explicit = name !== r.remote;
    return peerModel(peer.config, r.remote, explicit ? name : r.remote);
  }

  /**
   * A call to `peer` starts: "pass", or "trial" for the one call a half-open breaker lets
   * through; "no" when it refuses (the peer is down, or another call has the trial).
   */
  begin(peer: string): "pass" | "trial" | "no" {
    const p = this.peers.get(peer);
    if (!p) return "no";
    const answer = p.breaker.allow(this.now());
    if (answer !== "no") p.inflight++;
    return answer;
  }

  /** A trial call (`begin` said "trial") ended without a word on the peer's health. */
  abandon(peer: string): void {
    this.peers.get(peer)?.breaker.abandon();
  }

  /** The call `begin` started is over, its answer relayed or not (once per begun call). */
  end(peer: string): void {
    const p = this.peers.get(peer);
    if (p) p.inflight = Math.max(0, p.inflight - 1);
  }

  /**
   * How the peer answered (a call's first byte or its failure before one, a background probe
   * of `GET /health`, a status read): the breaker's input.
   */
  report(peer: string, outcome: PeerOutcome): void {
    const p = this.peers.get(peer);
    if (p) this.settle(p, outcome);
  }

  /** What a qm peer's status says it serves, and how many models it has resident. */
  discovered(peer: string, models: ReadonlyMap<string, Offer>, resident: number): void {
    const p = this.peers.get(peer);
    if (!p) return;
    const merged = new Map<string, Offer>(p.config.models.map((m) => [m, "offered"]));
    for (const [id, offer] of models) merged.set(id, offer);
    const changed = !sameOffers(p.models, merged);
    p.models = merged;
    p.resident = resident;
    if (changed) this.onChange(this.statusOf(p));
  }

  /**
   * One model's change on a qm peer (its `event: model`). A model it did not list before is
   * taken only while the peer has fewer than `MAX_PEER_MODELS` discovered: false when refused.
   */
  modelChanged(peer: string, model: string, offer: Offer): boolean {
    const p = this.peers.get(peer);
    if (!p) return true;
    const was = p.models.get(model);
    if (was === undefined && p.models.size >= MAX_PEER_MODELS + p.config.models.length) {
      return false;
    }
    p.models.set(model, offer);
    if (was !== "ready" && offer === "ready") p.resident++;
    if (was !== offer) this.onChange(this.statusOf(p));
    return true;
  }

  /** The peer's config, for the watch that follows it. */
  configs(): PeerConfig[] {
    return [...this.peers.values()].map((p) => p.config);
  }

  /** Clock ms until which `peer` is down (0: up). */
  downUntil(peer: string): number {
    return this.peers.get(peer)?.breaker.downUntil ?? 0;
  }

  /** Every peer model by its listed id (`PEER/MODEL`), for `/v1/models` and `/api/tags`. */
  listing(): { id: string; peer: string; remote: string; state: Offer }[] {
    const out: { id: string; peer: string; remote: string; state: Offer }[] = [];
    for (const p of this.peers.values()) {
      // A node's models are listed as this box's own (`NODE/MODEL` is a configured id).
      if (p.config.kind === "mistralrs") continue;
      for (const [remote, state] of p.models) {
        out.push({ id: `${p.config.id}/${remote}`, peer: p.config.id, remote, state });
      }
    }
    return out;
  }

  /** Every peer model as the exchange would see it (`PEER/MODEL` ids), for the listings. */
  models(): { model: ModelConfig; state: Offer }[] {
    return this.listing().map((e) => ({
      model: peerModel(this.peers.get(e.peer)!.config, e.remote, e.id),
      state: e.state,
    }));
  }

  status(): PeerStatusJson[] {
    return [...this.peers.values()].map((p) => this.statusOf(p));
  }

  health(peer: string): PeerHealth | undefined {
    const p = this.peers.get(peer);
    return p?.breaker.health(this.now());
  }

  private settle(p: Peer, outcome: PeerOutcome): void {
    const before = p.breaker.health(this.now());
    if (outcome.ok) p.breaker.succeeded();
    else p.breaker.failed(this.now(), outcome.error);
    if (p.breaker.health(this.now()) !== before || !outcome.ok) this.onChange(this.statusOf(p));
  }

  private statusOf(p: Peer): PeerStatusJson {
    const now = this.now();
    const state = p.breaker.health(now);
    return {
      name: p.config.id,
      url: shownUrl(p.config.url),
      kind: p.config.kind,
      state,
      models: [...p.models].map(([id, s]) => ({ id, state: s })),
      inflight: p.inflight,
      last_error: p.breaker.lastError,
      down_until_ms: state === "up" ? null : this.wall() + Math.max(0, p.breaker.downUntil - now),
    };
  }

  private views(): PeerView[] {
    const now = this.now();
    const managed = this.managed;
    return [...this.peers.values()].map((p) => {
      const node = p.config.kind === "mistralrs" && managed !== null ? p.config.id : null;
      return {
        id: p.config.id,
        order: p.order,
        weight: p.config.weight,
        available: p.breaker.available(now),
        inflight: node !== null ? managed!.inflight(node) : p.inflight,
        resident: p.resident,
        models: p.models,
        aliases: p.aliases,
        cost: node !== null ? (remote: string) => managed!.cost(node, remote) : undefined,
      };
    });
  }

  /**
   * The peer model `name` names (as `resolve` would route it, each peer taken as up), or
   * undefined: for what qm can say of a model without calling anyone (`/api/show`).
   */
  lookup(name: string): ModelConfig | undefined {
    const views = this.views().map((v) => ({ ...v, available: true }));
    const r = route(name, views);
    if (r?.kind !== "peer") return undefined;
    const config = this.peers.get(r.peer)!.config;
    if (config.kind === "mistralrs") return this.managed?.model(r.peer, r.remote);
    return peerModel(config, r.remote, name);
  }

  /** The exact aliases a qm peer's status lists (alias → model id), replacing the last ones. */
  discoveredAliases(peer: string, aliases: ReadonlyMap<string, string>): void {
    const p = this.peers.get(peer);
    if (p) p.aliases = aliases;
  }
}

/** The same models in the same states (in any order). */
function sameOffers(a: ReadonlyMap<string, Offer>, b: ReadonlyMap<string, Offer>): boolean {
  if (a.size !== b.size) return false;
  for (const [id, offer] of a) if (b.get(id) !== offer) return false;
  return true;
}
