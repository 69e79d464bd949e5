/**
 * What the runtime builds its parts with: the eviction policy for a config, the supervisors of
 * the models (a local process, or a managed node's model), and the loader a reload reads.
 */
import { isPortFreeOnLoopback, loadConfigFile } from "../config/index.ts";
import type { Config } from "../config/types.ts";
import { GroupPolicy } from "../policy/group.ts";
import { MatrixPolicy } from "../policy/matrix.ts";
import { NodeAwarePolicy, type NodeView } from "../policy/node.ts";
import type { BudgetView, EvictionPolicy } from "../policy/types.ts";
import { ModelProcess } from "../process/index.ts";
import type { Logger } from "../shared/log.ts";
import type { ManagedNodes } from "./nodes.ts";
import type { ModelRegistry } from "./registry.ts";
import type { ConfigLoader } from "./reload.ts";
import type { ProcessFactory } from "./swap-runner.ts";

/**
 * The policy `router.policy` names, admitting managed nodes' models against their node (and
 * what `nodes` says of it now).
 */
export function makePolicy(config: Config, budget: BudgetView, nodes?: NodeView): EvictionPolicy {
  const own =
    config.router.policy === "matrix" ? new MatrixPolicy(config) : new GroupPolicy(config, budget);
  // Managed nodes' models are admitted against their node (src/peers/mistralrs.md).
  const hasNodes = Object.values(config.peers).some((p) => p.node !== null);
  return hasNodes ? new NodeAwarePolicy(own, config, nodes ?? null) : own;
}

/**
 * The real supervisors. A model moved to a free port before a start is recorded in the
 * registry, where requests find it. `onLine` hears every output line of every model.
 */
export function modelProcesses(
  config: Config,
  log: Logger,
  registry: ModelRegistry,
  onLine?: (id: string, line: string) => void,
  expectedLoadMs?: (id: string) => number | null,
): ProcessFactory {
  return (model, onExit) =>
    new ModelProcess(model, {
      healthCheckTimeoutS: config.server.healthCheckTimeoutS,
      log,
      onExit,
      ...(expectedLoadMs ? { expectedLoadMs: () => expectedLoadMs(model.id) } : {}),
      ...(onLine ? { onLine: (line: string) => onLine(model.id, line) } : {}),
      onConfigChange: (moved) => registry.move(moved),
    });
}

/** Node models are supervised over their node's API; every other model by `make`. */
export function withNodes(nodes: ManagedNodes, make: ProcessFactory): ProcessFactory {
  return (model, onExit) => (model.node ? nodes.server(model) : make(model, onExit));
}

/** A reload reads the file the config came from, the ports qm's models hold counted as taken. */
export function defaultLoader(config: Config): ConfigLoader {
  return (isPortFree) => {
    if (config.file === "")
      throw new Error("the config was not read from a file: nothing to reload");
    return loadConfigFile(config.file, {
      isPortFree: (port) => isPortFree(port) && isPortFreeOnLoopback(port),
    });
  };
}
