/**
 * The two port checks around a model's start (see port-guard.ts): right before the spawn
 * (free, moved, or refused), and after the health check answered 200 (the listener must be
 * the model's own, not a stranger that bound the port in between).
 */
import type { ModelConfig } from "../config/types.ts";
import { QmError } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";
import {
  claimPort,
  describeHolder,
  type Holder,
  holderOf,
  listenerInodesAsync,
  listenerOwnership,
  ownershipOf,
  type PortProbe,
  pickPort,
  portBusy,
  portOf,
  realProbe,
  withPort,
} from "./port-guard.ts";
import { tree } from "./tree-watch.ts";

const PORT = "$" + "{PORT}";

export interface GuardDeps {
  log: Logger;
  /** The model a pid belongs to, when it is one of this qm's. */
  ownerOf(pid: number): string | null;
  probe?: PortProbe;
}

function who(port: number, holder: Holder | null, deps: GuardDeps): string {
  const model = holder ? deps.ownerOf(holder.pid) : null;
  const what = describeHolder(port, holder);
  return model === null ? what : `model "${model}" (${what})`;
}

/**
 * `model` when its port is free; with `${PORT}`, the model re-rendered on a free port.
 * Throws `port_in_use` for a port the config names literally (it cannot move).
 */
export function freePortFor(model: ModelConfig, deps: GuardDeps): ModelConfig {
  const probe = deps.probe ?? realProbe;
  const p = portOf(model);
  if (p === null || !portBusy(p.port, probe)) return model;
  const holder = holderOf(p.port, probe);
  if (!p.movable) {
    throw new QmError(
      "port_in_use",
      `model "${model.id}" cannot start: port ${p.port} (its proxy ${model.proxy}) is already ` +
        `in use by ${who(p.port, holder, deps)}, and a client's requests would go there; stop ` +
        `that process, or give the model another port (${PORT} lets qm choose a free one)`,
    );
  }
  const port = pickPort(model, p.port, probe);
  if (port === null) {
    throw new QmError(
      "port_in_use",
      `model "${model.id}" cannot start: port ${p.port} is in use by ` +
        `${who(p.port, holder, deps)} and no other port is free`,
    );
  }
  const moved = withPort(model, port);
  claimPort(moved);
  deps.log.info(
    `model "${model.id}": port ${p.port} is in use by ${who(p.port, holder, deps)}; ` +
      `starting it on port ${port} instead`,
  );
  return moved;
}

/**
 * After a 200 from the health check: a `port_in_use` error when the listener belongs to a
 * process that is not the model's (then the 200 was not the model's either), else null.
 */
/**
 * `foreignListener`, with the sockets read without blocking qm, and the model's tree read only
 * when its leader (`leader`) does not hold the listener itself.
 */
export async function foreignListenerAsync(
  model: ModelConfig,
  leader: number,
  members: () => readonly number[],
  leaderStart: number,
  deps: GuardDeps,
): Promise<QmError | null> {
  const p = portOf(model);
  if (p === null) return null;
  const probe = deps.probe ?? realProbe;
  const inodes = await listenerInodesAsync(p.port, probe);
  const o = ownershipOf(inodes, members, leaderStart, probe, leader);
  return o.kind === "foreign" ? foreign(model, p.port, o.holder, deps) : null;
}

function foreign(model: ModelConfig, port: number, holder: Holder, deps: GuardDeps): QmError {
  return new QmError(
    "port_in_use",
    `model "${model.id}" cannot start: port ${port} was taken by ` +
      `${who(port, holder, deps)} while the model was starting, and that process ` +
      "answered its health check; the model was stopped",
  );
}

/**
 * Whether the listener on `model`'s port is its own (not a stranger's that answers its health
 * check), asked at most once: the returned function starts the check on its first call and
 * gives the same answer after. Called when something first answers on the port, while the
 * model may still be loading, so a model that becomes ready seldom waits for it (reading the
 * sockets can take milliseconds); the model's whole tree is read only when `leader` does not
 * hold the listener itself.
 */
export function ownershipCheck(
  model: ModelConfig,
  leader: number,
  leaderStart: number,
  deps: GuardDeps,
): () => Promise<QmError | null> {
  let answer: Promise<QmError | null> | null = null;
  const members = () => {
    tree.scan();
    return tree.members(leader);
  };
  return () => {
    answer ??= foreignListenerAsync(model, leader, members, leaderStart, deps);
    return answer;
  };
}

export function foreignListener(
  model: ModelConfig,
  members: readonly number[],
  leaderStart: number,
  deps: GuardDeps,
): QmError | null {
  const p = portOf(model);
  if (p === null) return null;
  const o = listenerOwnership(p.port, members, leaderStart, deps.probe ?? realProbe);
  return o.kind === "foreign" ? foreign(model, p.port, o.holder, deps) : null;
}
