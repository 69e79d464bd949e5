/**
 * What one good `GET /v1/models` of a managed node changes (src/peers/mistralrs.md, "Following
 * the node"): models found, models loaded or unloaded outside qm, models gone from the list,
 * and adopted models over the node's limits. Called by the node's poll (`nodes.ts`).
 */
import { nodeModel, nodeModelId } from "../config/node-models.ts";
import type { Config, ModelConfig, PeerConfig } from "../config/types.ts";
import type { NodeModelStatus } from "../peers/mistralrs.ts";
import type { NodeServer } from "../peers/node-server.ts";
import { nodeExcess } from "../policy/node.ts";
import type { ModelState } from "../scheduler/types.ts";
import type { Logger } from "../shared/log.ts";

/** At most this many models are taken from one node's list; longer ids are passed over. */
const MAX_DISCOVERED = 1000;
const MAX_ID_LENGTH = 256;

/** What following a node needs of the scheduler and the runtime. */
export interface FollowHost {
  config: Config;
  log: Logger;
  state(id: string): ModelState;
  /** The model is in a transition (starting, stopping, a swap or a stop in progress). */
  inTransition(id: string): boolean;
  inflight(id: string): number;
  /** Models holding memory, least recently used first (the scheduler's order). */
  runningLru(): string[];
  adopt(id: string): void;
  gone(id: string, detail: string): void;
  unload(id: string): void;
  /** A model found on a node joins the scheduler (like a `?ctx=` variant). */
  addModel(model: ModelConfig): void;
}

/** The node as it is followed. */
export interface FollowedNode {
  config: PeerConfig;
  /** false after `no_loader_config`, true once it unloaded a model (or lists one unloaded). */
  canUnload: boolean | null;
  /** The last thing said about adopted models over its limits (said again only when it changes). */
  excessNote: string;
}

/** The node's models and their supervisors. */
export interface NodeModels {
  of(node: string): ModelConfig[];
  server(id: string): NodeServer | undefined;
}

/**
 * Discovery, adoption and models gone. An id listed only `reloading` is not discovered: it may
 * be what a failed reload left behind (mistral.rs keeps the mark of a reload of an id it does
 * not have, for good); it is found once it settles. A model in a transition (its own stop or
 * start under way) is left to that transition.
 */
export function reconcile(
  host: FollowHost,
  models: NodeModels,
  n: FollowedNode,
  listed: ReadonlyMap<string, NodeModelStatus>,
): void {
  const name = n.config.id;
  const discover = n.config.models.length === 0;
  let found = models.of(name).filter((m) => m.node!.discovered).length;
  for (const [remote, status] of listed) {
    if (!discover || host.config.models[nodeModelId(name, remote)]) continue;
    if (status === "reloading" || !usableId(remote) || found >= MAX_DISCOVERED) continue;
    found++;
    host.log.info(`node ${name}: found model ${remote} (${status})`);
    host.addModel(nodeModel(n.config, remote, true));
  }
  for (const model of models.of(name)) {
    const id = model.id;
    const server = models.server(id);
    if (host.inTransition(id) || server?.unloading) continue;
    const remote = model.node!.remote;
    const status = listed.get(remote);
    const state = host.state(id);
    if (status === "loaded" && (state === "stopped" || state === "failed")) {
      host.log.info(`node ${name}: ${remote} was loaded outside qm; it is counted now`);
      server?.adopted();
      host.adopt(id);
    } else if (state === "ready" && (status === "unloaded" || status === undefined)) {
      const why =
        status === undefined ? "is no longer listed by the node" : "was unloaded outside qm";
      host.log.info(`node ${name}: ${remote} ${why}`);
      server?.vanished();
      host.gone(
        id,
        status === undefined
          ? `no longer listed by node "${name}"`
          : `unloaded on node "${name}" outside qm`,
      );
    }
  }
}

/**
 * Adopted models may hold more than the node's limits: the excess is unloaded, least recently
 * used first — only on a node that has shown it can unload (on stock `mistralrs from-config`
 * serving an unload drops the model for good). What stays, and why, is logged once. Not while
 * a swap or a stop is under way there: its evictees are leaving, and a later poll looks again.
 */
export function keepToLimits(host: FollowHost, models: NodeModels, n: FollowedNode): void {
  const name = n.config.id;
  if (models.of(name).some((m) => host.inTransition(m.id))) return;
  const mine = new Set(models.of(name).map((m) => m.id));
  const residents = host
    .runningLru()
    .filter((id) => mine.has(id))
    .map((id) => host.config.models[id]!);
  const busy = new Set(
    residents
      .filter(
        (m) => host.inflight(m.id) > 0 || host.inTransition(m.id) || host.state(m.id) !== "ready",
      )
      .map((m) => m.id),
  );
  const excess = nodeExcess(residents, busy, n.config.node!);
  let note = excess.stays === null ? "" : `node ${name}: ${excess.stays}`;
  if (excess.evict.length > 0 && n.canUnload === true) {
    host.log.info(`node ${name}: ${excess.over}: unloading ${excess.evict.join(", ")}`);
    for (const id of excess.evict) host.unload(id);
  } else if (excess.evict.length > 0) {
    note = `node ${name}: ${excess.over}; ${
      n.canUnload === false
        ? "it cannot unload (no_loader_config), so they stay"
        : "qm has not seen this node unload yet, so it unloads none of them (on stock `mistralrs from-config` serving an unload drops the model for good)"
    }`;
  }
  if (note !== "" && note !== n.excessNote) host.log.warn(note);
  n.excessNote = note;
}

/** A node's id for a model that qm can list and route: bounded, printable, no control bytes. */
function usableId(id: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control bytes are what is refused
  return id.length <= MAX_ID_LENGTH && !/[\u0000-\u001f\u007f]/.test(id);
}
